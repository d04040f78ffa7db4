package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/htsim"
	"github.com/lockstepsim/lockstep/traffic/ns3"
)

// PatternFile is the generated pattern that reads its flows from a traffic file written for
// another simulator (traffic[i].file, traffic[i].format): an htsim connection matrix or an
// ns-3 HPCC flow.txt. docs/importers.md describes how each line maps onto lockstep.
const PatternFile = "file"

// trafficFormats are the formats pattern file reads.
var trafficFormats = []string{"htsim", "ns3"}

func init() {
	RegisterPattern(PatternFile, PatternGenerator{
		Summary: "flows read from an htsim connection matrix or an ns-3 flow.txt",
		Expand:  expandFile,
	})
}

// filePath returns the group's file path: File, under env.Dir when relative, made absolute
// (so errors name the same file wherever lockstep runs from).
func (t *Traffic) filePath(env TrafficEnv) string {
	p := t.File
	if !filepath.IsAbs(p) && env.Dir != "" {
		p = filepath.Join(env.Dir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// expandFile reads the group's file. Each flow starts at the group's start plus its own
// start in the file; its bytes are the file's.
func expandFile(t *Traffic, env TrafficEnv) (flows []FlowSpec, err error) {
	defer func() {
		// The resolved scenario (a results folder's scenario.yaml) names the file absolutely,
		// so it resolves again from anywhere on this machine.
		if err == nil && t.File != "" {
			if abs, aerr := filepath.Abs(t.filePath(env)); aerr == nil {
				t.File = abs
			}
		}
	}()
	switch {
	case t.Format == "":
		return nil, Errorf(env.Path+".format", "missing; pattern file needs the file's format: allowed %s", strings.Join(trafficFormats, ", "))
	case t.Format != "htsim" && t.Format != "ns3":
		return nil, Errorf(env.Path+".format", "%q is not a traffic file format; allowed %s", t.Format, strings.Join(trafficFormats, ", "))
	case t.File == "":
		return nil, Errorf(env.Path+".file", "missing; pattern file needs the traffic file to read")
	case t.Bytes != 0 || t.given.bytes:
		return nil, Errorf(env.Path+".bytes", "%v is set, but pattern file takes each flow's size from %s; leave bytes out", t.Bytes, t.File)
	}
	t.triggers = nil
	path := t.filePath(env)
	f, err := os.Open(path)
	if err != nil {
		return nil, Errorf(env.Path+".file", "%v", err)
	}
	defer f.Close()
	if t.Format == "ns3" {
		flows, err = ns3Flows(t, env, f, path)
	} else {
		var m *htsim.Matrix
		if m, err = htsim.Read(f, path); err != nil {
			return nil, Errorf(env.Path+".file", "%v", err)
		}
		var plan *TriggerPlan
		until := sim.Time(0)
		if env.DurationGiven {
			until = env.Duration
		}
		flows, plan, err = HTSimFlows(m, path, env.Path, env.Hosts, t.Start, env.HostRate, until)
		t.triggers = plan
	}
	if err == nil && len(flows) == 0 {
		return nil, Errorf(env.Path+".file", "%s: has no flows (its count is 0); give at least one", path)
	}
	return flows, err
}

// HTSimFlows turns a connection matrix read from file into flows on a topology of hosts
// hosts, each starting start plus its own start, and its trigger plan (nil when no
// connection uses a trigger). A flow waiting on a trigger gets the earliest start the DAG
// allows at rate (a host's NIC rate; see TriggerPlan). Failure lines are not flows: Resolve
// turns them into faults (addFileFaults). path names the traffic group in errors. A
// connection of size 0 is an unbounded flow (FlowSpec.Unbounded): it sends until until
// (run.duration; 0 when the scenario leaves it out, an error then), sized at twice what
// rate sends in the time left. Errors: more nodes than hosts, an unbounded flow without
// run.duration or with a done trigger (it never completes), a start beyond sim.MaxTime, a
// waiting flow whose trigger never fires, an over-activated trigger.
func HTSimFlows(m *htsim.Matrix, file, path string, hosts int, start sim.Time, rate sim.Rate, until sim.Time) ([]FlowSpec, *TriggerPlan, error) {
	if m.Nodes > hosts {
		return nil, nil, Errorf(path+".file", "%s has Nodes %d, but the topology has %d hosts; use a topology with at least %d", file, m.Nodes, hosts, m.Nodes)
	}
	flows := make([]FlowSpec, len(m.Conns))
	for j, c := range m.Conns {
		switch {
		case c.Size == 0 && until == 0:
			return nil, nil, Errorf(path+".file", "%s:%d:%d: connection %d->%d has size 0, an unbounded flow, which sends until run.duration: give run.duration", file, c.Line, c.SizeCol, c.Src, c.Dst)
		case c.Size == 0 && (c.SendDone != 0 || c.RecvDone != 0):
			return nil, nil, Errorf(path+".file", "%s:%d:%d: connection %d->%d has size 0, an unbounded flow, which never completes, so its send_done/recv_done trigger would never fire; give size B", file, c.Line, c.SizeCol, c.Src, c.Dst)
		case c.Start > sim.MaxTime-start:
			return nil, nil, Errorf(path+".file", "%s:%d:%d: start %v after the group's start %v is beyond the longest run", file, c.Line, c.Col, c.Start, start)
		}
		src, dst := c.Src, c.Dst
		flows[j] = FlowSpec{Src: &src, Dst: &dst, Bytes: sim.Size(c.Size), Start: start + c.Start}
		if c.Size == 0 {
			flows[j].unbounded = true
			flows[j].Bytes = unboundedBytes(rate, until-flows[j].Start)
		}
	}
	plan := htsimPlan(m, file)
	if plan != nil {
		if err := plan.earliestStarts(flows, rate, path); err != nil {
			return nil, nil, err
		}
	}
	return flows, plan, nil
}

// ns3Flows reads an ns-3 flow.txt: src and dst are host indices (ns-3 node ids of a
// topology.graph read from ns-3, whose hosts are nodes 0..H-1).
func ns3Flows(t *Traffic, env TrafficEnv, f *os.File, path string) ([]FlowSpec, error) {
	fl, err := ns3.ReadFlows(f, path, env.Hosts)
	if err != nil {
		return nil, Errorf(env.Path+".file", "%v (the topology has %d hosts)", err, env.Hosts)
	}
	return NS3Flows(fl, path, env.Path, t.Start)
}

// NS3Flows turns flow.txt entries read from file into flows, each starting start plus its
// own start. Errors: a start beyond sim.MaxTime.
func NS3Flows(fl []ns3.Flow, file, path string, start sim.Time) ([]FlowSpec, error) {
	flows := make([]FlowSpec, len(fl))
	for j, x := range fl {
		if x.Start > sim.MaxTime-start {
			return nil, Errorf(path+".file", "%s:%d:%d: start %v after the group's start %v is beyond the longest run", file, x.Line, x.Col, x.Start, start)
		}
		src, dst := x.Src, x.Dst
		flows[j] = FlowSpec{Src: &src, Dst: &dst, Bytes: sim.Size(x.Size), Start: start + x.Start}
	}
	return flows, nil
}

// checkFileKeys rejects file and format on a group whose pattern is not file.
func (t *Traffic) checkFileKeys(path string) error {
	if t.Pattern == PatternFile {
		return nil
	}
	for _, k := range []struct{ key, v string }{{"file", t.File}, {"format", t.Format}} {
		if k.v != "" {
			return Errorf(path+"."+k.key, "%q is set, but only pattern file reads a traffic file; set pattern: file or leave %s out", k.v, k.key)
		}
	}
	return nil
}

// HTSimFaults maps a connection matrix's failure lines onto a k-ary fat_tree (plane 0):
// TOR, AGG and CORE are its tiers 0, 1 and 2, switch_id the index within the tier (pod-major,
// as htsim's FatTreeTopology and lockstep's fat_tree both number them). A failure without
// link_id takes the switch down at 0s; with link_id, the link on the switch's up<link_id>
// port (down<link_id> for a core switch, which has no up ports). htsim's failures are
// static, in force for the whole run. Errors: a switch or port the fat-tree lacks.
func HTSimFaults(m *htsim.Matrix, file string, k int) ([]Fault, error) {
	var out []Fault
	for _, f := range m.Failures {
		tier := map[htsim.SwitchType]int{htsim.TOR: 0, htsim.AGG: 1, htsim.CORE: 2}[f.SwitchType]
		switches, ports, port := k*k/2, k/2, "up"
		if tier == 2 {
			switches, ports, port = k*k/4, k, "down"
		}
		if f.SwitchID >= switches {
			return nil, fmt.Errorf("%s:%d:%d: switch_id %d is not a %s switch of the k=%d fat-tree; allowed 0 to %d", file, f.Line, f.SwitchIDCol, f.SwitchID, f.SwitchType, k, switches-1)
		}
		sw := fmt.Sprintf("p0.t%d-%d", tier, f.SwitchID)
		switch {
		case f.LinkID < 0:
			out = append(out, Fault{At: 0, Switch: sw, Action: "down"})
		case f.LinkID >= ports:
			return nil, fmt.Errorf("%s:%d:%d: link_id %d is not a link of %s switch %d (%s ports); allowed 0 to %d", file, f.Line, f.LinkIDCol, f.LinkID, f.SwitchType, f.SwitchID, port, ports-1)
		default:
			out = append(out, Fault{At: 0, Link: fmt.Sprintf("%s.%s%d", sw, port, f.LinkID), Action: "down"})
		}
	}
	return out, nil
}

// addFileFaults appends the faults of the htsim failure lines of every pattern file group
// (HTSimFaults) that sc.Faults does not already hold, so the resolved scenario shows them and
// resolving it again is a fixed point. It runs with the topology, before the faults are
// expanded. Errors: failure lines on a topology other than fat_tree, a bad file (reported
// again by the traffic step, with its field).
func (sc *Scenario) addFileFaults() error {
	for i := range sc.Traffic {
		t := &sc.Traffic[i]
		if t.Pattern != PatternFile || t.Format != "htsim" || t.File == "" {
			continue
		}
		path := fmt.Sprintf("traffic[%d]", i)
		file := t.filePath(TrafficEnv{Dir: sc.dir})
		f, err := os.Open(file)
		if err != nil {
			continue // the traffic step names it
		}
		m, err := htsim.Read(f, file)
		f.Close()
		if err != nil || len(m.Failures) == 0 {
			continue
		}
		if sc.Topology.FatTree == nil {
			return Errorf(path+".file", "%s:%d:%d: failure lines name htsim fat-tree switches (TOR, AGG, CORE); use topology.fat_tree (lockstep import makes one)", file, m.Failures[0].Line, m.Failures[0].Col)
		}
		fs, err := HTSimFaults(m, file, sc.Topology.FatTree.K)
		if err != nil {
			return Errorf(path+".file", "%v", err)
		}
		for _, x := range fs {
			if !slices.ContainsFunc(sc.Faults, func(g Fault) bool {
				return g.At == 0 && g.Link == x.Link && g.Switch == x.Switch && g.Action == x.Action && g.Random == nil && g.For == 0
			}) {
				sc.Faults = append(sc.Faults, x)
			}
		}
	}
	return nil
}

// unboundedBytes sizes an unbounded flow with left to run at a NIC of rate: twice what the
// NIC sends in that time (at least 1 MiB), so it cannot finish before the run stops it.
func unboundedBytes(rate sim.Rate, left sim.Time) sim.Size {
	b := 2 * float64(rate) / 8 * max(left, 0).Seconds()
	return sim.Size(max(b, 1<<20))
}
