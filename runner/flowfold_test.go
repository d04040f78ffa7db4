package runner

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
)

// foldYAML is a training job at flow level on a 2-tier MRC Clos of 256 hosts (32 per T0,
// domains of 8): plan and model vary.
const foldYAML = `
name: fold
topology:
  clos: {tiers: 2, planes: 4, radix: 64, hosts: 256, host_link: 100G}
transport: {kind: mrc}
workload:
  training:
    model: {preset: %s%s}
    gpu: {preset: h100}
    plan: {%s}
`

// Folding symmetric replicas (flowfold.go, flow.Fold, training.Fold) is exact: the training
// result (step time, every breakdown, MFU, power, goodput: the whole summary block) is the
// same folded and not, for a TP x DP grid (TP rotation with the DP rotation), a pipeline
// without TP (the DP rotation alone) and a zero-bubble schedule; links.csv's bytes per
// interval agree to the byte; the folded run adds a fraction of the flows.
func TestTrainingFoldMatchesFull(t *testing.T) {
	defer func(m int) { foldMinRanks = m }(foldMinRanks)
	foldMinRanks = 0
	cases := []struct {
		name, model, extra, plan string
		minFold                  int
	}{
		{"tp8 pp2 dp16", "llama3-8b", ", global_batch: 64, micro_batch: 1", "tp: 8, pp: 2", 8},
		{"tp1 pp4 dp64", "llama3-8b", ", global_batch: 256, micro_batch: 1", "tp: 1, pp: 4", 2},
		{"tp4 pp2 dp32 zb", "llama3-8b", ", global_batch: 128, micro_batch: 1", "tp: 4, pp: 2, schedule: zb-h1", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := fmt.Sprintf(foldYAML, c.model, c.extra, c.plan)
			foldOff = true
			full := mustRun(t, y)
			foldOff = false
			folded := mustRun(t, y)
			ft, fu := folded.Training, full.Training
			if fu.Fold != 1 {
				t.Fatalf("fold off: fold %d", fu.Fold)
			}
			if ft.Fold < c.minFold {
				t.Fatalf("folded by %d, want at least %d (%s)", ft.Fold, c.minFold, ft.FoldNote)
			}
			a, _ := json.Marshal(full.Summary.Training)
			b, _ := json.Marshal(folded.Summary.Training)
			if string(a) != string(b) {
				t.Fatalf("folded training result differs:\nfull   %s\nfolded %s", a, b)
			}
			// links.csv: each link read as its class x K/m; bytes per interval equal up to
			// the rounding of the fluid bytes to whole ones.
			if (full.Links == nil) != (folded.Links == nil) {
				t.Fatalf("link series: full %v, folded %v", full.Links != nil, folded.Links != nil)
			}
			if full.Links != nil {
				a, b := full.Links, folded.Links
				if !slices.Equal(a.starts, b.starts) || len(a.tx) != len(b.tx) {
					t.Fatalf("link series: %d intervals, %d folded", len(a.starts), len(b.starts))
				}
				var worst, total int64
				for i := range a.tx {
					worst = max(worst, abs64(a.tx[i]-b.tx[i]))
					total += a.tx[i]
				}
				if worst > 1 || total == 0 {
					t.Errorf("link series: bytes differ by up to %d (of %d in all)", worst, total)
				}
			}
			if ft.Flow.FlowsAdded*int64(ft.Fold) != fu.Flow.FlowsAdded {
				t.Errorf("flows: %d folded by %d, %d full", ft.Flow.FlowsAdded, ft.Fold, fu.Flow.FlowsAdded)
			}
			t.Logf("fold %d: flows %d -> %d, events %d -> %d, recomputes %d -> %d; %s", ft.Fold, fu.Flow.FlowsAdded, ft.Flow.FlowsAdded,
				full.Summary.Events, folded.Summary.Events, fu.Flow.Recomputes, ft.Flow.Recomputes, ft.FoldNote)
		})
	}
}

// A run with faults, stragglers or RoCE is not folded.
func TestTrainingFoldRefused(t *testing.T) {
	defer func(m int) { foldMinRanks = m }(foldMinRanks)
	foldMinRanks = 0
	base := fmt.Sprintf(foldYAML, "llama3-8b", ", global_batch: 64, micro_batch: 1", "tp: 8, pp: 2")
	for name, y := range map[string]string{
		"roce":       "\ntransport: {kind: roce}\n",
		"stragglers": "    stragglers: {jitter: {sigma: 0.02}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			s := base
			if name == "roce" {
				s = replaceOnce(s, "transport: {kind: mrc}\n", "")
			}
			s += y
			res := mustRun(t, s)
			if res.Training.Fold != 1 {
				t.Errorf("folded by %d", res.Training.Fold)
			}
		})
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	return s
}
