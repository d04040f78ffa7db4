package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// Torus limits and defaults.
const (
	// MaxTorusDim bounds each torus dimension.
	MaxTorusDim = 1024
	// MaxTorusChips bounds the number of chips (1,048,576), so chips and their routers stay
	// far inside int32 node indices.
	MaxTorusChips = 1 << 20
	// DefaultCubeSize is Torus.CubeSize when OCS is on and it is zero: TPU v4's 4x4x4 cubes
	// of 64 chips, wired inside by copper and to each other through OCSes [TPU v4 §2].
	DefaultCubeSize = 4
	// DefaultOCSSwitchTime is Torus.OCSSwitchTime when zero: a round 10ms for the MEMS mirrors
	// of an OCS to settle on a new configuration (milliseconds [TPU v4 §2]). A modelling
	// default, not a measurement.
	DefaultOCSSwitchTime = 10 * sim.Millisecond
	// torusPorts is a chip router's port count: its chip, then x+, x-, y+, y-, z+, z-.
	torusPorts = 7
)

// TorusDims is the shape of a 3D torus, k1 x k2 x k3 chips. Its text form (YAML, flags) is
// "16x20x28".
type TorusDims [3]int

// ParseTorusDims parses "k1xk2xk3" (three whole numbers joined by 'x' or 'X', e.g.
// "16x20x28"). Ranges are checked by Torus.Validate. Errors name the text and what is allowed.
func ParseTorusDims(s string) (TorusDims, error) {
	var d TorusDims
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == 'x' || r == 'X' })
	if len(parts) != 3 || strings.Count(strings.ToLower(s), "x") != 2 {
		return d, fmt.Errorf("%q is not three dimensions; want k1xk2xk3, e.g. \"16x20x28\"", s)
	}
	for i, p := range parts {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return d, fmt.Errorf("%q: dimension %q is not a whole number; want k1xk2xk3, e.g. \"16x20x28\"", s, p)
		}
		if len(p) > 7 {
			return d, fmt.Errorf("%q: dimension %s is out of range; want 2 to %d", s, p[:min(len(p), 24)], MaxTorusDim)
		}
		d[i], _ = strconv.Atoi(p)
	}
	return d, nil
}

// String returns "k1xk2xk3".
func (d TorusDims) String() string {
	return strconv.Itoa(d[0]) + "x" + strconv.Itoa(d[1]) + "x" + strconv.Itoa(d[2])
}

// Chips returns k1 x k2 x k3.
func (d TorusDims) Chips() int { return d[0] * d[1] * d[2] }

