package scenario

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestCollectiveDurationCoversClosedForm: a left-out run.duration is at least the closed-form
// time of the collective as the executor runs it, for every op and algorithm, on 16 servers of
// 8 GPUs (scale-up domains of 8 at 3.6 Tb/s) and of 1 GPU, at 64 GiB and 1 TiB. The closed
// form is the runner's model column: collective.PipelinedScaleUp for a hierarchical
// collective on whole domains, else Pipelined (or AlphaBeta where it has no pipelined form)
// at the 400 Gb/s NIC rate, which every flat algorithm over several domains crosses. Before
// the bound took the NIC for flat algorithms, a 64 GiB all-gather on 16 x 8 GPUs (a ring at
// 127/128 x 64 GiB x 8 / 400 Gb/s = 1.3637 s) got 1 s and stopped "not done".
func TestCollectiveDurationCoversClosedForm(t *testing.T) {
	ops := []string{"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv"}
	algos := []string{"auto", "ring", "tree", "halving_doubling", "recursive_doubling", "pairwise", "hierarchical", "direct"}
	net := collective.Model{Rate: 400 * sim.Gbps}
	up := collective.Model{Rate: 3600 * sim.Gbps}
	checked := 0
	for _, g := range []int{8, 1} {
		for _, size := range []string{"64GiB", "1TiB"} {
			for _, op := range ops {
				for _, algo := range algos {
					su := ""
					if g > 1 {
						su = fmt.Sprintf(", scale_up: {gpus: %d, rate: 3.6Tbps}", g)
					}
					extra := ""
					if op == "send_recv" {
						extra = ", peer: -1"
					}
					y := fmt.Sprintf("topology: {rail: {servers: 16, gpus_per_server: %d, radix: 64, host_link: 400Gbps%s}}\nrun: {engine: flow}\n"+
						"workload: {collectives: [{op: %s, algorithm: %s, ranks: %d, bytes: %s%s}]}\n", g, su, op, algo, 16*g, size, extra)
					sc, err := Parse([]byte(y))
					if err != nil {
						continue // an op the algorithm does not run
					}
					wc := &sc.Workload.Collectives[0]
					sp, _, err := wc.CollectiveSpec()
					if err != nil {
						t.Fatal(err)
					}
					sp.Domain = wc.Domain(g)
					rs, err := sp.Resolve()
					if err != nil {
						t.Fatal(err)
					}
					var want sim.Time
					if rs.Algo == collective.Hierarchical && rs.Domain > 1 {
						want, err = collective.PipelinedScaleUp(rs, up, net)
					} else if want, err = collective.Pipelined(rs, net); err != nil {
						want, err = collective.AlphaBeta(rs, net)
					}
					if err != nil {
						t.Fatalf("%s %s: %v", op, algo, err)
					}
					checked++
					if sc.Run.Duration < want {
						t.Errorf("g %d, %s %s (%s) of %s: run.duration %v, below its closed form %v", g, op, algo, rs.Algo, size, sc.Run.Duration, want)
					}
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d op/algorithm pairs parsed", checked)
	}
}

// TestCollectiveDurationOnePair: a send/recv of one pair inside one scale-up domain (ranks 0
// and 1 of 16 x 8 GPUs) moves at NVLink's 3.6 Tb/s, so the lower bound is S x 8 / 3.6 Tb/s
// (1 TiB: 2.443 s) and the left-out run.duration 4 x that, not 4 x the NIC's 21.99 s.
func TestCollectiveDurationOnePair(t *testing.T) {
	sc, err := Parse([]byte("topology: {rail: {servers: 16, gpus_per_server: 8, radix: 64, host_link: 400Gbps, scale_up: {gpus: 8, rate: 3.6Tbps}}}\nrun: {engine: flow}\n" +
		"workload: {collectives: [{op: send_recv, ranks: 128, bytes: 1TiB, root: 0, peer: 1}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	up := float64(int64(1)<<40) * 8 / 3.6e12
	if got := sc.Run.Duration.Seconds(); got < up || got > 4*up*1.001 {
		t.Errorf("run.duration %v; want 4 x %.3f s (the pair at NVLink's rate)", sc.Run.Duration, up)
	}
}
