package topo

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestSizing pins the sizes the package documentation quotes, including the k-ary fat-tree
// counts of Al-Fares et al., SIGCOMM 2008 (k pods, (k/2)^2 cores, k^3/4 hosts).
func TestSizing(t *testing.T) {
	g := sim.Gbps
	tests := []struct {
		name     string
		c        Clos
		hosts    int
		byTier   []int // per plane
		switches int   // all planes
		links    []int // all planes, by level
		hops     int
		bisect   sim.Rate
	}{
		{"8 planes radix 512 100G 2-tier", Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: 100 * g},
			131072, []int{512, 256}, 6144, []int{1048576, 1048576}, 3, 131072 * 8 * 100 * g / 2},
		{"radix 64 800G 2-tier", Clos{Tiers: 2, Planes: 1, Radix: 64, HostLink: 800 * g},
			2048, []int{64, 32}, 96, []int{2048, 2048}, 3, 2048 * 800 * g / 2},
		{"radix 64 800G 3-tier", Clos{Tiers: 3, Planes: 1, Radix: 64, HostLink: 800 * g},
			65536, []int{2048, 2048, 1024}, 5120, []int{65536, 65536, 65536}, 5, 65536 * 800 * g / 2},
		{"radix 16 3-tier", Clos{Tiers: 3, Planes: 1, Radix: 16, HostLink: 400 * g},
			1024, []int{128, 128, 64}, 320, []int{1024, 1024, 1024}, 5, 1024 * 400 * g / 2},
		{"fat-tree k=4", Clos{Tiers: 3, Planes: 1, Radix: 4, HostLink: 100 * g},
			16, []int{8, 8, 4}, 20, []int{16, 16, 16}, 5, 16 * 100 * g / 2},
		// 3:1 at T0: 48 down, 16 up; T1s = 16, T0s = 64; T0 uplinks are the bottleneck.
		{"radix 64 3:1 2-tier", Clos{Tiers: 2, Planes: 2, Radix: 64, HostLink: 100 * g, Oversubscription: []float64{3}},
			3072, []int{64, 16}, 160, []int{6144, 2048}, 3, 2048 * 100 * g / 2},
		// Parallel links: u0 = 32, p0 = 4 -> 8 T1s, 16 T0s.
		{"radix 64 p0=4 2-tier", Clos{Tiers: 2, Planes: 1, Radix: 64, HostLink: 100 * g, ParallelLinks: []int{4}},
			512, []int{16, 8}, 24, []int{512, 512}, 3, 512 * 100 * g / 2},
		// Host links at 100G, fabric at 400G, 1:1 in bandwidth: 8 down, 2 up of radix 10.
		{"mixed rates", Clos{Tiers: 2, Planes: 1, Radix: 10, HostLink: 100 * g, FabricLink: 400 * g},
			80, []int{10, 2}, 12, []int{80, 20}, 3, 80 * 100 * g / 2},
		// Partial 3-tier: 100 hosts of radix 8 (4 per T0, 4 T0s per pod) -> 25 T0s, 7 pods.
		{"partial 3-tier", Clos{Tiers: 3, Planes: 1, Radix: 8, Hosts: 100, HostLink: 100 * g},
			100, []int{25, 28, 16}, 69, []int{100, 100, 112}, 5, 100 * 100 * g / 2},
		// One pod of a 3-tier: no traffic crosses T1 uplinks.
		{"one pod", Clos{Tiers: 3, Planes: 1, Radix: 8, Hosts: 16, HostLink: 100 * g},
			16, []int{4, 4, 16}, 24, []int{16, 16, 16}, 3, 16 * 100 * g / 2},
		{"one T0", Clos{Tiers: 2, Planes: 1, Radix: 8, Hosts: 3, HostLink: 100 * g},
			3, []int{1, 4}, 5, []int{3, 4}, 1, 3 * 100 * g / 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.c.Size()
			if err != nil {
				t.Fatal(err)
			}
			if s.Hosts != tt.hosts || !reflect.DeepEqual(s.SwitchesPerPlaneByTier, tt.byTier) ||
				s.Switches != tt.switches || !reflect.DeepEqual(s.LinksByLevel, tt.links) ||
				s.MaxSwitchHops != tt.hops || s.BisectionBandwidth != tt.bisect {
				t.Errorf("got hosts %d, switches/plane %v, switches %d, links %v, hops %d, bisection %v\nwant hosts %d, switches/plane %v, switches %d, links %v, hops %d, bisection %v",
					s.Hosts, s.SwitchesPerPlaneByTier, s.Switches, s.LinksByLevel, s.MaxSwitchHops, s.BisectionBandwidth,
					tt.hosts, tt.byTier, tt.switches, tt.links, tt.hops, tt.bisect)
			}
			sum := 0
			for _, n := range s.SwitchesPerPlaneByTier {
				sum += n
			}
			nl := 0
			for _, n := range s.LinksByLevel {
				nl += n
			}
			if s.SwitchesPerPlane != sum || s.Switches != sum*tt.c.Planes || s.Links != nl || s.Optics != 2*nl {
				t.Errorf("totals inconsistent: %+v", s)
			}
			if s.NICBandwidth != tt.c.HostLink*sim.Rate(tt.c.Planes) {
				t.Errorf("NIC bandwidth %v", s.NICBandwidth)
			}
			if s.Links > 100000 {
				return // Nodes and Links are checked on the smaller cases
			}
			l, _ := tt.c.Layout()
			if got := len(l.Nodes()); got != s.Hosts+s.Switches {
				t.Errorf("Nodes() has %d, want %d", got, s.Hosts+s.Switches)
			}
			if got := len(l.Links()); got != s.Links {
				t.Errorf("Links() has %d, want %d", got, s.Links)
			}
		})
	}
}

