// Package plugintest checks the scenario package against a transport it has never heard of:
// a test-only plugin registered under "testkind" (in a package of its own, so the shipped
// transports' tests keep the registry they describe).
package plugintest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

const kind = "testkind"

// testConfig is transport.testkind.
type testConfig struct {
	Window int      `yaml:"window"`
	Probe  sim.Time `yaml:"probe"`
	Inner  struct {
		Depth int `yaml:"depth"`
	} `yaml:"inner"`
	// Resolved is set by the resolve hook, so a re-parsed scenario shows it went through it.
	Resolved bool `yaml:"resolved"`
}

// DataPacketBytes makes the block a transport.DataPacketSizer: 1000 B of payload, 1100 B.
func (c *testConfig) DataPacketBytes() (payload, wire int64) { return 1000, 1100 }

// calls records the resolve hook's environments.
var calls []transport.ResolveEnv

func init() {
	transport.Register(kind, transport.Plugin{
		Name:      "Test",
		NewConfig: func() any { return &testConfig{} },
		Resolve: func(cfg any, env transport.ResolveEnv) error {
			c := cfg.(*testConfig)
			calls = append(calls, env)
			if c.Window < 0 {
				return fmt.Errorf("%s.window: %d is negative; allowed 0 (default: 4 per plane) or more", env.Path, c.Window)
			}
			if c.Window == 0 {
				c.Window = 4 * env.Topology.Params().Planes
			}
			if c.Probe == 0 {
				c.Probe = 10 * sim.Microsecond
			}
			c.Resolved = true
			return nil
		},
		Profile: func(cfg any, env transport.ProfileEnv) {
			if !env.Given.SwitchECN {
				env.SwitchQueue.ECN = fabric.ECNConfig{Enabled: true, Kmin: 20000, Kmax: 80000, Pmax: 0.5}
			}
		},
		NewEndpoint: func(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
			return nil, errors.New("testkind: no endpoint")
		},
	})
}

const (
	topoYAML    = "topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: 16, host_link: 100G}}\n"
	trafficYAML = "traffic: [{pattern: permutation, bytes: 1MiB}]\n"
)

// TestFakeKind sweeps the planes and the block: the block decodes into the plugin's type, is
// resolved by its hook (path, topology, workload), its profile is the default, and the
// resolved scenario encodes to a YAML that parses back to the same bytes.
func TestFakeKind(t *testing.T) {
	for _, planes := range []int{1, 2, 4, 8} {
		for _, block := range []string{"", ", testkind: {}", ", testkind: {window: 3}", ", testkind: {window: 7, probe: 2us, inner: {depth: 5}}", ", testkind: null"} {
			calls = nil
			doc := fmt.Sprintf(topoYAML, planes) + "transport: {kind: testkind" + block + "}\n" + trafficYAML
			sc, err := scenario.Parse([]byte(doc))
			if err != nil {
				t.Fatalf("%d planes, %q: %v", planes, block, err)
			}
			c, ok := sc.Transport.Block().(*testConfig)
			if !ok || !c.Resolved || c.Window == 0 || c.Probe == 0 {
				t.Fatalf("%d planes, %q: block %#v; want a resolved *testConfig", planes, block, sc.Transport.Block())
			}
			if strings.Contains(block, "window: 0") || !strings.Contains(block, "window") {
				if c.Window != 4*planes {
					t.Errorf("%d planes, %q: window %d; want %d", planes, block, c.Window, 4*planes)
				}
			}
			if len(calls) != 1 || calls[0].Path != "transport.testkind" || calls[0].Workload || calls[0].Topology.Params().Planes != planes {
				t.Errorf("%d planes, %q: resolve calls %+v", planes, block, calls)
			}
			if sc.Fabric.Profile != kind || !sc.Fabric.SwitchQueue.ECN.Enabled || sc.Fabric.SwitchQueue.ECN.Pmax != 0.5 {
				t.Errorf("%d planes, %q: profile %q, switch ECN %+v; want the testkind profile's", planes, block, sc.Fabric.Profile, sc.Fabric.SwitchQueue.ECN)
			}
			if got := sc.MaxPacketBytes(); got != 1100 {
				t.Errorf("%d planes, %q: MaxPacketBytes %d; want the block's 1100", planes, block, got)
			}
			out, err := scenario.Encode(sc)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), "\n  testkind:\n") || !strings.Contains(string(out), "resolved: true") {
				t.Errorf("%d planes, %q: encoded transport lacks its block:\n%s", planes, block, out)
			}
			sc2, err := scenario.Parse(out)
			if err != nil {
				t.Fatalf("%d planes, %q: re-parse: %v\n%s", planes, block, err, out)
			}
			out2, err := scenario.Encode(sc2)
			if err != nil || string(out2) != string(out) {
				t.Errorf("%d planes, %q: not a fixed point (%v):\n%s\n---\n%s", planes, block, err, out, out2)
			}
		}
	}
}

