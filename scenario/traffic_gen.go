package scenario

import (
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/lockstepsim/lockstep/sim"
)

// A generated traffic pattern is one whose flows are made at resolve time from a few settings
// (Poisson arrivals, a file in another tool's format) rather than listed in the scenario.
// Its generator runs once per resolution with TrafficEnv; the flows it returns are then
// checked and run exactly as pattern "flows" would run them (host indices, bytes, start),
// and everything downstream (the runner, the packet budget, run.duration's default) reads
// them through Traffic.FlowList. The resolved scenario.yaml keeps the pattern's settings, not
// the expansion, so re-resolving it makes the same flows (generators must be deterministic
// in TrafficEnv: draw randomness from sim.Stream(env.Seed, env.Path)).

// TrafficEnv is what a pattern generator may read: the scenario around the traffic group.
type TrafficEnv struct {
	// Path is the group's field path ("traffic[2]"), for errors and random streams.
	Path string
	// Hosts is the topology's number of hosts (indices 0..Hosts-1).
	Hosts int
	// HostRate is one host's NIC rate over all planes (bits/s).
	HostRate sim.Rate
	// Transport is the resolved transport (kind and block).
	Transport Transport
	// Duration is run.duration as resolved so far: sim.Hour when it is left out and
	// transfers will size it (see Run.Duration); flows must start before it.
	Duration sim.Time
	// DurationGiven is true when the scenario gave run.duration (Duration is then it).
	DurationGiven bool
	// Seed is run.seed.
	Seed uint64
	// Dir is the folder relative file paths are read from: the scenario file's folder, or
	// the working directory for a scenario parsed from bytes (Parse).
	Dir string
}

// PatternGenerator expands a generated pattern's settings into explicit flows. Expand gets
// the group (read its settings; it may fill their defaults in place, so the resolved
// scenario shows them) and returns the flows, each with Src, Dst, Bytes (> 0) and Start
// (>= the group's start). Errors are *FieldError (Errorf with env.Path) naming the field.
// MaxFlows bounds what it may return (an error past it, naming the figure).
type PatternGenerator struct {
	// Summary is a one-line description for help texts and errors ("Poisson arrivals at a
	// load").
	Summary string
	// Expand makes the flows.
	Expand func(t *Traffic, env TrafficEnv) ([]FlowSpec, error)
}

// MaxGeneratedFlows bounds the flows one generated traffic group may expand to (each costs
// the transport's per-QP state; see docs/outputs.md), so a typo cannot exhaust memory.
const MaxGeneratedFlows = 1 << 20

var (
	patternsMu sync.RWMutex
	patterns   = map[string]PatternGenerator{}
	patternRe  = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// RegisterPattern adds a generated traffic pattern under name (a lower-case identifier, not
// one of the built-in permutation, incast and flows). It panics on a bad or duplicate name
// or a nil Expand: registration happens in init, so that is a programming error.
func RegisterPattern(name string, g PatternGenerator) {
	switch {
	case !patternRe.MatchString(name):
		panic(fmt.Sprintf("scenario.RegisterPattern: %q is not a lower-case identifier", name))
	case name == PatternPermutation || name == PatternIncast || name == PatternFlows:
		panic(fmt.Sprintf("scenario.RegisterPattern: %q is built in", name))
	case g.Expand == nil:
		panic(fmt.Sprintf("scenario.RegisterPattern: %q has no Expand", name))
	}
	patternsMu.Lock()
	defer patternsMu.Unlock()
	if _, dup := patterns[name]; dup {
		panic(fmt.Sprintf("scenario.RegisterPattern: %q registered twice", name))
	}
	patterns[name] = g
}

// patternGenerator returns the generator registered as name, nil when there is none.
func patternGenerator(name string) *PatternGenerator {
	patternsMu.RLock()
	defer patternsMu.RUnlock()
	if g, ok := patterns[name]; ok {
		return &g
	}
	return nil
}

// PatternNames returns every traffic pattern name, built-in first, then the generated ones
// sorted.
func PatternNames() []string {
	patternsMu.RLock()
	gen := make([]string, 0, len(patterns))
	for n := range patterns {
		gen = append(gen, n)
	}
	patternsMu.RUnlock()
	sort.Strings(gen)
	return append([]string{PatternPermutation, PatternIncast, PatternFlows}, gen...)
}

// generate runs the group's generator (t.Pattern must name one) and keeps its flows.
func (t *Traffic) generate(g *PatternGenerator, env TrafficEnv) error {
	if len(t.Flows) > 0 {
		return Errorf(env.Path+".flows", "is given, but pattern %s makes its own flows; use pattern: flows for a list", t.Pattern)
	}
	if len(t.Senders) > 0 || t.Receiver != nil {
		return Errorf(env.Path, "senders and receiver are not used by pattern %s", t.Pattern)
	}
	flows, err := g.Expand(t, env)
	if err != nil {
		return err
	}
	if len(flows) == 0 {
		return Errorf(env.Path+".pattern", "%s made no flows; check its settings", t.Pattern)
	}
	if len(flows) > MaxGeneratedFlows {
		return Errorf(env.Path+".pattern", "%s made %d flows, beyond the limit of %d per group", t.Pattern, len(flows), MaxGeneratedFlows)
	}
	for j := range flows {
		if flows[j].Bytes != 0 {
			flows[j].bytesGiven = true
		}
	}
	t.generated = flows
	return nil
}

// flowPath names flow j of the group in errors: its flows entry, or for a generated pattern
// the flow by its index in the expansion.
func (t *Traffic) flowPath(path string, j int) string {
	if t.Pattern == PatternFlows {
		return fmt.Sprintf("%s.flows[%d]", path, j)
	}
	return fmt.Sprintf("%s(%s flow %d)", path, t.Pattern, j)
}
