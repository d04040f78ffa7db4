package runner

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestActiveShareIncast: in an N -> 1 incast (flow level, MRC on a 3-tier radix-16 fat tree
// at 100G, N = 8..1023) each sender gets 1/N of the receiver's line while all are active:
// the summary's mean share of line is 0.968/N (the payload share) within 1% (or its 3
// decimals' rounding above 0.01), never 0 (3
// decimals had made it 0.001 at N = 1023, and 0.000 for a slower sender), and N times it is
// the receiver's payload line rate.
func TestActiveShareIncast(t *testing.T) {
	const share = 4096.0 / 4230 // MRC's default payload over wire bytes
	for _, n := range []int{8, 64, 255, 1023} {
		senders := make([]string, n)
		for i := range senders {
			senders[i] = fmt.Sprint(i + 1)
		}
		y := fmt.Sprintf(`name: incast-share
topology:
  clos: {tiers: 3, planes: 1, radix: 16, host_link: 100Gbps, hop_latency: 1us}
transport: {kind: mrc}
traffic:
  - {pattern: incast, receiver: 0, bytes: 2000000B, senders: [%s]}
run: {seed: 1, engine: flow}
`, strings.Join(senders, ", "))
		tr := mustRun(t, y).Summary.Transport
		mean, lo := tr.ActiveThroughputMeanOfLine, tr.ActiveThroughputMinOfLine
		t.Logf("%d -> 1: mean %v, min %v of line; x N = %.4f", n, mean, lo, mean*float64(n))
		// Within 1% or the summary's rounding (3 decimals down to 0.01; RoundFrac).
		want := share / float64(n)
		if mean <= 0 || lo <= 0 || math.Abs(mean-want) > max(0.01*want, 0.0005) {
			t.Errorf("%d -> 1: mean %v, min %v of line; want %.6f (0.968 / N) within 1%% or the rounding, > 0", n, mean, lo, want)
		}
	}
}