// TestWorstCaseLatency checks the documented formula on a 3-tier Clos: 6 links x 500ns plus a
// 4 KiB packet serialised on 2 host links (100G: 327.68ns) and 4 fabric links (400G: 81.92ns).
func TestWorstCaseLatency(t *testing.T) {
	s, err := Clos{Tiers: 3, Planes: 1, Radix: 10, HostLink: 100 * sim.Gbps, FabricLink: 400 * sim.Gbps}.Size()
	if err != nil {
		t.Fatal(err)
	}
	want := 6*500*sim.Nanosecond + 2*sim.Time(327680) + 4*sim.Time(81920)
	if s.WorstCaseLatency != want {
		t.Errorf("worst-case latency %v, want %v", s.WorstCaseLatency, want)
	}
}

func TestWithDefaults(t *testing.T) {
	c := Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: 400 * sim.Gbps, Oversubscription: []float64{3}}
	got := c.WithDefaults()
	want := Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: 400 * sim.Gbps, FabricLink: 400 * sim.Gbps,
		HopLatency: DefaultHopLatency, Oversubscription: []float64{3, 1}, ParallelLinks: []int{1, 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	got.Oversubscription[0] = 9
	if c.Oversubscription[0] != 3 {
		t.Error("WithDefaults shares the Oversubscription slice")
	}
	l, err := c.Layout()
	if err != nil {
		t.Fatal(err)
	}
	if eff := l.Config(); eff.Hosts != l.Dims().MaxHosts || eff.HopLatency != DefaultHopLatency {
		t.Errorf("Config() = %+v, want hosts resolved to %d", eff, l.Dims().MaxHosts)
	}
}

