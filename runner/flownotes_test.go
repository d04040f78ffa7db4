package runner

import (
	"fmt"
	"strings"
	"testing"
)

// TestFlowLevelNotes: a run at run.engine flow under transport ib with cc on says in
// summary.json's notes that IB congestion control is not modelled there (through the
// block's transport.FlowLevelNoter), for traffic and for collectives; without cc, at packet
// level, or under a transport with nothing to note, there is no note.
func TestFlowLevelNotes(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}}\n"
	const traffic = "traffic: [{pattern: permutation, bytes: 64KB}]\n"
	const coll = "workload: {collectives: [{name: ar, op: all_reduce, algorithm: ring, hosts: [0, 1, 2, 3], bytes: 1MiB}]}\n"
	for _, c := range []struct {
		name, transport, work, engine string
		want                          bool
	}{
		{"ib cc traffic flow", "{kind: ib, ib: {cc: {enabled: true}}}", traffic, "flow", true},
		{"ib cc collective flow", "{kind: ib, ib: {cc: {enabled: true}}}", coll, "flow", true},
		{"ib cc traffic packet", "{kind: ib, ib: {cc: {enabled: true}}}", traffic, "packet", false},
		{"ib no cc flow", "{kind: ib}", traffic, "flow", false},
		{"ib cc off flow", "{kind: ib, ib: {cc: {enabled: false}}}", traffic, "flow", false},
		{"roce flow", "{kind: roce}", traffic, "flow", false},
		{"mrc flow", "{kind: mrc}", traffic, "flow", false},
	} {
		y := fmt.Sprintf("name: notes\n%stransport: %s\n%srun: {seed: 1, engine: %s}\n", topo, c.transport, c.work, c.engine)
		res := mustRun(t, y)
		got := false
		for _, n := range res.Summary.Notes {
			if strings.HasPrefix(n, "transport.ib.cc: ") && strings.Contains(n, "not modelled at run.engine flow") {
				got = true
			}
		}
		if got != c.want {
			t.Errorf("%s: notes %q; want the transport.ib.cc note %v", c.name, res.Summary.Notes, c.want)
		}
		if !c.want && len(res.Summary.Notes) > 0 {
			t.Errorf("%s: notes %q; want none", c.name, res.Summary.Notes)
		}
	}
}
