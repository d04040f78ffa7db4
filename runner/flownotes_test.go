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

// TestCreditLimitedNote: at flow level, a transport whose link-level flow control caps links
// below their rate (InfiniBand credits with a buffer per VL under the credit round trip)
// says so in the notes, with how many links and how far; default buffers on a 1 us fabric,
// packet level and transports without credits have no such note.
func TestCreditLimitedNote(t *testing.T) {
	const y = "name: credits\ntopology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: %s}}\ntransport: %s\ntraffic: [{pattern: permutation, bytes: 64KB}]\nrun: {seed: 1, engine: %s}\n"
	for _, c := range []struct {
		name, rate, transport, engine string
		want                          bool
	}{
		{"8KiB at 100G", "100G", "{kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}", "flow", true},
		{"8KiB at 800G", "800G", "{kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}", "flow", true},
		{"16KiB at 400G", "400G", "{kind: ib, ib: {credits: {buffer_per_vl: 16KiB}}}", "flow", true},
		{"defaults at 100G", "100G", "{kind: ib}", "flow", false},
		{"defaults at 800G", "800G", "{kind: ib}", "flow", false},
		{"8KiB at packet level", "100G", "{kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}", "packet", false},
		{"credits off", "100G", "{kind: ib, ib: {credits: {enabled: false}}}", "flow", false},
		{"roce", "100G", "{kind: roce}", "flow", false},
	} {
		res := mustRun(t, fmt.Sprintf(y, c.rate, c.transport, c.engine))
		got := ""
		for _, n := range res.Summary.Notes {
			if strings.Contains(n, "limited by its link-level flow control") {
				got = n
			}
		}
		if (got != "") != c.want {
			t.Errorf("%s: notes %q; want the credit-limited note %v", c.name, res.Summary.Notes, c.want)
		}
		if c.want && !strings.HasPrefix(got, "transport.ib: ") {
			t.Errorf("%s: note %q; want it to name transport.ib", c.name, got)
		}
		t.Logf("%s: %s", c.name, got)
	}
}
