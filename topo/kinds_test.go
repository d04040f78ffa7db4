package topo

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestKindSizing pins the sizes of well-known fabrics of every kind.
func TestKindSizing(t *testing.T) {
	g := sim.Gbps
	tests := []struct {
		name      string
		spec      Spec
		hosts     int
		switches  int
		byTier    []int
		links     int
		optical   int
		diameter  int
		mean      float64
		bisection int // links, torus and mesh
	}{
		// Al-Fares et al. SIGCOMM 2008: k = 64 gives k^3/4 hosts, 5k^2/4 switches.
		{"fat-tree k=64", FatTree{K: 64, HostLink: 800 * g}, 65536, 5120, []int{2048, 2048, 1024}, 3 * 65536, 3 * 65536, 4, 4 - 2.0/64 - 2.0/2048, 0},
		// 16 + 20 + 28 hops at most (k/2 per ring), mean k/4 per ring over all ordered pairs
		// with self; the cut across z severs 2 x 16 x 20 links (the middle and the wrap).
		{"torus 16x20x28", Torus{Dims: TorusDims{16, 20, 28}, LinkRate: 400 * g}, 8960, 0, []int{}, 3 * 8960, 0, 32, 16, 640},
		{"torus 16x16x16", Torus{Dims: TorusDims{16, 16, 16}, LinkRate: 400 * g}, 4096, 0, []int{}, 3 * 4096, 0, 24, 12, 512},
		// TPU v4 pod: 64 cubes of 4^3; 3 x 4096 / 4 links leave a cube face.
		{"torus 16x16x16 ocs", Torus{Dims: TorusDims{16, 16, 16}, LinkRate: 400 * g, OCS: true}, 4096, 0, []int{}, 3 * 4096, 3072, 24, 12, 512},
		{"mesh 64", Mesh{Nodes: 64, LinkRate: 100 * g}, 64, 0, []int{}, 64 * 63 / 2, 0, 1, 63.0 / 64, 32 * 32},
		// 128 HGX servers on 8 rails, radix 64: 4 T0s per rail, 32 T1s.
		{"rail 128x8 r64", Rail{Servers: 128, GPUsPerServer: 8, Radix: 64, HostLink: 400 * g}, 1024, 64, []int{32, 32}, 1024 + 32*32, 1024 + 32*32, 2, 2 * (1 - 4*32*32*8.0/(1024*1024)), 0},
		// Rail-only: one radix-128 switch per rail; the fabric joins only same-rail GPUs.
		{"rail-only 128x8 r128", Rail{Servers: 128, GPUsPerServer: 8, Radix: 128, HostLink: 400 * g, RailOnly: true}, 1024, 8, []int{8}, 1024, 1024, 0, 0, 0},
		// Dual-plane: two copies of the fabric.
		{"rail 64x8 r64 dual-plane", Rail{Servers: 64, GPUsPerServer: 8, Planes: 2, Radix: 64, HostLink: 200 * g}, 512, 2 * (16 + 32), []int{16, 32}, 2 * (512 + 16*32), 2 * (512 + 16*32), 2, 2 * (1 - 16*32*32.0/(512*512)), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tp, err := tt.spec.Topology()
			if err != nil {
				t.Fatal(err)
			}
			s := tp.Sizing()
			if s.Kind != tt.spec.Kind() || s.Hosts != tt.hosts || s.GPUs != tt.hosts || s.Switches != tt.switches || !reflect.DeepEqual(s.SwitchesPerPlaneByTier, tt.byTier) ||
				s.Links != tt.links || s.OpticalLinks != tt.optical || s.Optics != 2*tt.optical || s.DiameterHops != tt.diameter ||
				math.Abs(s.MeanHops-tt.mean) > 1e-12 || s.BisectionLinks != tt.bisection || s.MaxSwitchHops != tt.diameter+1 {
				t.Errorf("got %s: hosts %d, switches %d %v, links %d, optical %d, optics %d, diameter %d, mean %v, bisection links %d\n"+
					"want hosts %d, switches %d %v, links %d, optical %d, diameter %d, mean %v, bisection links %d",
					s.Kind, s.Hosts, s.Switches, s.SwitchesPerPlaneByTier, s.Links, s.OpticalLinks, s.Optics, s.DiameterHops, s.MeanHops, s.BisectionLinks,
					tt.hosts, tt.switches, tt.byTier, tt.links, tt.optical, tt.diameter, tt.mean, tt.bisection)
			}
			if tp.Params().Kind != tt.spec.Kind() {
				t.Errorf("Params().Kind = %q", tp.Params().Kind)
			}
		})
	}
}

