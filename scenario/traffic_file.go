package scenario

import (
	"os"
	"path/filepath"
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

// filePath returns the group's file path: File, under env.Dir when relative.
func (t *Traffic) filePath(env TrafficEnv) string {
	if filepath.IsAbs(t.File) || env.Dir == "" {
		return t.File
	}
	return filepath.Join(env.Dir, t.File)
}

// expandFile reads the group's file. Each flow starts at the group's start plus its own
// start in the file; its bytes are the file's.
func expandFile(t *Traffic, env TrafficEnv) ([]FlowSpec, error) {
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
		return ns3Flows(t, env, f, path)
	}
	m, err := htsim.Read(f, path)
	if err != nil {
		return nil, Errorf(env.Path+".file", "%v", err)
	}
	flows, plan, err := HTSimFlows(m, path, env.Path, env.Hosts, t.Start, env.HostRate)
	t.triggers = plan
	return flows, err
}

// HTSimFlows turns a connection matrix read from file into flows on a topology of hosts
// hosts, each starting start plus its own start, and its trigger plan (nil when no
// connection uses a trigger). A flow waiting on a trigger gets the earliest start the DAG
// allows at rate (a host's NIC rate; see TriggerPlan). path names the traffic group in
// errors. Errors: more nodes than hosts, an unbounded flow (size 0), failure lines (lockstep
// import writes those as faults), a start beyond sim.MaxTime, a waiting flow whose trigger
// never fires, an over-activated trigger.
func HTSimFlows(m *htsim.Matrix, file, path string, hosts int, start sim.Time, rate sim.Rate) ([]FlowSpec, *TriggerPlan, error) {
	if m.Nodes > hosts {
		return nil, nil, Errorf(path+".file", "%s has Nodes %d, but the topology has %d hosts; use a topology with at least %d", file, m.Nodes, hosts, m.Nodes)
	}
	if len(m.Failures) > 0 {
		return nil, nil, Errorf(path+".file", "%s:%d: failure lines name htsim fat-tree switches; lockstep import writes them as faults on a fat_tree topology", file, m.Failures[0].Line)
	}
	flows := make([]FlowSpec, len(m.Conns))
	for j, c := range m.Conns {
		switch {
		case c.Size == 0:
			return nil, nil, Errorf(path+".file", "%s:%d: connection %d->%d has size 0, an unbounded flow; lockstep transfers have a size: give size B", file, c.Line, c.Src, c.Dst)
		case c.Start > sim.MaxTime-start:
			return nil, nil, Errorf(path+".file", "%s:%d: start %v after the group's start %v is beyond the longest run", file, c.Line, c.Start, start)
		}
		src, dst := c.Src, c.Dst
		flows[j] = FlowSpec{Src: &src, Dst: &dst, Bytes: sim.Size(c.Size), Start: start + c.Start}
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
			return nil, Errorf(path+".file", "%s:%d: start %v after the group's start %v is beyond the longest run", file, x.Line, x.Start, start)
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
