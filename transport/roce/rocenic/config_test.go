package rocenic

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/transport/roce"
)

func closAt(t *testing.T, rate sim.Rate) topo.Topology {
	t.Helper()
	l, err := topo.Clos{Tiers: 2, Planes: 1, Radix: 16, Hosts: 16, HostLink: rate}.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestResolveRates sweeps NIC rates and DCQCN steps: a step or floor above the NIC port rate
// is an error naming the field under env.Path; below, the block resolves to roce's defaults.
func TestResolveRates(t *testing.T) {
	for _, line := range []sim.Rate{25e9, 100e9, 400e9, 800e9} {
		for _, f := range []float64{0.001, 0.5, 1, 1.5, 4} {
			v := sim.Rate(float64(line) * f)
			for _, c := range []struct {
				field string
				set   func(d *roce.DCQCNConfig)
			}{
				{"rate_ai", func(d *roce.DCQCNConfig) { d.RateAI, d.RateHAI = v, v }},
				{"rate_hai", func(d *roce.DCQCNConfig) { d.RateAI, d.RateHAI = line/1000, v }},
				{"min_rate", func(d *roce.DCQCNConfig) { d.MinRate = v }},
			} {
				cfg := &roce.Config{}
				c.set(&cfg.DCQCN)
				err := resolve(cfg, transport.ResolveEnv{Path: "transport.roce", Topology: closAt(t, line)})
				if v > line {
					if err == nil || !strings.HasPrefix(err.Error(), "transport.roce.dcqcn."+c.field+": ") || !strings.Contains(err.Error(), "above the NIC port rate") {
						t.Errorf("%v, %s %v: error %v", line, c.field, v, err)
					}
					continue
				}
				if err != nil {
					// Validate may reject other combinations; only the rate checks are swept here.
					if strings.Contains(err.Error(), "above the NIC port rate") {
						t.Errorf("%v, %s %v: %v", line, c.field, v, err)
					}
					continue
				}
				if cfg.PayloadBytes == 0 || cfg.RTO == 0 || cfg.QPsPerPeer == 0 {
					t.Errorf("%v, %s %v: defaults not filled: %+v", line, c.field, v, cfg)
				}
			}
		}
	}
}

// TestProfile sweeps link rates with and without PFC: marking at ProfileKmin/Kmax per
// 100 Gb/s (within a smaller limit), Pmax ProfilePmax, no trimming; under PFC the shared buffer
// is sized and queue limits raised to at least PFCQueueLimit; settings given are kept.
func TestProfile(t *testing.T) {
	for _, rate := range []sim.Rate{25e9, 100e9, 400e9, 800e9} {
		for _, pfcOn := range []bool{false, true} {
			for _, given := range []transport.QueueGiven{{}, {SwitchECN: true}, {SwitchLimit: true, LastLimit: true}} {
				for _, fluid := range []bool{false, true} {
					l := closAt(t, rate)
					sw := fabric.QueueConfig{Limit: 1 << 20, Trim: fabric.TrimConfig{Enabled: true}}.WithDefaults()
					lh := new(fabric.QueueConfig)
					*lh = sw
					env := transport.ProfileEnv{Topology: l, Fluid: fluid, SwitchQueue: &sw, LastHopQueue: &lh, Given: given, MaxPacketBytes: 4194}
					var pfc fabric.PFCConfig
					if pfcOn {
						pfc = fabric.PFCConfig{Enabled: true, Classes: []int{1}, Alpha: ProfilePFCAlpha}.WithDefaults()
						pfc.SharedBuffer = 0
						env.PFC = &pfc
					}
					profile(&roce.Config{}, env)
					for name, q := range map[string]*fabric.QueueConfig{"switch": &sw, "last": lh} {
						if q.Trim.Enabled {
							t.Errorf("%v: %s queue trims", rate, name)
						}
						limitGiven := given.SwitchLimit
						if pfcOn && !limitGiven && q.Limit < PFCQueueLimit {
							t.Errorf("%v, pfc: %s limit %v below %v", rate, name, q.Limit, sim.Size(PFCQueueLimit))
						}
						if (!pfcOn || limitGiven) && q.Limit != 1<<20 {
							t.Errorf("%v, pfc %v, %+v: %s limit %v changed", rate, pfcOn, given, name, q.Limit)
						}
					}
					if given.SwitchECN == sw.ECN.Enabled {
						t.Errorf("%v, %+v: switch ECN %+v", rate, given, sw.ECN)
					}
					if e := sw.ECN; !given.SwitchECN && (e.Pmax != ProfilePmax || e.Kmax > sw.Limit || e.Kmin >= e.Kmax) {
						t.Errorf("%v: switch ECN %+v within limit %v", rate, e, sw.Limit)
					}
					if pfcOn && (pfc.SharedBuffer < 1<<20 || !fluid && pfc.SharedBuffer < sim.Size(rate.BytesIn(BufferTime))) {
						t.Errorf("%v, fluid %v: shared buffer %v", rate, fluid, pfc.SharedBuffer)
					}
				}
			}
		}
	}
}

// TestSwitchIngresses: every switch lists one link per connected port, hosts none.
func TestSwitchIngresses(t *testing.T) {
	for _, rate := range []sim.Rate{100e9, 400e9} {
		l := closAt(t, rate)
		in := nic.SwitchIngresses(l)
		links := 0
		for n, s := range in {
			nd, _ := l.Node(n)
			if nd.Kind != topo.KindSwitch && len(s) > 0 {
				t.Errorf("host %d has ingresses", n)
			}
			links += len(s)
		}
		switchEnds := 0
		for _, k := range l.Links() {
			for _, n := range [2]int{k.A.Node, k.B.Node} {
				if nd, _ := l.Node(n); nd.Kind == topo.KindSwitch {
					switchEnds++
				}
			}
		}
		if links != switchEnds || links == 0 {
			t.Errorf("%d ingresses; want %d", links, switchEnds)
		}
	}
}