// TestSizingHopsMatchBFS checks the closed forms of DiameterHops and MeanHops (Clos, rail,
// mesh) and the single-source search of the torus (which relies on vertex-transitivity,
// twisted tori included) against a breadth-first search from every host.
func TestSizingHopsMatchBFS(t *testing.T) {
	g := 100 * sim.Gbps
	specs := []Spec{
		Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: g},
		Clos{Tiers: 3, Planes: 2, Radix: 8, Hosts: 37, HostLink: g},
		Clos{Tiers: 2, Planes: 1, Radix: 12, Hosts: 21, HostLink: g, Oversubscription: []float64{2}},
		FatTree{K: 4, HostLink: g},
		Rail{Servers: 5, GPUsPerServer: 2, Radix: 6, HostLink: g},
		Rail{Servers: 6, GPUsPerServer: 2, Radix: 4, HostLink: g, RailOnly: true},
		Mesh{Nodes: 6, LinkRate: g},
		Torus{Dims: TorusDims{3, 4, 5}, LinkRate: g},
		Torus{Dims: TorusDims{4, 4, 8}, LinkRate: g},
		Torus{Dims: TorusDims{4, 4, 8}, LinkRate: g, Twisted: true},
		Torus{Dims: TorusDims{8, 4, 8}, LinkRate: g, Twisted: true},
		Torus{Dims: TorusDims{3, 6, 3}, LinkRate: g, Twisted: true},
	}
	for _, spec := range specs {
		tp, err := spec.Topology()
		if err != nil {
			t.Fatal(err)
		}
		gr, ok := tp.(*Graph)
		if !ok { // a Layout: search the same fabric as a generic Graph
			gr, err = NewGraph(GraphSpec{Params: tp.Params(), Nodes: tp.Nodes(), Links: tp.Links()})
			if err != nil {
				t.Fatal(err)
			}
		}
		d, mean, _ := gr.hostHops()
		s := tp.Sizing()
		if s.DiameterHops != d || math.Abs(s.MeanHops-mean) > 1e-9 {
			t.Errorf("%s %+v: diameter %d, mean %v; search from every host: %d, %v", spec.Kind(), spec, s.DiameterHops, s.MeanHops, d, mean)
		}
	}
}

// TestTwistedTorus: the twisted 4x4x8 torus of TPU v4 [TPU v4 §2] has a smaller diameter and
// mean distance than the regular one (6 and 3.4375 against 8 and 4), and a larger bisection;
// the twist moves each x and y wrap-around link 4 along z.
func TestTwistedTorus(t *testing.T) {
	reg, err := Torus{Dims: TorusDims{4, 4, 8}, LinkRate: 100 * sim.Gbps}.Size()
	if err != nil {
		t.Fatal(err)
	}
	tw, err := Torus{Dims: TorusDims{4, 4, 8}, LinkRate: 100 * sim.Gbps, Twisted: true}.Size()
	if err != nil {
		t.Fatal(err)
	}
	if reg.DiameterHops != 8 || reg.MeanHops != 4 || tw.DiameterHops != 6 || tw.MeanHops != 3.4375 {
		t.Errorf("regular %d / %v, twisted %d / %v; want 8 / 4 and 6 / 3.4375", reg.DiameterHops, reg.MeanHops, tw.DiameterHops, tw.MeanHops)
	}
	if tw.BisectionLinks <= reg.BisectionLinks {
		t.Errorf("bisection: twisted %d links, regular %d", tw.BisectionLinks, reg.BisectionLinks)
	}
	g, err := Torus{Dims: TorusDims{4, 4, 8}, LinkRate: 100 * sim.Gbps, Twisted: true}.Graph()
	if err != nil {
		t.Fatal(err)
	}
	// x3y1z6 --x+--> x0y1z2 (6+4 mod 8); x2y3z1 --y+--> x2y0z5; z wraps plainly.
	for _, c := range []struct {
		from, port int
		to         string
	}{
		{3 + 4*(1+4*6), 1, "x0y1z2"}, {2 + 4*(3+4*1), 3, "x2y0z5"}, {1 + 4*(1+4*7), 5, "x1y1z0"}, {0 + 4*(1+4*2), 2, "x3y1z6"},
	} {
		far, _ := g.Peer(g.NumHosts()+c.from, c.port)
		if got := g.NodeName(far.Node); got != c.to+".r" {
			t.Errorf("%s port %d leads to %s; want %s.r", g.NodeName(g.NumHosts()+c.from), c.port, got, c.to)
		}
	}
}