// TestFakeKindErrors: the registry's kinds appear in every list of what is allowed, and the
// block's errors carry its path and line.
func TestFakeKindErrors(t *testing.T) {
	cases := []struct{ transport, extra, want string }{
		{"{kind: testkind, testkind: {windw: 3}}", "", "transport.testkind.windw (line 2): unknown field; allowed: inner, probe, resolved, window"},
		{"\n  kind: testkind\n  testkind:\n    inner: {dpth: 1}", "", "transport.testkind.inner.dpth (line 5): unknown field; allowed: depth"},
		{"{kind: testkind, testkind: {window: lots}}", "", `transport.testkind.window (line 2): "lots" is not an integer`},
		{"{kind: testkind, testkind: {window: -2}}", "", "transport.testkind.window: -2 is negative; allowed 0 (default: 4 per plane) or more"},
		{"{kind: testkind, bogus: 1}", "", "transport.bogus (line 2): unknown field; allowed: ib, ideal, kind, mrc, roce, testkind, uec"},
		{"{kind: tcp}", "", `transport.kind: "tcp" is not a transport; allowed raw, ib, mrc, roce, testkind, uec, ideal`},
		{"{kind: mrc, testkind: {window: 2}}", "", `transport.testkind: set, but transport.kind is "mrc"; use kind: testkind or remove the block`},
		{"{kind: testkind, roce: {}}", "", `transport.roce: set, but transport.kind is "testkind"; use kind: roce or remove the block`},
		{"{kind: testkind}", "fabric: {profile: bogus}\n", `fabric.profile: "bogus" is not a profile; allowed ib, mrc, roce, testkind, uec, none`},
		{"{kind: testkind}", "fabric: {pfc: {enabled: true}}\n", "fabric.pfc.enabled: true under transport testkind; PFC applies to RoCE (and raw traffic), InfiniBand, MRC, Test, UEC and the ideal network run without it"},
	}
	for _, c := range cases {
		doc := fmt.Sprintf(topoYAML, 4) + "transport: " + c.transport + "\n" + c.extra + trafficYAML
		_, err := scenario.Parse([]byte(doc))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v; want %q", c.transport, err, c.want)
		}
	}
}

// TestFakeKindSetBlock: a scenario built in Go takes the plugin's block with SetBlock.
func TestFakeKindSetBlock(t *testing.T) {
	for _, w := range []int{1, 2, 5, 64} {
		var sc scenario.Scenario
		if err := scenario.Decode([]byte(fmt.Sprintf(topoYAML, 2)+trafficYAML), &sc); err != nil {
			t.Fatal(err)
		}
		sc.Transport.Kind = kind
		sc.Transport.SetBlock(&testConfig{Window: w})
		if err := sc.Resolve(); err != nil {
			t.Fatalf("window %d: %v", w, err)
		}
		if c := sc.Transport.Block().(*testConfig); c.Window != w || !c.Resolved {
			t.Errorf("window %d: resolved %+v", w, c)
		}
	}
}
