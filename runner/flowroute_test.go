package runner

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// MRC flows on a Clos or fat-tree are perfect spraying over bundles: a T0's uplinks (and the
// links down into it), and a pod's T1-T2 links, act as one link of their summed capacity.
// Checked: the number of bundles and their capacities; a flow's entries (one path per plane
// over host links and bundles); and the rates max-min fairness then gives: line rate on a
// non-blocking fabric, and the oversubscription share when every host of a T0 sends across.
func TestFlowBundles(t *testing.T) {
	for _, c := range []struct {
		name      string
		layout    func() (*topo.Layout, error)
		pairLinks int     // bundles a flow from the first host to the last crosses
		share     float64 // rate of each cross-T0 flow when a whole T0 sends, of host line
	}{
		{"2-tier", func() (*topo.Layout, error) {
			return topo.Clos{Tiers: 2, Planes: 4, Radix: 16, Hosts: 128, HostLink: 100e9}.Layout()
		}, 4, 1},
		{"2-tier 2:1", func() (*topo.Layout, error) {
			return topo.Clos{Tiers: 2, Planes: 2, Radix: 24, Hosts: 64, HostLink: 100e9, Oversubscription: []float64{2}}.Layout()
		}, 4, 0.5},
		{"fat-tree k=8", func() (*topo.Layout, error) { return topo.FatTree{K: 8, HostLink: 100e9}.Layout() }, 6, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := c.layout()
			if err != nil {
				t.Fatal(err)
			}
			d := l.Dims()
			r, caps := newFlowRouter(l, transport.FlowModel{Spray: true}, nil, 1, 0, 0, 0)
			if r.bundle == nil {
				t.Fatal("MRC on a Clos is not bundled")
			}
			fabric := 2 * len(r.links)
			nb := len(caps) - fabric
			wantB := 2 * (d.Hosts + d.T0s + max(d.Pods, 1))
			if nb != wantB {
				t.Errorf("%d bundles; want %d (2 per host, T0 and pod, over all planes)", nb, wantB)
			}
			k0 := firstUplink(r.links)
			_, _, t0, _ := l.Locate(r.links[k0].A.Node)
			var upT0 float64 // that T0's uplinks' rates summed over every plane
			for _, lk := range r.links {
				if _, _, idx, _ := l.Locate(lk.A.Node); lk.Level == 1 && idx == t0 {
					upT0 += float64(lk.Rate)
				}
			}
			up, down := r.bundle[2*k0], r.bundle[2*k0+1]
			if caps[up] != upT0 || caps[down] != upT0 || up == down || upT0 == 0 {
				t.Errorf("T0 %d bundles %d up %g b/s, %d down %g b/s; want two bundles of its uplinks' %g", t0, up, caps[up], down, caps[down], upT0)
			}
			if hb := caps[r.bt.hostB[0]]; hb != float64(l.Params().HostLink)*float64(d.Planes) {
				t.Errorf("host 0's NIC bundle %g b/s; want planes x host link", hb)
			}

			// A flow between hosts in different pods (or T0s): one path over all planes.
			src, dst := 0, d.Hosts-1
			paths, _, err := r.Paths(src, dst, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 || len(paths[0].Links) != c.pairLinks {
				t.Fatalf("paths %v; want one of %d bundles (host, T0, pods, T0, host)", paths, c.pairLinks)
			}

			// The table lookup agrees with walking a path and mapping its links, for every pair.
			for a := 0; a < d.Hosts; a += 3 {
				for b := 0; b < d.Hosts; b++ {
					if a == b {
						continue
					}
					got, lg, err1 := r.bundled(a, b, nil)
					gl := make([][]int32, len(got))
					for i := range got {
						gl[i] = append([]int32(nil), got[i].Links...)
					}
					want, lw, err2 := r.bundledWalk(a, b, nil)
					if err1 != nil || err2 != nil || lg != lw || len(got) != 1 || len(want) != d.Planes {
						t.Fatalf("%d -> %d: table %v %v %v, walk %v %v %v", a, b, gl, lg, err1, want, lw, err2)
					}
					for i := range want {
						if !slices.Equal(gl[0], want[i].Links) {
							t.Fatalf("%d -> %d plane %d: table %v, walk %v", a, b, i, gl[0], want[i].Links)
						}
					}
				}
			}

			// Every host of T0 0 sends to a host of the last T0: each gets its share of the
			// T0's uplinks (line rate when non-blocking).
			s := sim.New(1)
			net, err := flow.New(s, caps, flow.Config{})
			if err != nil {
				t.Fatal(err)
			}
			line := float64(l.Params().HostLink) * float64(d.Planes)
			lastT0 := (d.Hosts - 1) / d.T0Down * d.T0Down
			for h := range d.T0Down {
				ps, _, err := r.Paths(h, lastT0+h, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := net.AddFlow(0, flow.Flow{Src: h, Dst: lastT0 + h, Bytes: 1 << 30, Paths: ps}); err != nil {
					t.Fatal(err)
				}
			}
			s.Run(sim.Microsecond)
			for _, f := range net.Flows(nil) {
				if math.Abs(f.Rate/line-c.share) > 1e-9 {
					t.Errorf("flow %d -> %d at %.4f of line; want %.4f", f.Src, f.Dst, f.Rate/line, c.share)
				}
			}
		})
	}
}

// firstUplink is the index of the first T0-T1 link of plane 0.
func firstUplink(links []topo.Link) int {
	for k, lk := range links {
		if lk.Level == 1 && lk.Plane == 0 {
			return k
		}
	}
	return 0
}

// RoCE at flow level hashes one ECMP path per QP: qps_per_peer QPs per plane spread a
// transfer over more paths, so an all-to-all collides less and finishes sooner (with 16 KiB
// chunks: 64 messages to each peer at once, as many as its QPs; a collective message rides
// one QP, so QPs beyond the messages in flight are idle, at packet level too); and seeds that
// differ only in their low bits give different hashes (the seed is mixed before the plane and
// QP numbers, which once shared its low bits: seeds 1-7 gave one result on 8 planes).
func TestFlowRoCEQPsAndSeeds(t *testing.T) {
	const y = `
name: roce-flow
topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 64, host_link: 100G}}
transport: {kind: roce, roce: {qps_per_peer: %d}}
workload:
  collectives: [{op: all_to_all, bytes: 64MiB, chunk: 16KiB}]
run: {engine: flow, seed: %d}
`
	at := func(qps, seed int) float64 {
		return mustRun(t, fmt.Sprintf(y, qps, seed)).Summary.Collectives[0].TimeUs
	}
	one, many := at(1, 1), at(16, 1)
	if many >= one {
		t.Errorf("all-to-all with 16 QPs per peer %.1f us, with 1 %.1f us; want faster with more QPs (more ECMP paths)", many, one)
	}
	seen := map[float64]bool{}
	for seed := 1; seed <= 4; seed++ {
		seen[at(1, seed)] = true
	}
	if len(seen) < 3 {
		t.Errorf("seeds 1-4 gave %d distinct all-to-all times; want the ECMP hash to differ by seed", len(seen))
	}
}

// TestFlowRouterHonoursEVActive: at flow level an MRC flow off a Clos sprays over as many
// paths as the packet level's active EV set (transport.mrc.ev.active), split over the planes,
// not a fixed 128 (issue 18: a user's ev.active was ignored at flow level).
func TestFlowRouterHonoursEVActive(t *testing.T) {
	for _, c := range []struct {
		topo   string
		active int // 0: the default
		want   int // paths of the far flow
	}{
		{"torus: {dims: 4x4x8, link_rate: 100G}", 0, 128},
		{"torus: {dims: 4x4x8, link_rate: 100G}", 32, 32},
		{"torus: {dims: 4x4x8, link_rate: 100G}", 8, 8},
		{"torus: {dims: 4x4x8, link_rate: 100G}", 256, 256},
		{"rail: {servers: 8, gpus_per_server: 4, planes: 2, radix: 8, host_link: 100G}", 16, 0},
	} {
		yaml := "topology: {" + c.topo + "}\ntransport: {kind: mrc"
		if c.active > 0 {
			yaml += fmt.Sprintf(", mrc: {ev: {active: %d}}", c.active)
		}
		yaml += "}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB}]}\n"
		sc, l := parseDescribe(t, yaml)
		base, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := &collRouter{flowRouter: base}
		src, dst := 0, l.NumHosts()-1
		paths, _, err := r.Paths(src, dst, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want == 0 { // fewer minimal paths than EVs: every one
			want = min(l.NumPaths(src, dst), c.active)
		}
		if total := l.NumPaths(src, dst); total < want {
			want = total
		}
		if len(paths) != want {
			t.Errorf("%s, ev.active %d: %d -> %d sprayed over %d paths; want %d (of %d minimal)", c.topo, c.active, src, dst, len(paths), want, l.NumPaths(src, dst))
		}
	}
}

// Issue 18: ev.active and every other transport setting is honoured at flow level; each
// comes to the flow level through the transport's flow model (flowModelOf), and the result
// moves with it. ev.active bounds the paths a sprayed MRC flow samples off a Clos (a torus
// and a rail here), and so the all-to-all time; qps_per_peer is RoCE's ECMP paths per peer
// per plane, and so its collisions (16 KiB chunks: 16 messages to each peer at once, enough
// for 8 QPs on each of the 2 planes); rto and retry_count are the give-up time of a RoCE QP
// stalled on a dead path (TestFlowGiveUpHonoured).
func TestFlowTransportSettingsHonoured(t *testing.T) {
	const y = `
topology: {%s}
transport: {kind: %s, %s: {%s}}
workload:
  collectives: [{op: all_to_all, bytes: 16MiB, chunk: 16KiB}]
run: {engine: flow, seed: 3}
`
	for _, c := range []struct {
		name, topo, kind, key string
		values                []int
	}{
		{"torus ev.active", "torus: {dims: 4x4x4, link_rate: 100G}", "mrc", "ev: {active: %d}", []int{1, 4, 32, 128}},
		// Two planes (ev.active a multiple of 2), 8 minimal paths between servers.
		{"rail ev.active", "rail: {servers: 8, gpus_per_server: 4, planes: 2, radix: 8, host_link: 100G}", "mrc", "ev: {active: %d}", []int{2, 4, 6, 8}},
		{"clos qps_per_peer", "clos: {tiers: 2, planes: 2, radix: 16, hosts: 64, host_link: 100G}", "roce", "qps_per_peer: %d", []int{1, 2, 4, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var prevPaths int
			var prevUs float64
			for i, v := range c.values {
				yaml := fmt.Sprintf(y, c.topo, c.kind, c.kind, fmt.Sprintf(c.key, v))
				sc, l := parseDescribe(t, yaml)
				base, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
				if err != nil {
					t.Fatal(err)
				}
				r := &collRouter{flowRouter: base}
				src, dst := 0, 1 // the pair with the most minimal paths
				for h := 2; h < l.NumHosts(); h++ {
					if l.NumPaths(src, h) > l.NumPaths(src, dst) {
						dst = h
					}
				}
				paths, _, err := r.Paths(src, dst, 0, nil)
				if err != nil {
					t.Fatal(err)
				}
				planes, total := l.Params().Planes, l.NumPaths(src, dst)
				want := v * planes // RoCE: one ECMP path per QP per plane
				if c.kind == "mrc" {
					want = max(planes, min(total, v/planes*planes)) // at least one per plane
				}
				if len(paths) != want {
					t.Errorf("%s %d: %d -> %d over %d paths; want %d (of %d minimal, %d planes)", c.name, v, src, dst, len(paths), want, total, planes)
				}
				if i > 0 && len(paths) < prevPaths {
					t.Errorf("%s %d: %d paths, fewer than the %d of the setting before", c.name, v, len(paths), prevPaths)
				}
				prevPaths = len(paths)
				us := mustRun(t, yaml).Summary.Collectives[0].TimeUs
				t.Logf("%s %d: %d paths, all-to-all %.1f us", c.name, v, len(paths), us)
				if i > 0 && us >= prevUs {
					t.Errorf("%s %d: all-to-all %.3f us, not faster than %.3f with %d; want more paths to spread it", c.name, v, us, prevUs, c.values[i-1])
				}
				prevUs = us
			}
		})
	}
}

// Issue 18: rto and retry_count are honoured at flow level: a RoCE QP stalled on a dead
// path (a T1 switch down, routing reconverging only after 1 s) gives up after RTO x
// (retry_count + 1) without progress, the job restart's time, for every setting swept.
func TestFlowGiveUpHonoured(t *testing.T) {
	base := tfCase{radix: 16, hosts: 32, transport: "{kind: roce}", steps: 2}.run(t).Summary
	at := 0.5 * base.Training.StepTimeUs // the middle of step 0
	seen := map[float64]string{}
	for _, rto := range []sim.Time{sim.Millisecond, 3 * sim.Millisecond} {
		for _, retry := range []int{1, 3, 7} {
			c := tfCase{radix: 16, hosts: 32, transport: fmt.Sprintf("{kind: roce, roce: {rto: %dus, retry_count: %d}}", rto/sim.Microsecond, retry), steps: 2,
				faults: fmt.Sprintf("  - {at: %.0fus, switch: p0.t1-0, action: down}\n", at)}
			tf := c.run(t).Summary.TrainingFaults
			if tf == nil || len(tf.Restarts) != 1 {
				t.Fatalf("rto %v retry_count %d: restarts %+v; want one", rto, retry, tf)
			}
			r := tf.Restarts[0]
			budget := rto * sim.Time(retry+1)
			var sinceMs float64
			if i := strings.Index(r.Cause, " from "); i < 0 {
				t.Fatalf("cause %q names no stall time", r.Cause)
			} else if _, err := fmt.Sscanf(r.Cause[i:], " from %f ms", &sinceMs); err != nil {
				t.Fatalf("cause %q: %v", r.Cause, err)
			}
			t.Logf("rto %v retry_count %d: stalled from %.3f ms, gave up at %.3f ms: %s", rto, retry, sinceMs, r.AtUs/1e3, r.Cause)
			if got := r.AtUs - 1e3*sinceMs; math.Abs(got-budget.Micros()) > 1 {
				t.Errorf("rto %v retry_count %d: gave up %.1f us after stalling; want RTO x (retry_count + 1) = %v", rto, retry, got, budget)
			}
			if !strings.Contains(r.Cause, "retry budget ("+budget.String()+")") {
				t.Errorf("rto %v retry_count %d: cause %q does not name the budget %v", rto, retry, r.Cause, budget)
			}
			if prev, dup := seen[r.AtUs]; dup {
				t.Errorf("rto %v retry_count %d: gave up at %.1f us, as %s did", rto, retry, r.AtUs, prev)
			}
			seen[r.AtUs] = fmt.Sprintf("rto %v retry_count %d", rto, retry)
		}
	}
}

// flowModelOf: a kind with no flow-level model is an *InputError naming it and the way out;
// a registered transport gives its plugin's model and Name; checkFlowModel refuses models
// the flow level cannot run.
func TestFlowModelOf(t *testing.T) {
	l, err := topo.Clos{Tiers: 2, Planes: 2, Radix: 8, Hosts: 16, HostLink: 100e9}.Layout()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, name string
		spray      bool
	}{{"mrc", "MRC", true}, {"roce", "RoCE", false}, {"nosuch", "", false}, {"ideal", "", false}} {
		sc := &scenario.Scenario{}
		sc.Transport.Kind = c.kind
		m, name, err := flowModelOf(sc, l)
		if c.name == "" {
			var ie *InputError
			want := "transport.kind: " + c.kind + " has no flow-level model; use run.engine: packet"
			if !errors.As(err, &ie) || err.Error() != want {
				t.Errorf("%s: %v; want an InputError %q", c.kind, err, want)
			}
			continue
		}
		if err != nil || name != c.name || m.Spray != c.spray || m.GiveUp <= 0 {
			t.Errorf("%s: %+v %q %v; want %s's model", c.kind, m, name, err, c.name)
		}
	}
	good := transport.FlowModel{Paths: 1, WireBytes: 4178, HeaderBytes: 82, AckBytes: 82, RTO: sim.Millisecond, GiveUp: 8 * sim.Millisecond}
	for _, c := range []struct {
		name string
		edit func(m *transport.FlowModel)
		ok   bool
	}{
		{"good", func(m *transport.FlowModel) {}, true},
		{"spray, default paths", func(m *transport.FlowModel) { m.Spray, m.Paths = true, 0 }, true},
		{"reroute without rto", func(m *transport.FlowModel) { m.EndpointReroute, m.RTO = true, 0 }, true},
		{"never gives up", func(m *transport.FlowModel) { m.GiveUp = sim.MaxTime }, true},
		{"negative paths", func(m *transport.FlowModel) { m.Paths = -1 }, false},
		{"no wire", func(m *transport.FlowModel) { m.WireBytes = 0 }, false},
		{"no ack", func(m *transport.FlowModel) { m.AckBytes = 0 }, false},
		{"negative header", func(m *transport.FlowModel) { m.HeaderBytes = -1 }, false},
		{"no give-up", func(m *transport.FlowModel) { m.GiveUp = 0 }, false},
		{"no rto, no reroute", func(m *transport.FlowModel) { m.RTO = 0 }, false},
		{"negative reroute", func(m *transport.FlowModel) { m.EndpointReroute, m.RerouteAfter = true, -1 }, false},
	} {
		m := good
		c.edit(&m)
		if err := checkFlowModel(m); (err == nil) != c.ok {
			t.Errorf("%s: %v; want ok %v", c.name, err, c.ok)
		}
	}
}

// TestFlowRouteCacheMatchesWalk: a RoCE route served from flowRouter.routes is the route a
// fresh walk gives (the same links in the same order, the same latency), for every pair of
// a 2-plane Clos and several Router keys, asked for twice, with the cache's chunks filled
// across their boundary; and a router whose cache is full still routes (walking) the same.
func TestFlowRouteCacheMatchesWalk(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: roce, roce: {qps_per_peer: 2}}
workload: {collectives: [{op: all_reduce, bytes: 1MiB}]}
`
	sc, l := parseDescribe(t, y)
	newR := func() *flowRouter {
		r, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	type route struct {
		links [][]int32
		lat   sim.Time
	}
	get := func(r *flowRouter, src, dst int, key uint64) route {
		paths, lat, err := r.Paths(src, dst, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out route
		out.lat = lat
		for _, p := range paths {
			if p.Weight != 1 {
				t.Fatalf("%d -> %d key %d: weight %v, want 1", src, dst, key, p.Weight)
			}
			out.links = append(out.links, slices.Clone(p.Links))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		fill int // int32 in the last chunk before the first route (a chunk boundary soon)
		used int // routeUsed before the first route (routeCacheLinks: full)
	}{
		{"empty", 0, 0},
		{"chunk boundary", routeChunk - 40, routeChunk - 40},
		{"full", 0, routeCacheLinks},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cached, fresh := newR(), newR()
			if tc.fill > 0 {
				cached.routeLinks = [][]int32{make([]int32, tc.fill, routeChunk)}
			}
			cached.routeUsed = tc.used
			hits := 0
			for pass := range 2 {
				for src := range l.NumHosts() {
					for dst := range l.NumHosts() {
						if src == dst {
							continue
						}
						for _, key := range []uint64{7, 1 << 40} {
							got := get(cached, src, dst, key)
							fresh.routes, fresh.routeLinks, fresh.routeUsed = nil, nil, 0
							want := get(fresh, src, dst, key)
							if !reflect.DeepEqual(got, want) {
								t.Fatalf("pass %d, %d -> %d key %d: cached route %v, walked %v", pass, src, dst, key, got, want)
							}
							if pass == 1 {
								if _, ok := cached.routes.get(routeKey{int32(src), int32(dst), key}); ok {
									hits++
								}
							}
						}
					}
				}
			}
			if want := tc.used < routeCacheLinks; (hits > 0) != want {
				t.Errorf("%d routes served from the cache on the second pass; want some: %v", hits, want)
			}
			if tc.fill > 0 && len(cached.routeLinks) < 2 {
				t.Errorf("%d chunks; want the routes past the first chunk's end in a new one", len(cached.routeLinks))
			}
		})
	}
}

// parseDescribe parses scenario y and describes its topology, failing the test on either
// error.
func parseDescribe(t *testing.T, y string) (*scenario.Scenario, topo.Topology) {
	t.Helper()
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		t.Fatal(err)
	}
	return sc, l
}