// TestMultiPlaneRatios pins the comparison of [MRC §2.2]: 8 planes of radix-512 switches at
// 100G in 2 tiers connect 131,072 hosts at 800 Gb/s each with 6,144 switches; the
// single-plane 3-tier fabric of radix-64 800G switches (the same 51.2T ASIC) needs 5/64
// switches and 6 modules per host (its largest build, 65,536 hosts, has 5,120 switches), the
// 8-plane 2-tier 3/64 and 4: 3/5 of the switches and 2/3 of the 800G optics modules at the
// same host count and bandwidth.
func TestMultiPlaneRatios(t *testing.T) {
	two, err := Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: 100 * sim.Gbps}.Size()
	if err != nil {
		t.Fatal(err)
	}
	three, err := Clos{Tiers: 3, Planes: 1, Radix: 64, HostLink: 800 * sim.Gbps}.Size()
	if err != nil {
		t.Fatal(err)
	}
	if two.Hosts != 131072 || two.Switches != 6144 || two.NICBandwidth != 800*sim.Gbps || three.Hosts != 65536 || three.Switches != 5120 {
		t.Fatalf("2-tier %d hosts %d switches; 3-tier %d hosts %d switches", two.Hosts, two.Switches, three.Hosts, three.Switches)
	}
	if two.OpticsModules != 4*two.Hosts || three.OpticsModules != 6*three.Hosts {
		t.Errorf("800G modules: 2-tier %d (%v per host), 3-tier %d (%v per host); want 4 and 6",
			two.OpticsModules, float64(two.OpticsModules)/float64(two.Hosts), three.OpticsModules, float64(three.OpticsModules)/float64(three.Hosts))
	}
	// Per host, as exact fractions: switches 6144/131072 : 5120/65536 = 3 : 5.
	if 5*two.Switches*three.Hosts != 3*three.Switches*two.Hosts || 3*two.OpticsModules*three.Hosts != 2*three.OpticsModules*two.Hosts {
		t.Errorf("ratios: switches %v, modules %v; want 3/5 and 2/3",
			float64(two.Switches)/float64(two.Hosts)/(float64(three.Switches)/float64(three.Hosts)),
			float64(two.OpticsModules)/float64(two.Hosts)/(float64(three.OpticsModules)/float64(three.Hosts)))
	}
	if two.BisectionGbps != three.BisectionGbps*2 {
		t.Errorf("bisection: 2-tier %v Gb/s, 3-tier %v Gb/s (half the hosts)", two.BisectionGbps, three.BisectionGbps)
	}
}

