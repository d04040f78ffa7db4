package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
)

// dagCM is a dependency DAG over five levels: A; B and C when A is sent (oneshot 1); D when
// both B and C are sent (barrier 2); E when D is placed at its receiver (oneshot 3); F and G
// on trigger 4, a multishot activated by E's placement (first, starting F) and then E's
// acknowledgement (starting G).
const dagCM = `Nodes 16
Connections 7
Triggers 4
0->1 id 1 start 2 size 100000 send_done_trigger 1
2->3 id 2 trigger 1 size 50000 send_done_trigger 2
4->5 id 3 trigger 1 size 100000 send_done_trigger 2
6->7 id 4 trigger 2 size 20000 recv_done_trigger 3
8->9 id 5 trigger 3 size 200000 recv_done_trigger 4 send_done_trigger 4
10->11 id 6 trigger 4 size 10000
12->13 id 7 trigger 4 size 10000
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 oneshot
trigger id 4 multishot
`

// Flows waiting on triggers start exactly when their trigger fires: at the instant the
// activating flow's sender completes (send_done) or its receiver places the last byte
// (recv_done, before the acknowledgement returns), under MRC and RoCE alike.
func TestTriggerDAG(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dag.cm"), []byte(dagCM), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"mrc", "roce"} {
		t.Run(kind, func(t *testing.T) {
			y := fmt.Sprintf("topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: %s}\ntraffic: [{pattern: file, format: htsim, file: dag.cm}]\n", kind)
			sc, err := scenario.ParseIn([]byte(y), dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(sc)
			if err != nil {
				t.Fatal(err)
			}
			by := map[int]transport.FlowRecord{} // by source host
			for _, f := range res.Endpoint.Flows() {
				by[f.Src] = f
			}
			if len(by) != 7 {
				t.Fatalf("%d flows ran, want 7", len(by))
			}
			for src, f := range by {
				if f.Done == 0 || f.Delivered != f.Bytes {
					t.Fatalf("flow from h%d not complete: %+v", src, f)
				}
			}
			a, b, c, d, e, ff, g := by[0], by[2], by[4], by[6], by[8], by[10], by[12]
			for _, f := range []transport.FlowRecord{a, b, c, d, e, ff, g} {
				t.Logf("h%d->h%d start %v done %v", f.Src, f.Dst, f.Start, f.Done)
			}
			us := int64(1e6)
			checks := []struct {
				what      string
				got, want int64
			}{
				{"A starts at its start (2 us)", int64(a.Start), 2 * us},
				{"B starts when A is sent", int64(b.Start), int64(a.Done)},
				{"C starts when A is sent", int64(c.Start), int64(a.Done)},
				{"D starts when the later of B and C is sent", int64(d.Start), int64(max(b.Done, c.Done))},
			}
			for _, ch := range checks {
				if ch.got != ch.want {
					t.Errorf("%s: %d ps, want %d ps", ch.what, ch.got, ch.want)
				}
			}
			// recv_done fires at the receiver's placement: after D starts, before its
			// acknowledgement is back.
			if !(e.Start > d.Start && e.Start < d.Done) {
				t.Errorf("E starts at %v, want inside D's transfer (%v, %v): D's placement", e.Start, d.Start, d.Done)
			}
			if !(ff.Start > e.Start && ff.Start < e.Done) || g.Start != e.Done {
				t.Errorf("multishot: F starts at %v (want E's placement, inside (%v, %v)), G at %v (want E sent, %v)", ff.Start, e.Start, e.Done, g.Start, e.Done)
			}
			if b.Done == c.Done {
				t.Errorf("B and C end together (%v): the barrier is not tested", b.Done)
			}
		})
	}
}

// A run that ends before a trigger fires fails (a failed run with its results), naming the
// first waiting flow's line: at 40 us E (started at 26 us, 200 kB) is still in flight, so F
// and G wait on trigger 4.
func TestTriggerNeverFired(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dag.cm"), []byte(dagCM), 0o644); err != nil {
		t.Fatal(err)
	}
	y := "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: mrc}\ntraffic: [{pattern: file, format: htsim, file: dag.cm}]\nrun: {duration: 40us}\n"
	sc, err := scenario.ParseIn([]byte(y), dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	want := "traffic[0]: 2 flows waiting on triggers never started (first: " + filepath.Join(dir, "dag.cm") + ":9, trigger 4, activated 0 times)"
	if s := res.Summary; !s.Failed || !strings.Contains(s.FailureReason, want) {
		t.Fatalf("failed %v, reason %q; want it to contain %s", s.Failed, s.FailureReason, want)
	}
}