// MarshalText writes "k1xk2xk3".
func (d TorusDims) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads "k1xk2xk3" (see ParseTorusDims).
func (d *TorusDims) UnmarshalText(b []byte) error {
	v, err := ParseTorusDims(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// Torus configures a 3D torus of chips (TPU-style: every chip has six links, x+, x-, y+, y-,
// z+, z-, and no switch between chips), optionally twisted and optionally built from cubes
// joined by optical circuit switches (OCS) that can swap a failed cube for a spare.
//
// Chip c has coordinates x = c % k1, y = (c / k1) % k2, z = c / (k1 k2); it is host c. In
// lockstep each chip is a host with one NIC port (plane 0) joined by an internal link (rate
// HostLink, latency 0) to its own router, a switch of 7 ports that carries its six torus links
// (see the package documentation).
type Torus struct {
	// Dims is the shape, e.g. "16x20x28" (each dimension 2 to 1024, at most 2^20 chips).
	Dims TorusDims `yaml:"dims" json:"dims"`
	// Twisted twists the wrap-around links of the short dimensions of a k x k x 2k or
	// k x 2k x 2k torus by k along the long ones, as TPU v4 does [TPU v4 §2, §6]; see
	// the package documentation for exactly which links.
	Twisted bool `yaml:"twisted" json:"twisted"`
	// LinkRate is the rate of each torus link, bits/s each direction. Required.
	LinkRate sim.Rate `yaml:"link_rate" json:"link_rate"`
	// HostLink is the rate of the internal link between a chip and its router. 0 means the
	// sum of its six torus links, 6 x LinkRate, so the model never throttles the chip.
	HostLink sim.Rate `yaml:"host_link" json:"host_link"`
	// HopLatency is the latency of each torus link, propagation plus forwarding at the next
	// chip. 0 means DefaultHopLatency.
	HopLatency sim.Time `yaml:"hop_latency" json:"hop_latency"`
	// Routing is "minimal" (the default: every minimal next hop in the ECMP group, every
	// minimal path enumerated) or "dor" (dimension order: x, then y, then z, one path per
	// pair; on a twisted torus the lowest dimension first among the minimal next hops).
	Routing string `yaml:"routing" json:"routing"`
	// OCS builds the torus from cubes of CubeSize^3 chips: links inside a cube are
	// electrical, links leaving a cube face (wrap-arounds included) go through optical
	// circuit switches. Every dimension must be a multiple of CubeSize.
	OCS bool `yaml:"ocs" json:"ocs"`
	// CubeSize is the cube edge with OCS; 0 means DefaultCubeSize (4). Only with OCS.
	CubeSize int `yaml:"cube_size" json:"cube_size,omitempty"`
	// SpareCubes is the number of spare cubes the OCSes can switch in (Remap). Only with OCS.
	SpareCubes int `yaml:"spare_cubes" json:"spare_cubes,omitempty"`
	// OCSSwitchTime is how long a reconfiguration pauses the job; 0 means
	// DefaultOCSSwitchTime. Only with OCS.
	OCSSwitchTime sim.Time `yaml:"ocs_switch_time" json:"ocs_switch_time,omitempty"`
	// CubeMap maps each cube of the job's torus (cube index cx + Cx (cy + Cy cz), Ci =
	// ki / CubeSize) to the physical cube serving it: cubes 0..Cubes-1 first, then the
	// spares. Empty means the identity. Remap fills it in.
	CubeMap []int `yaml:"cube_map,omitempty" json:"cube_map,omitempty"`
	// FailedCubes lists physical cubes out of service (never used again). Remap fills it in.
	FailedCubes []int `yaml:"failed_cubes,omitempty" json:"failed_cubes,omitempty"`
}

// Kind returns "torus".
func (t Torus) Kind() string { return "torus" }

// WithDefaults returns a copy of t with defaults written out: HostLink = 6 x LinkRate,
// HopLatency = DefaultHopLatency, Routing = "minimal", and with OCS CubeSize =
// DefaultCubeSize, OCSSwitchTime = DefaultOCSSwitchTime and CubeMap the identity. Slices are
// copied.
func (t Torus) WithDefaults() Torus {
	if t.HostLink == 0 {
		t.HostLink = rateMul(t.LinkRate, 6)
	}
	if t.HopLatency == 0 {
		t.HopLatency = DefaultHopLatency
	}
	if t.Routing == "" {
		t.Routing = "minimal"
	}
	t.CubeMap = slices.Clone(t.CubeMap)
	t.FailedCubes = slices.Clone(t.FailedCubes)
	if t.OCS {
		if t.CubeSize == 0 {
			t.CubeSize = DefaultCubeSize
		}
		if t.OCSSwitchTime == 0 {
			t.OCSSwitchTime = DefaultOCSSwitchTime
		}
		if len(t.CubeMap) == 0 && t.CubeSize > 0 && t.geomOK() {
			t.CubeMap = make([]int, t.cubes())
			for i := range t.CubeMap {
				t.CubeMap[i] = i
			}
		}
	}
	return t
}

// geomOK reports whether Dims and CubeSize give a whole number of cubes.
func (t Torus) geomOK() bool {
	for _, k := range t.Dims {
		if k < 1 || k > MaxTorusDim || t.CubeSize < 1 || k%t.CubeSize != 0 {
			return false
		}
	}
	return true
}

// cubes returns the number of cubes in the job's torus (OCS).
func (t Torus) cubes() int { return t.Dims.Chips() / (t.CubeSize * t.CubeSize * t.CubeSize) }

// Validate reports whether t describes a buildable torus: nil, or one *FieldError per
// problem joined with errors.Join, each naming the field, the bad value and what is allowed.
func (t Torus) Validate() error { return errors.Join(t.WithDefaults().check()...) }

// check validates t (defaults applied).
func (t Torus) check() []error {
	var errs []error
	dimsOK := true
	for _, k := range t.Dims {
		if k < 2 || k > MaxTorusDim {
			dimsOK = false
		}
	}
	switch {
	case t.Dims == TorusDims{}:
		errs = append(errs, fieldErr("dims", "missing; want k1xk2xk3 with each dimension 2 to %d, e.g. \"16x20x28\"", MaxTorusDim))
		dimsOK = false
	case !dimsOK:
		errs = append(errs, fieldErr("dims", "%v has a dimension outside 2 to %d", t.Dims, MaxTorusDim))
	case t.Dims.Chips() > MaxTorusChips:
		errs = append(errs, fieldErr("dims", "%v is %d chips; at most %d", t.Dims, t.Dims.Chips(), MaxTorusChips))
		dimsOK = false
	}
	if dimsOK && t.Twisted {
		if _, ok := twistOf(t.Dims); !ok {
			errs = append(errs, fieldErr("twisted", "%v cannot be twisted; want a k x k x 2k or k x 2k x 2k shape in any order (4x4x8, 4x8x8, 12x12x24)", t.Dims))
		}
	}
	if t.LinkRate <= 0 {
		errs = append(errs, fieldErr("link_rate", "%v is not positive; want each torus link's rate, e.g. \"400Gbps\"", t.LinkRate))
	}
	if t.HostLink < 0 {
		errs = append(errs, fieldErr("host_link", "%v is negative; want a positive rate, or 0 for 6 x link_rate", t.HostLink))
	}
	if t.HopLatency < 0 || t.HopLatency > MaxHopLatency {
		errs = append(errs, fieldErr("hop_latency", "%v is out of range; want 0 (default %v) to %v", t.HopLatency, DefaultHopLatency, MaxHopLatency))
	}
	if t.Routing != "minimal" && t.Routing != "dor" {
		errs = append(errs, fieldErr("routing", "%q is not a routing; allowed minimal (default), dor", t.Routing))
	}
	if !t.OCS {
		for _, f := range []struct {
			name string
			set  bool
		}{{"cube_size", t.CubeSize != 0}, {"spare_cubes", t.SpareCubes != 0}, {"ocs_switch_time", t.OCSSwitchTime != 0},
			{"cube_map", len(t.CubeMap) != 0}, {"failed_cubes", len(t.FailedCubes) != 0}} {
			if f.set {
				errs = append(errs, fieldErr(f.name, "is set but ocs is off; set ocs: true, or leave %s out", f.name))
			}
		}
		return errs
	}
	if t.CubeSize < 2 || t.CubeSize > MaxTorusDim {
		errs = append(errs, fieldErr("cube_size", "%d is out of range; want 2 to %d (TPU v4: 4)", t.CubeSize, MaxTorusDim))
		return errs
	}
	if dimsOK && !t.geomOK() {
		errs = append(errs, fieldErr("dims", "%v is not a whole number of %d-chip cubes in every dimension; with ocs each dimension must be a multiple of cube_size %d", t.Dims, t.CubeSize, t.CubeSize))
		return errs
	}
	if t.SpareCubes < 0 || t.SpareCubes > MaxTorusChips {
		errs = append(errs, fieldErr("spare_cubes", "%d is out of range; want 0 to %d", t.SpareCubes, MaxTorusChips))
	}
	if t.OCSSwitchTime < 0 || t.OCSSwitchTime > sim.Hour {
		errs = append(errs, fieldErr("ocs_switch_time", "%v is out of range; want 0 (default %v) to 1h", t.OCSSwitchTime, DefaultOCSSwitchTime))
	}
	if !dimsOK || len(errs) > 0 {
		return errs
	}
	physical := t.cubes() + t.SpareCubes
	failed := make(map[int]bool, len(t.FailedCubes))
	for i, c := range t.FailedCubes {
		if c < 0 || c >= physical || failed[c] {
			errs = append(errs, fieldErr(fmt.Sprintf("failed_cubes[%d]", i), "%d is out of range or repeated; want distinct physical cubes 0 to %d", c, physical-1))
		}
		failed[c] = true
	}
	if len(t.CubeMap) != t.cubes() {
		return append(errs, fieldErr("cube_map", "has %d entries; want one per cube, %d", len(t.CubeMap), t.cubes()))
	}
	used := make(map[int]bool, len(t.CubeMap))
	for i, c := range t.CubeMap {
		if c < 0 || c >= physical || used[c] || failed[c] {
			errs = append(errs, fieldErr(fmt.Sprintf("cube_map[%d]", i), "%d is not a free physical cube; want distinct cubes 0 to %d not in failed_cubes", c, physical-1))
		}
		used[c] = true
	}
	return errs
}

// twist describes the twisted wrap-around links of a torus shape.
type twist struct {
	k     int     // the short dimension
	short [3]bool // dimensions of size k: their wrap links are twisted
	long  [3]bool // dimensions of size 2k: a twisted wrap link moves k along each
}

// twistOf returns the twist of a k x k x 2k or k x 2k x 2k shape (in any order).
func twistOf(d TorusDims) (twist, bool) {
	s := d
	slices.Sort(s[:])
	k := s[0]
	if !(s[0] == s[1] && s[2] == 2*k || s[1] == 2*k && s[2] == 2*k) {
		return twist{}, false
	}
	tw := twist{k: k}
	for i, v := range d {
		tw.short[i] = v == k
		tw.long[i] = v == 2*k
	}
	return tw, true
}

// torusGeom is a validated torus shape: coordinates, neighbours, twist.
type torusGeom struct {
	k       [3]int
	n       int
	twisted bool
	tw      twist
}

func newTorusGeom(t Torus) torusGeom {
	g := torusGeom{k: t.Dims, n: t.Dims.Chips(), twisted: t.Twisted}
	if t.Twisted {
		g.tw, _ = twistOf(t.Dims)
	}
	return g
}

func (g *torusGeom) coords(c int) [3]int {
	return [3]int{c % g.k[0], c / g.k[0] % g.k[1], c / (g.k[0] * g.k[1])}
}

func (g *torusGeom) index(x [3]int) int { return x[0] + g.k[0]*(x[1]+g.k[1]*x[2]) }

// neighbor returns the chip across chip c's port in dimension d, direction dir (0: +, 1: -).
// A + wrap-around of a twisted short dimension also moves k along each long dimension; the
// - wrap-around undoes it, so the two are the ends of one link.
func (g *torusGeom) neighbor(c, d, dir int) int {
	x := g.coords(c)
	if dir == 0 {
		x[d]++
		if x[d] == g.k[d] {
			x[d] = 0
			g.shift(&x, d, g.tw.k)
		}
	} else {
		if x[d] == 0 {
			x[d] = g.k[d]
			g.shift(&x, d, -g.tw.k)
		}
		x[d]--
	}
	return g.index(x)
}

// shift moves x by delta along each long dimension when d's wrap links are twisted.
func (g *torusGeom) shift(x *[3]int, d, delta int) {
	if !g.twisted || !g.tw.short[d] {
		return
	}
	for l := range x {
		if g.tw.long[l] {
			x[l] = ((x[l]+delta)%g.k[l] + g.k[l]) % g.k[l]
		}
	}
}

// distances returns the hop distance from chip 0 to every chip (a breadth-first search over
// the torus links); the torus is vertex-transitive (twisted too: translations are
// automorphisms), so these are the distances from any chip.
func (g *torusGeom) distances() []int32 {
	dist := make([]int32, g.n)
	for i := range dist {
		dist[i] = -1
	}
	dist[0] = 0
	q := make([]int32, 1, g.n)
	for head := 0; head < len(q); head++ {
		c := int(q[head])
		for p := 0; p < 6; p++ {
			if y := g.neighbor(c, p/2, p%2); dist[y] < 0 {
				dist[y] = dist[c] + 1
				q = append(q, int32(y))
			}
		}
	}
	return dist
}

// bisectionLinks returns the fewest links crossing an axis-aligned cut that halves the
// chips: along dimension d, the chips with coordinate in [0, kd/2) against the rest (every
// window of kd/2 planes along d cuts the same number, by translation). Only even dimensions
// halve the chips exactly; with none, the largest dimension's cut is used.
func (g *torusGeom) bisectionLinks() int {
	best := -1
	for d := range 3 {
		if g.k[d]%2 != 0 && (g.k[0]%2 == 0 || g.k[1]%2 == 0 || g.k[2]%2 == 0) {
			continue
		}
		in := func(c int) bool { return g.coords(c)[d] < g.k[d]/2 }
		cut := 0
		for c := range g.n {
			for e := range 3 {
				if in(c) != in(g.neighbor(c, e, 0)) {
					cut++
				}
			}
		}
		if best < 0 || cut < best {
			best = cut
		}
	}
	return best
}

// Topology validates t and returns its Graph (see Torus).
func (t Torus) Topology() (Topology, error) { return asTopology(t.Graph()) }

// Graph validates t and returns the torus as a Graph. Node order: chips 0..N-1 (hosts), then
// their routers N..2N-1 (router of chip c is node N+c). Names: chip "x3y0z7", its NIC port
// "x3y0z7.p0", router "x3y0z7.r" with ports "x3y0z7.r.chip", ".x+", ".x-", ".y+", ".y-",
// ".z+", ".z-" (local ports 0 to 6). Links: chip c's internal link is link c (level 0, delay
// 0); the + link of chip c in dimension d is link N + 3c + d (level 1), A = chip c's router.
func (t Torus) Graph() (*Graph, error) {
	t = t.WithDefaults()
	if errs := t.check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	g := newTorusGeom(t)
	n := g.n
	p := Params{Kind: "torus", Planes: 1, HostLink: t.HostLink, FabricLink: t.LinkRate, HopLatency: t.HopLatency}
	build := func() GraphSpec {
		spec := GraphSpec{Params: p, Nodes: make([]Node, 0, 2*n), Links: make([]Link, 0, 4*n), PortNames: make([]string, 0, 4*n)}
		names := make([]string, n)
		for c := range n {
			x := g.coords(c)
			names[c] = "x" + strconv.Itoa(x[0]) + "y" + strconv.Itoa(x[1]) + "z" + strconv.Itoa(x[2])
			spec.Nodes = append(spec.Nodes, Node{Name: names[c], Kind: KindHost, Plane: -1, Tier: -1, Index: c, NumPorts: 1})
		}
		for c := range n {
			spec.Nodes = append(spec.Nodes, Node{Name: names[c] + ".r", Kind: KindSwitch, Plane: 0, Tier: 0, Index: c, NumPorts: torusPorts})
		}
		for c := range n {
			spec.Links = append(spec.Links, Link{Name: names[c] + ".p0", A: Endpoint{c, 0}, B: Endpoint{n + c, 0}, Plane: 0, Level: 0, Rate: t.HostLink})
			spec.PortNames = append(spec.PortNames, names[c]+".r.chip")
		}
		dirs := [3]string{"x", "y", "z"}
		for c := range n {
			for d := range 3 {
				y := g.neighbor(c, d, 0)
				spec.Links = append(spec.Links, Link{Name: names[c] + ".r." + dirs[d] + "+", A: Endpoint{n + c, 1 + 2*d}, B: Endpoint{n + y, 2 + 2*d},
					Plane: 0, Level: 1, Rate: t.LinkRate, Delay: t.HopLatency})
				spec.PortNames = append(spec.PortNames, names[y]+".r."+dirs[d]+"-")
			}
		}
		return spec
	}
	gr := newLazyGraph(p, n, 2*n, 4*n, t.Routing == "dor", t.sizing(&g), t.blast(), build)
	gr.tor = &torusPaths{g: g, single: t.Routing == "dor"}
	return gr, nil
}

// Size validates t and returns its Sizing without building the graph.
func (t Torus) Size() (Sizing, error) {
	g, err := t.Graph()
	if err != nil {
		return Sizing{}, err
	}
	return g.Sizing(), nil
}

// sizing computes the torus's Sizing (t valid, defaults applied). Diameter and mean hops
// come from a breadth-first search from chip 0 (exact: the torus is vertex-transitive),
// bisection from bisectionLinks.
func (t Torus) sizing(g *torusGeom) Sizing {
	n := g.n
	s := Sizing{Kind: "torus", Hosts: n, GPUs: n, Planes: 1, SwitchesPerPlaneByTier: []int{}, Routers: n}
	s.NICBandwidth = t.HostLink
	optical := 0
	if t.OCS {
		optical = 3 * n / t.CubeSize
		s.LinksByLevel = []int{3*n - optical, optical}
		s.LevelNames = []string{"chip-chip electrical (in cube)", "chip-chip optical (via OCS)"}
		c := t.CubeSize
		for chip := range n {
			x := g.coords(chip)
			ports := 0
			for d := range 3 {
				if x[d]%c == c-1 {
					ports++
				}
				if x[d]%c == 0 {
					ports++
				}
			}
			if ports > 0 {
				s.OpticsModules += modulesFor(float64(ports) * float64(t.LinkRate))
			}
		}
		s.OCS = &OCSSizing{CubeSize: c, Cubes: t.cubes(), SpareCubes: t.SpareCubes, OCSes: 3 * c * c,
			PortsPerOCS: 2 * (t.cubes() + t.SpareCubes), SwitchTime: t.OCSSwitchTime}
	} else {
		s.LinksByLevel = []int{3 * n}
		s.LevelNames = []string{"chip-chip"}
	}
	s.Links = 3 * n
	s.OpticalLinks = optical
	s.Optics = 2 * optical
	s.BisectionLinks = g.bisectionLinks()
	s.BisectionBandwidth = rateMul(t.LinkRate, s.BisectionLinks)
	s.BisectionGbps = float64(s.BisectionLinks) * t.LinkRate.Gbps()
	var sum int64
	for _, d := range g.distances() {
		sum += int64(d)
		s.DiameterHops = max(s.DiameterHops, int(d))
	}
	s.MeanHops = float64(sum) / float64(n)
	s.MaxSwitchHops = s.DiameterHops + 1
	lat := timeMul(timeAdd(t.HopLatency, t.LinkRate.TxTime(SizingPacketBytes)), s.DiameterHops)
	s.WorstCaseLatency = timeAdd(lat, timeMul(t.HostLink.TxTime(SizingPacketBytes), 2))
	if t.Twisted {
		s.Notes = append(s.Notes, "twisted: bisection is the smallest axis-aligned halving cut, an upper bound on the exact minimum")
	}
	if t.Routing == "dor" {
		s.Notes = append(s.Notes, "dor routing: one path per pair")
	}
	return s
}

// OCSSizing describes the optical circuit switches of a torus built from cubes.
type OCSSizing struct {
	// CubeSize is the cube edge; Cubes the cubes of the job's torus; SpareCubes the spares.
	CubeSize   int `json:"cube_size"`   // chips per cube edge
	Cubes      int `json:"cubes"`       // cubes of the job's torus
	SpareCubes int `json:"spare_cubes"` // spare cubes
	// OCSes is 3 x CubeSize^2: one per dimension and face position, joining the + face link
	// at that position of every cube to the - face link of the next (TPU v4: 48 for 4^3
	// cubes). Each has PortsPerOCS = 2 x (Cubes + SpareCubes) ports.
	OCSes       int `json:"ocses"`         // optical circuit switches
	PortsPerOCS int `json:"ports_per_ocs"` // ports of each
	// SwitchTime is how long a reconfiguration pauses the job, ps.
	SwitchTime sim.Time `json:"switch_time_ps"`
}

// MarshalJSON writes SwitchTime as a plain number of ps.
func (o OCSSizing) MarshalJSON() ([]byte, error) {
	type plain OCSSizing
	return json.Marshal(struct {
		plain
		SwitchTime int64 `json:"switch_time_ps"`
	}{plain(o), int64(o.SwitchTime)})
}

// BlastRadius rows of a torus (t valid, defaults applied):
//
//   - torus link: 1/6 of the torus bandwidth of each of the 2 chips it joins;
//   - torus chip: each neighbour loses its link(s) to it (1/6, or 2/6 across a dimension of
//     2, where both of a pair's links join the same chips); the chip's own work is lost
//     (with OCS its cube is swapped for a spare: Remap);
//   - OCS: 1/6 of the bandwidth of the 2 chips per cube it joins at its face position.
func (t Torus) blast() []Blast {
	distinct, share := 0, 1.0/6
	for _, k := range t.Dims {
		if k == 2 {
			distinct++
			share = 2.0 / 6
		} else {
			distinct += 2
		}
	}
	chipNote := "the chip's work is lost; without OCS the torus routes around the hole"
	if t.OCS {
		c := t.CubeSize
		chipNote = fmt.Sprintf("with OCS its cube of %d chips moves to a spare (Remap), pausing the job %v", c*c*c, t.OCSSwitchTime)
	}
	out := []Blast{
		{Element: BlastTorusLink, Lost: "chip torus bandwidth", Share: 1.0 / 6, Affected: 2, AffectedKind: "chips"},
		{Element: BlastTorusChip, Lost: "neighbour chip torus bandwidth", Share: share, Affected: distinct, AffectedKind: "chips", Note: chipNote},
	}
	if t.OCS {
		out = append(out, Blast{Element: BlastOCS, Lost: "chip torus bandwidth", Share: 1.0 / 6, Affected: 2 * t.cubes(), AffectedKind: "chips"})
	}
	return out
}