// TestBlastRadius pins single-failure shares.
func TestBlastRadius(t *testing.T) {
	find := func(t *testing.T, bs []Blast, el string) Blast {
		t.Helper()
		for _, b := range bs {
			if b.Element == el {
				return b
			}
		}
		t.Fatalf("no %s row in %+v", el, bs)
		return Blast{}
	}
	blast := func(t *testing.T, s Spec) []Blast {
		t.Helper()
		tp, err := s.Topology()
		if err != nil {
			t.Fatal(err)
		}
		return tp.BlastRadius()
	}
	g := 100 * sim.Gbps
	r512 := blast(t, Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: g})
	if b := find(t, r512, BlastT0T1Link); b.Share != 1.0/256 || b.AffectedKind != "T0s" {
		t.Errorf("radix 512: T0-T1 link %+v; want 1/256 (0.39%%) of a T0's uplinks", b)
	}
	if b := find(t, r512, BlastNICPort); b.Share != 0.125 {
		t.Errorf("8-plane NIC port %+v; want 12.5%%", b)
	}
	if b := find(t, r512, BlastT1Switch); b.Share != 1.0/256 || b.Affected != 512 {
		t.Errorf("radix 512 T1 %+v; want 1/256 of each of 512 T0s", b)
	}
	r64 := blast(t, Clos{Tiers: 3, Planes: 1, Radix: 64, HostLink: 8 * g})
	if b := find(t, r64, BlastT0T1Link); b.Share != 1.0/32 {
		t.Errorf("radix 64: T0-T1 link %+v; want 1/32 (3.1%%)", b)
	}
	if b := find(t, r64, BlastNICPort); b.Share != 1 {
		t.Errorf("1-plane NIC port %+v; want 100%%", b)
	}
	if b := find(t, r64, BlastT2Switch); b.Share != 1.0/32 || b.Affected != 64 {
		t.Errorf("radix 64 T2 %+v; want 1/32 of each of 64 T1s", b)
	}
	ft := blast(t, FatTree{K: 64, HostLink: 8 * g, ScaleUp: &ScaleUp{GPUs: 72, Rate: 7200 * sim.Gbps}})
	if b := find(t, ft, BlastScaleUpLink); b.Share != 1.0/18 {
		t.Errorf("NVLink %+v; want 1/18", b)
	}
	tor := blast(t, Torus{Dims: TorusDims{16, 16, 16}, LinkRate: g, OCS: true})
	if b := find(t, tor, BlastTorusLink); b.Share != 1.0/6 || b.Affected != 2 {
		t.Errorf("torus link %+v", b)
	}
	if b := find(t, tor, BlastOCS); b.Share != 1.0/6 || b.Affected != 128 {
		t.Errorf("OCS %+v; want 1/6 of 2 chips in each of 64 cubes", b)
	}
	if b := find(t, tor, BlastTorusChip); b.Affected != 6 || !strings.Contains(b.Note, "64 chips") {
		t.Errorf("torus chip %+v", b)
	}
	rail := blast(t, Rail{Servers: 128, GPUsPerServer: 8, Planes: 2, Radix: 64, HostLink: g})
	if b := find(t, rail, BlastNICPort); b.Share != 0.5 {
		t.Errorf("dual-plane NIC port %+v", b)
	}
	if b := find(t, rail, BlastT1Switch); b.Share != 1.0/32 || b.Affected != 32 {
		t.Errorf("rail T1 %+v; want 1/32 of the uplinks of all 32 T0s", b)
	}
	mesh := blast(t, Mesh{Nodes: 8, LinkRate: g})
	if b := find(t, mesh, BlastMeshNode); b.Share != 1.0/7 || b.Affected != 7 {
		t.Errorf("mesh node %+v", b)
	}
}

// TestScaleUp: an NVL72 domain reports 72 GPUs at 900 GB/s, 129.6 TB/s aggregate, and its
// parameters reach Params.
func TestScaleUp(t *testing.T) {
	su := &ScaleUp{GPUs: 72, Rate: 7200 * sim.Gbps}
	r := Rail{Servers: 36, GPUsPerServer: 4, Radix: 64, HostLink: 800 * sim.Gbps, ScaleUp: su}
	tp, err := r.Topology()
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Params()
	if p.ScaleUpGPUs != 72 || p.ScaleUpRate != 7200*sim.Gbps || p.ScaleUpLatency != DefaultScaleUpLatency {
		t.Errorf("params %+v", p)
	}
	s := tp.Sizing().ScaleUp
	if s == nil || s.Domains != 2 || s.Links != 144*18 || math.Abs(s.DomainTBps-129.6) > 1e-9 || s.GPUGbps != 7200 {
		t.Errorf("scale-up sizing %+v", s)
	}
	if su.Latency != 0 {
		t.Error("Topology wrote defaults into the caller's ScaleUp")
	}
	l, err := Clos{Tiers: 2, Planes: 1, Radix: 16, HostLink: 400 * sim.Gbps, ScaleUp: &ScaleUp{GPUs: 8, Rate: 3600 * sim.Gbps}}.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if l.Params().ScaleUpGPUs != 8 || l.Sizing().ScaleUp.Domains != 16 {
		t.Errorf("clos scale-up: %+v, %+v", l.Params(), l.Sizing().ScaleUp)
	}
}