// TestValidate checks that each bad field is reported by its YAML name with the bad value and
// what is allowed.
func TestValidate(t *testing.T) {
	base := func(f func(*Clos)) Clos {
		c := Clos{Tiers: 2, Planes: 1, Radix: 64, HostLink: 100 * sim.Gbps}
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		c     Clos
		field string
		want  []string
	}{
		{"odd radix", base(func(c *Clos) { c.Radix = 63 }), "radix", []string{"63 is odd", "even"}},
		{"small radix", base(func(c *Clos) { c.Radix = 2 }), "radix", []string{"2 is out of range", "4 to 4096"}},
		{"huge radix", base(func(c *Clos) { c.Radix = 1 << 40 }), "radix", []string{"out of range"}},
		{"no planes", base(func(c *Clos) { c.Planes = 0 }), "planes", []string{"0 is out of range", "1 to 8"}},
		{"9 planes", base(func(c *Clos) { c.Planes = 9 }), "planes", []string{"9", "1 to 8"}},
		{"1 tier", base(func(c *Clos) { c.Tiers = 1 }), "tiers", []string{"1 is not supported", "2 or 3"}},
		{"4 tiers", base(func(c *Clos) { c.Tiers = 4 }), "tiers", []string{"4 is not supported"}},
		{"negative hosts", base(func(c *Clos) { c.Hosts = -1 }), "hosts", []string{"-1 is negative"}},
		{"too many hosts", base(func(c *Clos) { c.Hosts = 3000 }), "hosts", []string{"3000", "at most 2048", "64 T0s x 32 hosts"}},
		{"too many hosts 3-tier", base(func(c *Clos) { c.Tiers, c.Radix, c.Hosts = 3, 16, 1025 }), "hosts", []string{"at most 1024", "16 pods x 8 T0s x 8 hosts"}},
		{"max beyond int32", base(func(c *Clos) { c.Tiers, c.Radix = 3, 4096 }), "hosts", []string{"17179869184", "set hosts"}},
		{"missing host link", base(func(c *Clos) { c.HostLink = 0 }), "host_link", []string{"missing", "positive rate"}},
		{"negative host link", base(func(c *Clos) { c.HostLink = -100 * sim.Gbps }), "host_link", []string{"-100Gbps is negative"}},
		{"negative fabric link", base(func(c *Clos) { c.FabricLink = -1 }), "fabric_link", []string{"-1bps is negative"}},
		{"negative latency", base(func(c *Clos) { c.HopLatency = -sim.Nanosecond }), "hop_latency", []string{"-1ns is negative"}},
		{"oversub no split", base(func(c *Clos) { c.Oversubscription = []float64{1.7} }), "oversubscription[0]",
			[]string{"1.7 gives no whole split of radix 64", "1.66667 (40 down : 24 up)", "1.78261 (41 down : 23 up)"}},
		{"oversub beyond radix", base(func(c *Clos) { c.Oversubscription = []float64{100} }), "oversubscription[0]",
			[]string{"63 (63 down : 1 up)"}},
		{"oversub zero", base(func(c *Clos) { c.Oversubscription = []float64{0} }), "oversubscription[0]", []string{"0 is not a positive ratio"}},
		{"oversub NaN", base(func(c *Clos) { c.Oversubscription = []float64{math.NaN()} }), "oversubscription[0]", []string{"NaN"}},
		{"oversub Inf", base(func(c *Clos) { c.Oversubscription = []float64{math.Inf(1)} }), "oversubscription[0]", []string{"+Inf"}},
		{"oversub too long", base(func(c *Clos) { c.Oversubscription = []float64{1, 1} }), "oversubscription", []string{"2 entries", "at most 1"}},
		{"T1 oversub no split", base(func(c *Clos) { c.Tiers, c.Radix, c.Oversubscription = 3, 8, []float64{1, 1.5} }), "oversubscription[1]",
			[]string{"1.5 gives no whole split of radix 8 into T1", "1 (4 down : 4 up) and 1.66667 (5 down : 3 up)"}},
		{"rates leave no split", base(func(c *Clos) { c.FabricLink = 400 * sim.Gbps }), "oversubscription[0]",
			[]string{"host_link 100Gbps and fabric_link 400Gbps"}},
		{"parallel not dividing", base(func(c *Clos) { c.ParallelLinks = []int{3} }), "parallel_links[0]",
			[]string{"3 does not divide the 32 T0 uplinks", "1, 2, 4, 8, 16, 32"}},
		{"parallel zero", base(func(c *Clos) { c.ParallelLinks = []int{0} }), "parallel_links[0]", []string{"0 is out of range"}},
		{"parallel too long", base(func(c *Clos) { c.ParallelLinks = []int{1, 1} }), "parallel_links", []string{"2 entries"}},
		{"T1 parallel", base(func(c *Clos) { c.Tiers, c.Radix, c.ParallelLinks = 3, 16, []int{1, 3} }), "parallel_links[1]",
			[]string{"3 does not divide the 8 T1 uplinks"}},
		{"T1 down parallel", base(func(c *Clos) {
			c.Tiers, c.Radix, c.Oversubscription, c.ParallelLinks = 3, 12, []float64{2, 1}, []int{4}
		}), "parallel_links[0]",
			[]string{"4 does not divide the 6 T1 down ports"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("error %q: want a *FieldError for %q", err, tt.field)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestValidateReportsAll checks that independent field errors are all reported at once.
func TestValidateReportsAll(t *testing.T) {
	err := Clos{Tiers: 5, Planes: 0, Radix: 3}.Validate()
	for _, f := range []string{"tiers:", "planes:", "radix:", "host_link:"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("error %v does not report %s", err, f)
		}
	}
}

// hostile are configurations no method may panic on.
var hostile = []Clos{
	{},
	{Tiers: -1, Planes: -1, Radix: -1, Hosts: -1, HostLink: -1, FabricLink: -1, HopLatency: -1},
	{Tiers: math.MaxInt, Planes: math.MaxInt, Radix: math.MaxInt, Hosts: math.MaxInt, HostLink: math.MaxInt64},
	{Tiers: math.MinInt, Planes: math.MinInt, Radix: math.MinInt, Hosts: math.MinInt, HostLink: math.MinInt64},
	{Tiers: 2, Planes: 1, Radix: 4, Hosts: math.MaxInt, HostLink: 1},
	{Tiers: 3, Planes: 8, Radix: MaxRadix, HostLink: math.MaxInt64, HopLatency: sim.MaxTime},
	{Tiers: 3, Planes: 8, Radix: MaxRadix, Hosts: MaxHostCount, HostLink: math.MaxInt64, HopLatency: sim.MaxTime},
	{Tiers: 3, Planes: 8, Radix: MaxRadix, Hosts: 5, HostLink: math.MaxInt64, FabricLink: 1, HopLatency: sim.MaxTime,
		Oversubscription: []float64{1e-300, 1e300}, ParallelLinks: []int{math.MaxInt, math.MinInt}},
	{Tiers: 2, Planes: 1, Radix: 8, HostLink: 1, Oversubscription: []float64{math.NaN(), math.Inf(-1), -0.0, 1e308}},
	{Tiers: 3, Planes: 1, Radix: 4, HostLink: 1, FabricLink: math.MaxInt64, Oversubscription: []float64{math.SmallestNonzeroFloat64}},
	{Tiers: 2, Planes: 1, Radix: 4, HostLink: 1, ParallelLinks: []int{2, 2, 2, 2}},
	{Tiers: 3, Planes: 1, Radix: 4096, Hosts: 1, HostLink: 1, Oversubscription: []float64{4095, 1.0 / 4095}, ParallelLinks: []int{1, 1}},
	{Tiers: 3, Planes: 1, Radix: 4096, Hosts: 1, HostLink: 1, Oversubscription: []float64{1.0 / 4095, 4095}, ParallelLinks: []int{4095, 1}},
}

// TestHostile feeds hostile values to every entry point: errors, never panics.
func TestHostile(t *testing.T) {
	for i, c := range hostile {
		exercise(t, c)
		if i < 4 && c.Validate() == nil {
			t.Errorf("hostile %d accepted: %+v", i, c)
		}
	}
}

// exercise calls every method of c's layout with edge-case arguments; it must not panic.
func exercise(t *testing.T, c Clos) {
	t.Helper()
	_ = c.Validate()
	_, _ = c.Size()
	_ = c.WithDefaults()
	l, err := c.Layout()
	if err != nil {
		return
	}
	_ = l.Sizing()
	n, h := l.NumNodes(), l.NumHosts()
	for _, x := range []int{math.MinInt, -1, 0, 1, h - 1, h, h + 1, n - 1, n, math.MaxInt} {
		_, _ = l.Node(x)
		_ = l.NodeName(x)
		_, _ = l.Routes(x)
		for _, p := range []int{math.MinInt, -1, 0, 1, l.d.T0Down, l.d.Radix - 1, l.d.Radix, math.MaxInt} {
			_, _ = l.Peer(x, p)
			_, _ = l.LinkOf(x, p)
			_ = l.PortName(x, p)
		}
		for _, y := range []int{math.MinInt, -1, 0, 1, h - 1, h, math.MaxInt} {
			np := l.NumPaths(x, y)
			for _, i := range []int{math.MinInt, -1, 0, np - 1, np, math.MaxInt} {
				_, _ = l.Path(x, y, i)
			}
			_, _ = l.SpreadRoutes(0, [][2]int{{x, y}})
		}
		for _, p := range []int{math.MinInt, -1, l.d.Planes, math.MaxInt} {
			_, _ = l.SpreadRoutes(p, [][2]int{{0, 1}})
		}
	}
	if n <= 1<<16 {
		_ = l.Nodes()
		_ = l.Links()
	}
}

// FuzzLayout checks that no configuration makes any method panic.
func FuzzLayout(f *testing.F) {
	f.Add(2, 1, 64, 0, int64(100e9), int64(0), int64(0), 1.0, 1.0, 1, 1)
	f.Add(3, 2, 8, 37, int64(100e9), int64(400e9), int64(1000), 1.0, 3.0, 2, 1)
	f.Add(3, 8, 16, 0, int64(1), int64(1), int64(-1), 0.5, 1.0, 2, 2)
	f.Add(2, 8, 4096, 1, int64(1), int64(0), int64(0), 4095.0, 1.0, 1, 1)
	for _, c := range hostile {
		os := append(c.WithDefaults().Oversubscription, 1, 1)
		pl := append(c.WithDefaults().ParallelLinks, 1, 1)
		f.Add(c.Tiers, c.Planes, c.Radix, c.Hosts, int64(c.HostLink), int64(c.FabricLink), int64(c.HopLatency), os[0], os[1], pl[0], pl[1])
	}
	f.Fuzz(func(t *testing.T, tiers, planes, radix, hosts int, host, fab, lat int64, os0, os1 float64, p0, p1 int) {
		exercise(t, Clos{Tiers: tiers, Planes: planes, Radix: radix, Hosts: hosts, HostLink: sim.Rate(host),
			FabricLink: sim.Rate(fab), HopLatency: sim.Time(lat), Oversubscription: []float64{os0, os1}[:max(0, min(2, tiers-1))],
			ParallelLinks: []int{p0, p1}[:max(0, min(2, tiers-1))]})
	})
}
