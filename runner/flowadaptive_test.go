package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// TestPlaneBundles: under adaptive routing a QP transport's flows ride per-plane bundles
// (withPlaneBundles): a T0's uplinks of one plane (and the links down into it), a pod's T1-T2
// links of one plane, and each host port, each one link of its members' summed capacity.
// Checked against the naive route: for every pair and plane, walking the plane's first
// minimal path and mapping its links to their bundles gives the table's path for that
// plane, with the same latency; a flow has qps_per_peer paths per plane, plane by plane
// (keepQPs' order); the bundles' capacities are their members'; names say the plane.
func TestPlaneBundles(t *testing.T) {
	for _, c := range []struct {
		name   string
		layout func() (*topo.Layout, error)
	}{
		{"2-tier 4 planes", func() (*topo.Layout, error) {
			return topo.Clos{Tiers: 2, Planes: 4, Radix: 8, Hosts: 32, HostLink: 100e9}.Layout()
		}},
		{"3-tier 2 planes", func() (*topo.Layout, error) {
			return topo.Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: 400e9}.Layout()
		}},
		{"fat-tree k=4", func() (*topo.Layout, error) { return topo.FatTree{K: 4, HostLink: 100e9}.Layout() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := c.layout()
			if err != nil {
				t.Fatal(err)
			}
			d := l.Dims()
			const qps = 2
			m := transport.FlowModel{Paths: qps, WireBytes: 4122, HeaderBytes: 26, AckBytes: 26, AdaptiveSpray: true}
			r, caps := newFlowRouter(l, m, nil, 1, 0, 0, 0)
			if r.pt == nil || r.bundle == nil || r.bt != nil || r.spray {
				t.Fatalf("pt %v, bundle %v, bt %v, spray %v; want per-plane bundles only", r.pt != nil, r.bundle != nil, r.bt != nil, r.spray)
			}
			share := payloadShare(m)
			sum := make(map[int32]float64)
			for k, lk := range r.links {
				for dir := range 2 {
					if b := r.bundle[2*k+dir]; b >= 0 {
						sum[b] += float64(lk.Rate) * share
						if p := r.planeOfBundle(b); p != lk.Plane {
							t.Fatalf("link %s (plane %d) in bundle %d of plane %d", lk.Name, lk.Plane, b, p)
						}
					}
				}
			}
			for b, s := range sum {
				if caps[b] != s {
					t.Fatalf("bundle %d: capacity %g; want its members' %g", b, caps[b], s)
				}
			}
			if want := 2 * d.Planes * (d.Hosts + d.T0s + max(d.Pods, 1)); len(caps)-2*len(r.links) != want {
				t.Errorf("%d bundles; want %d", len(caps)-2*len(r.links), want)
			}
			for a := 0; a < d.Hosts; a += 3 {
				for b := 0; b < d.Hosts; b++ {
					if a == b {
						continue
					}
					got, lat, err := r.Paths(a, b, 7, nil)
					if err != nil || len(got) != qps*d.Planes {
						t.Fatalf("%d -> %d: %d paths, %v; want %d", a, b, len(got), err, qps*d.Planes)
					}
					paths := make([][]int32, len(got))
					for i := range got {
						paths[i] = slices.Clone(got[i].Links)
					}
					for p := range d.Planes {
						r.scratch = r.scratch[:0]
						lw, err := r.walk(a, b, p)
						if err != nil {
							t.Fatal(err)
						}
						want := slices.Clone(r.scratch)
						for i, x := range want {
							want[i] = r.bundle[x]
						}
						for q := range qps {
							if !slices.Equal(paths[p*qps+q], want) {
								t.Fatalf("%d -> %d plane %d QP %d: table %v, walk %v", a, b, p, q, paths[p*qps+q], want)
							}
						}
						if lw != lat {
							t.Fatalf("%d -> %d plane %d: latency %v, walk %v", a, b, p, lat, lw)
						}
					}
				}
			}
			if s, ok := r.planeBundleName(int(r.pt.at(r.pt.t0B, 0, d.Planes-1, 0))); !ok || !strings.HasPrefix(s, "p") || !strings.HasSuffix(s, " uplinks") {
				t.Errorf("T0 0's uplink bundle of the last plane is named %q, %v", s, ok)
			}
		})
	}
	// Without adaptive spreading (AR off: adaptiveFlowModel clears it) nothing is bundled.
	l, err := topo.Clos{Tiers: 2, Planes: 2, Radix: 8, Hosts: 16, HostLink: 100e9}.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := newFlowRouter(l, transport.FlowModel{Paths: 1, WireBytes: 4122, AckBytes: 26}, nil, 1, 0, 0, 0); r.pt != nil || r.bundle != nil {
		t.Error("a QP transport without AdaptiveSpray got bundles")
	}
}

// planeOfBundle returns the plane of per-plane bundle b (test helper).
func (r *flowRouter) planeOfBundle(b int32) int {
	off := int(b - r.pt.hostB[0])
	nh, nt := len(r.pt.hostB), len(r.pt.t0B)
	switch {
	case off < nh:
	case off < nh+nt:
		off -= nh
	default:
		off -= nh + nt
	}
	return (off / 2) % r.pt.planes
}