// TestKindErrors: every configuration error is a *FieldError naming the field, the bad value
// and what is allowed.
func TestKindErrors(t *testing.T) {
	g := 100 * sim.Gbps
	tests := []struct {
		spec  Spec
		field string
		want  string
	}{
		{FatTree{K: 63, HostLink: g}, "k", "63"},
		{FatTree{K: 64, HostLink: g, Oversubscription: 0.3}, "oversubscription", "0.3"},
		{FatTree{K: 64, HostLink: g, Planes: 9}, "planes", "9"},
		{FatTree{K: 64, HostLink: g, ScaleUp: &ScaleUp{GPUs: 72}}, "scale_up.rate", "missing"},
		{Rail{GPUsPerServer: 8, Radix: 64, HostLink: g}, "servers", "at least 1"},
		{Rail{Servers: 1000, Radix: 64, HostLink: g}, "servers", "at most 256"},
		{Rail{Servers: 8, Radix: 63, HostLink: g}, "radix", "63"},
		{Rail{Servers: 8, Radix: 64, HostLink: g, Planes: 9}, "planes", "9"},
		{Rail{Servers: 8, GPUsPerServer: 4, Radix: 64, HostLink: g, ScaleUp: &ScaleUp{GPUs: 6, Rate: g}}, "scale_up.gpus", "multiple of gpus_per_server"},
		{Rail{Servers: 3000, Radix: 64, HostLink: g, RailOnly: true}, "servers", "2048"},
		{Torus{LinkRate: g}, "dims", "missing"},
		{Torus{Dims: TorusDims{1, 4, 4}, LinkRate: g}, "dims", "1x4x4"},
		{Torus{Dims: TorusDims{4, 4, 4}, LinkRate: g, Twisted: true}, "twisted", "k x k x 2k"},
		{Torus{Dims: TorusDims{4, 4, 4}}, "link_rate", "positive"},
		{Torus{Dims: TorusDims{4, 4, 4}, LinkRate: g, Routing: "xy"}, "routing", "dor"},
		{Torus{Dims: TorusDims{4, 4, 6}, LinkRate: g, OCS: true}, "dims", "multiple of cube_size 4"},
		{Torus{Dims: TorusDims{4, 4, 4}, LinkRate: g, SpareCubes: 2}, "spare_cubes", "ocs is off"},
		{Torus{Dims: TorusDims{4, 4, 8}, LinkRate: g, OCS: true, CubeMap: []int{0, 0}}, "cube_map[1]", "0"},
		{Mesh{Nodes: 1, LinkRate: g}, "nodes", "2 to 1024"},
		{Mesh{Nodes: 8, LinkRate: g, PortsPerNode: 9}, "ports_per_node", "multiple of nodes-1 = 7"},
		{Mesh{Nodes: 8}, "link_rate", "positive"},
	}
	for _, tt := range tests {
		err := tt.spec.Validate()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Msg, tt.want) {
			t.Errorf("%s %+v: error %v; want field %q mentioning %q", tt.spec.Kind(), tt.spec, err, tt.field, tt.want)
		}
		if tp, err2 := tt.spec.Topology(); err2 == nil || tp != nil {
			t.Errorf("%s: Topology() = %v, %v; want nil and the error", tt.spec.Kind(), tp, err2)
		}
	}
}

// TestTorusRemap: with OCS, a failed chip's 4x4x4 cube moves to the spare cube; its 64 hosts
// change physical chips, no other host does, the shape and routes stay; a second failure
// with no spare left is an error naming spare_cubes.
func TestTorusRemap(t *testing.T) {
	tr := Torus{Dims: TorusDims{8, 4, 4}, LinkRate: 100 * sim.Gbps, OCS: true, SpareCubes: 1, OCSSwitchTime: 5 * sim.Millisecond}
	before := tr.Mapping()
	failed := 5 + 8*(1+4*2) // x5y1z2: cube 1 (x 4..7)
	r, err := tr.Remap(failed)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cube != 1 || r.FailedCube != 1 || r.SpareCube != 2 || r.SwitchTime != 5*sim.Millisecond || len(r.Moved) != 64 {
		t.Errorf("remap: cube %d, failed %d, spare %d, switch %v, moved %d", r.Cube, r.FailedCube, r.SpareCube, r.SwitchTime, len(r.Moved))
	}
	for h := range before {
		moved := slices.Contains(r.Moved, h)
		if moved != (h%8 >= 4) || moved != (r.Mapping[h] != before[h]) {
			t.Fatalf("host %d: moved %v, chip %d -> %d", h, moved, before[h], r.Mapping[h])
		}
		if moved && r.Mapping[h]/64 != 2 {
			t.Fatalf("host %d moved to chip %d, not in spare cube 2", h, r.Mapping[h])
		}
	}
	if !reflect.DeepEqual(r.Torus.CubeMap, []int{0, 2}) || !reflect.DeepEqual(r.Torus.FailedCubes, []int{1}) {
		t.Errorf("new config: cube map %v, failed %v", r.Torus.CubeMap, r.Torus.FailedCubes)
	}
	if r.Topology.NumHosts() != 128 || r.Topology.Sizing().DiameterHops != 8 {
		t.Errorf("remapped topology: %d hosts, diameter %d", r.Topology.NumHosts(), r.Topology.Sizing().DiameterHops)
	}
	var fe *FieldError
	if _, err := r.Torus.Remap(0); !errors.As(err, &fe) || fe.Field != "spare_cubes" {
		t.Errorf("second failure: %v; want a spare_cubes error", err)
	}
	if _, err := (Torus{Dims: TorusDims{4, 4, 4}, LinkRate: 100 * sim.Gbps}).Remap(0); !errors.As(err, &fe) || fe.Field != "ocs" {
		t.Errorf("remap without OCS: %v", err)
	}
}

