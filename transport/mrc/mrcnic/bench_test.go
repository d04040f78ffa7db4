package mrcnic_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/lockstepsim/lockstep/transport/mrc"
)

// BenchmarkEndpointPermutation runs a 64-host permutation of 1 and 4 MiB on a 2-plane Clos
// through the MRC endpoint alone (no runner) and reports the data packets per run and the
// heap allocations per data packet, setup included. allocs/op is the same at both sizes
// (setup allocates per QP and per EV route; the per-packet path allocates nothing: packets
// come from the fabric's free list, headers are copied into its words), so allocs/packet
// falls as the transfers grow.
func BenchmarkEndpointPermutation(b *testing.B) {
	for _, mib := range []int64{1, 4} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) { benchPermutation(b, mib<<20) })
	}
}

func benchPermutation(b *testing.B, bytes int64) {
	c := clos(64, 2)
	pairs := permutation(1, 64)
	var packets, allocs uint64
	var ms runtime.MemStats
	for b.Loop() {
		runtime.ReadMemStats(&ms)
		before := ms.Mallocs
		r := runTraffic(b, c, 1, mrc.Config{}, pairs, bytes, 0)
		runtime.ReadMemStats(&ms)
		allocs += ms.Mallocs - before
		packets += uint64(r.sum.DataPackets)
	}
	b.ReportMetric(float64(packets)/float64(b.N), "data_packets/op")
	b.ReportMetric(float64(allocs)/float64(packets), "allocs/packet")
}
