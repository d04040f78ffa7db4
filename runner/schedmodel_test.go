package runner

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestScheduleModelQPs: for a collective the flow level runs through its schedule
// (flow/dag.go) the collective router reports the transport's connections per pair (RoCE:
// qps_per_peer x planes, MRC: 1) and, under RoCE, gives key collective key + q the path of
// QP q alone, on plane q mod planes, as rocenic takes a pair's QPs round robin message by
// message.
func TestScheduleModelQPs(t *testing.T) {
	for _, c := range []struct {
		kind string
		qps  int // transport.roce.qps_per_peer
		want int // connections per pair
	}{
		{"roce", 1, 4},
		{"roce", 2, 8},
		{"mrc", 1, 1},
	} {
		tr := c.kind
		if c.kind == "roce" {
			tr = fmt.Sprintf("roce, roce: {qps_per_peer: %d}", c.qps)
		}
		y := fmt.Sprintf("topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100Gbps}}\ntransport: {kind: %s}\nrun: {engine: flow}\nworkload: {collectives: [{op: all_reduce, algorithm: halving_doubling, bytes: 32MiB}]}\n", tr)
		sc, l := parseDescribe(t, y)
		base, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := newMsgRouter(base)
		if got := r.QPs(0, 15); got != c.want {
			t.Errorf("%s, %d QP(s) per peer: %d connections per pair, want %d", c.kind, c.qps, got, c.want)
		}
		if c.kind != "roce" {
			continue
		}
		sp, _, err := sc.Workload.Collectives[0].CollectiveSpec()
		if err != nil {
			t.Fatal(err)
		}
		if sp, err = flowSpec(sp); err != nil {
			t.Fatal(err)
		}
		comm, _ := collective.RangeComm(0, 16, 1)
		r.setConnPlanes(sp, comm, true)
		key0 := commKey(comm)
		seen := map[string]bool{}
		for q := range c.want {
			paths, _, err := r.Paths(0, 15, r.ScheduleKey(key0)+uint64(q), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 {
				t.Fatalf("QP %d: %d paths, want 1", q, len(paths))
			}
			if pl := r.planeOf(paths[0].Links[0]); pl != q%4 {
				t.Errorf("QP %d on plane %d, want %d", q, pl, q%4)
			}
			seen[fmt.Sprint(paths[0].Links)] = true
		}
		if len(seen) != c.want {
			t.Errorf("%d QPs gave %d distinct paths", c.want, len(seen))
		}
	}
}