// TestTorusDOR: dimension-order routing gives one path, correcting x, then y, then z.
func TestTorusDOR(t *testing.T) {
	g, err := Torus{Dims: TorusDims{4, 4, 4}, LinkRate: 100 * sim.Gbps, Routing: "dor"}.Graph()
	if err != nil {
		t.Fatal(err)
	}
	dst := 1 + 4*(3+4*2) // x1y3z2: x+1, y-1, z+2
	if n := g.NumPaths(0, dst); n != 1 {
		t.Fatalf("NumPaths = %d; want 1", n)
	}
	r, err := g.Path(0, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint16{1, 4, 5, 5, 0}; !slices.Equal(r.Ports(), want) { // x+, y-, z+, z+, to the chip
		t.Errorf("DOR route %v; want %v", r.Ports(), want)
	}
}

// TestLayoutLinkPath: a Clos's LinkPath follows Path over Links, climbing A -> B and
// descending B -> A, with (switches + 1) x HopLatency of delay; indices wrap modulo NumPaths.
func TestLayoutLinkPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tt := range small {
		l := mustLayout(t, tt.c)
		links := l.Links()
		buf := make([]int32, 0, 8)
		for _, p := range pairs(l, rng, 300) {
			n := l.NumPaths(p[0], p[1])
			i := rng.IntN(3 * n)
			r, _ := l.Path(p[0], p[1], i%n)
			lp, lat, err := l.LinkPath(p[0], p[1], i, buf)
			if err != nil || len(lp) != int(r.Len)+1 || lat != sim.Time(len(lp))*l.Config().HopLatency {
				t.Fatalf("%s: LinkPath(%v, %d) = %v, %v, %v", tt.name, p, i, lp, lat, err)
			}
			at := Endpoint{p[0], int(r.Plane)}
			for k, id := range lp {
				lk := links[id/2]
				from, to := lk.A, lk.B
				if id%2 == 1 {
					from, to = lk.B, lk.A
				}
				if from != at {
					t.Fatalf("%s: link %d of path starts at %+v; the route is at %+v", tt.name, k, from, at)
				}
				if k < int(r.Len) {
					at = Endpoint{to.Node, int(r.Hops[k])}
				} else if to.Node != p[1] {
					t.Fatalf("%s: path ends at %d, not %d", tt.name, to.Node, p[1])
				}
			}
		}
		if _, _, err := l.LinkPath(0, 0, 0, nil); err == nil {
			t.Error("LinkPath to self: no error")
		}
		if testing.AllocsPerRun(10, func() { _, _, _ = l.LinkPath(0, l.NumHosts()-1, 3, buf) }) != 0 {
			t.Error("LinkPath allocates with room in buf")
		}
	}
}

// FuzzParseTorusDims: the dims parser never panics, and what it accepts prints back to text
// that parses to the same value.
func FuzzParseTorusDims(f *testing.F) {
	for _, s := range []string{"16x20x28", "4x4x8", "4X4X8", "1x1x1", "16x20", "axbxc", "16x20x28x2", "", "x", "00012x3x4", "99999999x1x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTorusDims(s)
		if err != nil {
			return
		}
		back, err := ParseTorusDims(d.String())
		if err != nil || back != d {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, d, d.String(), back, err)
		}
		var u TorusDims
		if err := u.UnmarshalText([]byte(s)); err != nil || u != d {
			t.Fatalf("UnmarshalText(%q) = %v, %v", s, u, err)
		}
		_ = Torus{Dims: d, LinkRate: sim.Gbps}.Validate() // any shape: an error or nil, never a panic
	})
}
