package runner

import (
	"fmt"
	"strings"
	"testing"
)

// nvlYAML is 2 servers x 8 GPUs with NVLink (scale-up domains of 8 at 3600 Gb/s) on a 400G
// NIC: %s is the transport, %s the run section, %s the collective.
const nvlYAML = `
name: nvl
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 400Gbps, hop_latency: 500ns, scale_up: {gpus: %d, rate: 3600G}}
transport: {kind: %s}
run: {%s}
workload:
  collectives:
    - {name: ar, op: all_reduce, algorithm: %s, ranks: 16, bytes: 16MiB}
`

// Each collective row says where its bytes went with scale-up domains: per rank inside the
// domain and over the fabric, adding up to what the rank sends, the share that stayed in the
// domains, the NIC rate; and ScaleUpNote explains a busbw above the NIC rate. Without domains
// the fields are absent. Across engines (packet over MRC and RoCE, the ideal network, flow
// level) and algorithms.
func TestCollectiveScaleUpSplit(t *testing.T) {
	const S = 16 << 20
	for _, c := range []struct {
		name, transport, run, algo string
		gpus                       int
		wantUp, wantFab            int64 // per rank, most
		note                       bool  // busbw above the NIC's 50 GB/s
	}{
		{"hier-mrc", "mrc", "", "hierarchical", 8, 2 * 7 * S / 8, S / 8, true},
		{"hier-roce", "roce", "", "hierarchical", 8, 2 * 7 * S / 8, S / 8, true},
		{"hier-ideal", "ideal", "", "hierarchical", 8, 2 * 7 * S / 8, S / 8, true},
		{"hier-flow", "mrc", "engine: flow", "hierarchical", 8, 2 * 7 * S / 8, S / 8, true},
		{"ring-mrc", "mrc", "", "ring", 8, 2 * 15 * S / 16, 2 * 15 * S / 16, false},
		{"ring-flow", "mrc", "engine: flow", "ring", 8, 2 * 15 * S / 16, 2 * 15 * S / 16, false},
		{"ring-no-domains", "mrc", "", "ring", 1, -1, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runColl(t, fmt.Sprintf(nvlYAML, c.gpus, c.transport, c.run, c.algo))
			rows := res.Summary.Collectives
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			note := ScaleUpNote(rows)
			t.Logf("busbw %.2f GB/s; note %q", r.BusBWGBps, note)
			if c.wantUp < 0 {
				if r.ScaleUpBytesPerRankMax != nil || r.FabricBytesPerRankMax != nil || r.ScaleUpFraction != nil || r.NICGBps != nil || note != "" {
					t.Errorf("split without scale-up domains: %+v, note %q", r, note)
				}
				if res.Collective.Rows[0].Split != nil {
					t.Errorf("collectives.csv split without domains")
				}
				return
			}
			if r.ScaleUpBytesPerRankMax == nil || r.FabricBytesPerRankMax == nil || r.ScaleUpFraction == nil || r.NICGBps == nil {
				t.Fatalf("row without the split: %+v", r)
			}
			if *r.ScaleUpBytesPerRankMax != c.wantUp || *r.FabricBytesPerRankMax != c.wantFab {
				t.Errorf("per rank: scale-up %d B, fabric %d B; want %d, %d", *r.ScaleUpBytesPerRankMax, *r.FabricBytesPerRankMax, c.wantUp, c.wantFab)
			}
			if *r.NICGBps != 50 {
				t.Errorf("nic_GBps %v, want 50", *r.NICGBps)
			}
			if f := *r.ScaleUpFraction; f <= 0 || f >= 1 {
				t.Errorf("scale_up_fraction %v, want in (0, 1)", f)
			}
			if c.algo == "hierarchical" && *r.ScaleUpBytesPerRankMax+*r.FabricBytesPerRankMax != r.SentBytesPerRankMax {
				t.Errorf("scale-up %d + fabric %d != sent %d", *r.ScaleUpBytesPerRankMax, *r.FabricBytesPerRankMax, r.SentBytesPerRankMax)
			}
			if got := note != ""; got != c.note || got != (r.BusBWGBps > 50) {
				t.Errorf("note %q with busbw %.2f GB/s; want a note: %v", note, r.BusBWGBps, c.note)
			}
			if c.note && !strings.Contains(note, "NVLink") {
				t.Errorf("note %q does not name the scale-up links", note)
			}
			if sp := res.Collective.Rows[0].Split; sp == nil || sp.ScaleUpMax != c.wantUp {
				t.Errorf("collectives.csv split %+v", sp)
			}
		})
	}
}

// A collective sweep left to the default sampling gets links.csv at a resolution that shows
// it: at least about 100 intervals over the collectives' run (and not tens of thousands),
// across transports and sizes. (The 1 s bound once gave a 616 us sweep 2 intervals.)
func TestCollectiveLinksResolution(t *testing.T) {
	for _, c := range []struct{ transport, sizes string }{
		{"mrc", "bytes: 64KiB, max_bytes: 4MiB, factor: 4"},
		{"roce", "bytes: 1MiB"},
		{"mrc", "bytes: 16MiB"},
	} {
		t.Run(c.transport+" "+c.sizes, func(t *testing.T) {
			y := fmt.Sprintf(`
name: res
topology:
  clos: {tiers: 2, planes: 2, radix: 8, hosts: 8, host_link: 100Gbps, hop_latency: 500ns}
transport: {kind: %s}
workload:
  collectives:
    - {op: all_reduce, ranks: 8, %s}
`, c.transport, c.sizes)
			res := runColl(t, y)
			ls := res.Links
			if ls == nil {
				t.Fatal("no links series")
			}
			end := res.Summary.DurationUs
			n := end / ls.Interval().Micros()
			t.Logf("%.1f us in intervals of %v: %.0f intervals", end, ls.Interval(), n)
			if n < 80 || n > 5000 {
				t.Errorf("%.0f links.csv intervals over %.1f us; want about 100 to a few thousand", n, end)
			}
		})
	}
}
