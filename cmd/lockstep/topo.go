package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// topoKinds are the values of --kind, in the order help lists them.
var topoKinds = []string{"clos", "fat_tree", "rail", "torus", "mesh"}

// topoOpts holds the fabric flags of the topo command (one fabric).
type topoOpts struct {
	kind string
	// clos, fat_tree, rail
	tiers, planes, radix, hosts, k int
	link, fabricLink, hop          string
	oversub                        []float64
	parallel                       []int
	// rail
	servers, gpusPerServer int
	railOnly               bool
	// scale-up domain (clos, fat_tree, rail)
	suGPUs, suLinks   int
	suRate, suLatency string
	// torus, mesh
	dims, routing, ocsTime, hostLink string
	twisted, ocs                     bool
	cubeSize, spares                 int
	nodes, portsPerNode              int
}

// addTopoFlags defines the fabric flags on f, writing into o.
func addTopoFlags(f *pflag.FlagSet, o *topoOpts) {
	f.StringVar(&o.kind, "kind", "clos", "topology kind: "+strings.Join(topoKinds, ", "))
	f.IntVar(&o.tiers, "tiers", 2, "clos: switch tiers, 2 (T0, T1) or 3 (T0, T1, T2)")
	f.IntVar(&o.planes, "planes", 1, "clos, fat_tree, rail: independent planes (NIC ports per host), 1..8")
	f.IntVar(&o.radix, "radix", 64, "clos, rail: ports per switch (even, >= 4)")
	f.IntVar(&o.hosts, "hosts", 0, "clos: hosts to build (0 = the most the radix allows)")
	f.IntVar(&o.k, "k", 0, "fat_tree: switch radix k (k pods, k^3/4 hosts), e.g. 64")
	f.StringVar(&o.link, "link", "800G", "host link rate per NIC port (torus, mesh: each chip-to-chip link), e.g. 100G, 800Gbps")
	f.StringVar(&o.fabricLink, "fabric-link", "", "clos, fat_tree, rail: switch-to-switch link rate (default: --link)")
	f.StringVar(&o.hop, "hop-latency", "500ns", "per-link latency: propagation + forwarding at the next switch or chip")
	f.Float64SliceVar(&o.oversub, "oversub", nil, "clos: downlink:uplink bandwidth ratio per tier, e.g. 3 or 1,2; fat_tree: the T0's, e.g. 3")
	f.IntSliceVar(&o.parallel, "parallel", nil, "clos: parallel links per switch pair per level, e.g. 2 or 1,2")
	f.IntVar(&o.servers, "servers", 0, "rail: number of servers")
	f.IntVar(&o.gpusPerServer, "gpus-per-server", 8, "rail: GPUs (rails) per server: 8 HGX, 4 GB200 tray")
	f.BoolVar(&o.railOnly, "rail-only", false, "rail: no spine between rails (cross-rail traffic goes over scale-up)")
	f.IntVar(&o.suGPUs, "scale-up-gpus", 0, "clos, fat_tree, rail: scale-up (NVLink) domain size, e.g. 8 or 72 (0 = none)")
	f.StringVar(&o.suRate, "scale-up-rate", "", "scale-up bandwidth per GPU per direction, e.g. 3.6T (450 GB/s), 7.2T (900 GB/s)")
	f.StringVar(&o.suLatency, "scale-up-latency", "", "scale-up GPU-to-GPU latency (default 500ns)")
	f.IntVar(&o.suLinks, "scale-up-links", 0, "NVLinks per GPU (default 18)")
	f.StringVar(&o.dims, "dims", "", "torus: shape k1xk2xk3, e.g. 16x20x28")
	f.BoolVar(&o.twisted, "twisted", false, "torus: twist the wrap-around links of a k x k x 2k or k x 2k x 2k torus (TPU v4)")
	f.StringVar(&o.routing, "routing", "", "torus: minimal (default: every minimal next hop) or dor (dimension order)")
	f.BoolVar(&o.ocs, "ocs", false, "torus: build from cubes joined by optical circuit switches")
	f.IntVar(&o.cubeSize, "cube-size", 0, "torus with --ocs: cube edge (default 4)")
	f.IntVar(&o.spares, "spare-cubes", 0, "torus with --ocs: spare cubes")
	f.StringVar(&o.ocsTime, "ocs-switch-time", "", "torus with --ocs: reconfiguration pause (default 10ms)")
	f.StringVar(&o.hostLink, "host-link", "", "torus, mesh: chip-to-router link rate (default: the sum of the chip's links)")
	f.IntVar(&o.nodes, "nodes", 0, "mesh: number of nodes")
	f.IntVar(&o.portsPerNode, "ports-per-node", 0, "mesh: mesh ports per node, a multiple of nodes-1 (default nodes-1)")
}

// kindFlags maps each kind to its fields' flags: YAML key (without list index) -> flag. A flag
// set on the command line must be one of its kind's.
var kindFlags = map[string]map[string]string{
	"clos": {"tiers": "--tiers", "planes": "--planes", "radix": "--radix", "hosts": "--hosts", "host_link": "--link", "fabric_link": "--fabric-link",
		"hop_latency": "--hop-latency", "oversubscription": "--oversub", "parallel_links": "--parallel"},
	"fat_tree": {"k": "--k", "planes": "--planes", "host_link": "--link", "fabric_link": "--fabric-link", "hop_latency": "--hop-latency",
		"oversubscription": "--oversub"},
	"rail": {"servers": "--servers", "gpus_per_server": "--gpus-per-server", "planes": "--planes", "radix": "--radix", "host_link": "--link",
		"fabric_link": "--fabric-link", "hop_latency": "--hop-latency", "rail_only": "--rail-only"},
	"torus": {"dims": "--dims", "twisted": "--twisted", "link_rate": "--link", "host_link": "--host-link", "hop_latency": "--hop-latency",
		"routing": "--routing", "ocs": "--ocs", "cube_size": "--cube-size", "spare_cubes": "--spare-cubes", "ocs_switch_time": "--ocs-switch-time"},
	"mesh": {"nodes": "--nodes", "link_rate": "--link", "host_link": "--host-link", "hop_latency": "--hop-latency", "ports_per_node": "--ports-per-node"},
}

// scaleUpFlags are the scale-up fields' flags, for the kinds that take a domain.
var scaleUpFlags = map[string]string{"scale_up.gpus": "--scale-up-gpus", "scale_up.rate": "--scale-up-rate",
	"scale_up.latency": "--scale-up-latency", "scale_up.links_per_gpu": "--scale-up-links"}

// commonFlags are the flags of the command itself, not of a fabric.
var commonFlags = []string{"kind", "json", "compare"}

// allowed reports whether flag name (without dashes) belongs to kind.
func allowed(kind, name string) bool {
	if slices.Contains(commonFlags, name) {
		return true
	}
	for _, fl := range kindFlags[kind] {
		if fl == "--"+name {
			return true
		}
	}
	if kind == "clos" || kind == "fat_tree" || kind == "rail" {
		for _, fl := range scaleUpFlags {
			if fl == "--"+name {
				return true
			}
		}
	}
	return false
}

// kindsOf returns the kinds flag name belongs to, for the error message.
func kindsOf(name string) []string {
	var out []string
	for _, k := range topoKinds {
		if allowed(k, name) {
			out = append(out, k)
		}
	}
	return out
}

// spec checks the flags set in fs against the kind and builds its configuration. Errors name
// the flag, the value and what is allowed.
func (o *topoOpts) spec(fs *pflag.FlagSet) (topo.Spec, error) {
	if !slices.Contains(topoKinds, o.kind) {
		return nil, fmt.Errorf("--kind: %q is not a topology kind; allowed %s", o.kind, strings.Join(topoKinds, ", "))
	}
	var stray error
	fs.Visit(func(f *pflag.Flag) {
		if stray == nil && !allowed(o.kind, f.Name) {
			var names []string
			for _, fl := range kindFlags[o.kind] {
				names = append(names, fl)
			}
			slices.Sort(names)
			stray = fmt.Errorf("--%s is a flag of --kind %s, not %s; %s takes %s", f.Name, strings.Join(kindsOf(f.Name), " or "), o.kind, o.kind, strings.Join(names, ", "))
		}
	})
	if stray != nil {
		return nil, stray
	}
	rate := func(flag, s string) (sim.Rate, error) {
		if s == "" {
			return 0, nil
		}
		r, err := sim.ParseRate(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", flag, err)
		}
		if r == 0 {
			// 0 would read as "not given" below and be reported as missing.
			return 0, fmt.Errorf("%s: rate %q must be positive, such as \"400Gbps\"", flag, s)
		}
		return r, nil
	}
	dur := func(flag, s string) (sim.Time, error) {
		if s == "" {
			return 0, nil
		}
		d, err := sim.ParseTime(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", flag, err)
		}
		return d, nil
	}
	link, err := rate("--link", o.link)
	if err != nil {
		return nil, err
	}
	flnk, err := rate("--fabric-link", o.fabricLink)
	if err != nil {
		return nil, err
	}
	hop, err := dur("--hop-latency", o.hop)
	if err != nil {
		return nil, err
	}
	var su *topo.ScaleUp
	if o.suGPUs != 0 || o.suRate != "" || o.suLatency != "" || o.suLinks != 0 {
		su = &topo.ScaleUp{GPUs: o.suGPUs, LinksPerGPU: o.suLinks}
		if su.Rate, err = rate("--scale-up-rate", o.suRate); err != nil {
			return nil, err
		}
		if su.Latency, err = dur("--scale-up-latency", o.suLatency); err != nil {
			return nil, err
		}
	}
	switch o.kind {
	case "clos":
		return topo.Clos{Tiers: o.tiers, Planes: o.planes, Radix: o.radix, Hosts: o.hosts, HostLink: link, FabricLink: flnk, HopLatency: hop,
			Oversubscription: o.oversub, ParallelLinks: o.parallel, ScaleUp: su}, nil
	case "fat_tree":
		f := topo.FatTree{K: o.k, Planes: o.planes, HostLink: link, FabricLink: flnk, HopLatency: hop, ScaleUp: su}
		switch len(o.oversub) {
		case 0:
		case 1:
			f.Oversubscription = o.oversub[0]
		default:
			return nil, fmt.Errorf("--oversub: %d values; a fat_tree takes one, the T0's ratio", len(o.oversub))
		}
		return f, nil
	case "rail":
		return topo.Rail{Servers: o.servers, GPUsPerServer: o.gpusPerServer, Planes: o.planes, Radix: o.radix, HostLink: link, FabricLink: flnk,
			HopLatency: hop, RailOnly: o.railOnly, ScaleUp: su}, nil
	case "torus":
		t := topo.Torus{Twisted: o.twisted, LinkRate: link, HopLatency: hop, Routing: o.routing, OCS: o.ocs, CubeSize: o.cubeSize, SpareCubes: o.spares}
		if o.dims != "" {
			if t.Dims, err = topo.ParseTorusDims(o.dims); err != nil {
				return nil, fmt.Errorf("--dims: %w", err)
			}
		}
		if t.HostLink, err = rate("--host-link", o.hostLink); err != nil {
			return nil, err
		}
		if t.OCSSwitchTime, err = dur("--ocs-switch-time", o.ocsTime); err != nil {
			return nil, err
		}
		return t, nil
	default: // mesh
		m := topo.Mesh{Nodes: o.nodes, LinkRate: link, HopLatency: hop, PortsPerNode: o.portsPerNode}
		if m.HostLink, err = rate("--host-link", o.hostLink); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// kindTitles name each kind in headings.
var kindTitles = map[string]string{"clos": "Clos", "fat_tree": "Fat-tree", "rail": "Rail-optimised", "torus": "Torus", "mesh": "Full mesh", "graph": "Graph"}

// fabric is one sized fabric: its effective configuration, topology and label.
type fabric struct {
	kind   string
	label  string
	config any // the effective configuration, in the scenario's keys
	topo   topo.Topology
}

// sizeSpec validates s and returns its fabric. Errors name the flag of the bad field.
func sizeSpec(s topo.Spec) (fabric, error) {
	t, err := s.Topology()
	if err != nil {
		return fabric{}, flagError(s.Kind(), err)
	}
	f := fabric{kind: s.Kind(), topo: t}
	switch c := s.(type) {
	case topo.Clos:
		eff := t.(*topo.Layout).Config()
		f.config = toClosJSON(eff)
		f.label = fmt.Sprintf("%d-tier, %d plane(s), radix %d, %v", eff.Tiers, eff.Planes, eff.Radix, eff.HostLink)
	case topo.FatTree:
		eff := t.(*topo.Layout).Config()
		c.Planes, c.FabricLink, c.HopLatency, c.ScaleUp = eff.Planes, eff.FabricLink, eff.HopLatency, eff.ScaleUp
		f.config = c
		f.label = fmt.Sprintf("k=%d, %d plane(s), %v", c.K, eff.Planes, eff.HostLink)
	case topo.Rail:
		eff := c.WithDefaults()
		f.config = eff
		f.label = fmt.Sprintf("%d servers x %d GPUs, %d plane(s), radix %d, %v", eff.Servers, eff.GPUsPerServer, eff.Planes, eff.Radix, eff.HostLink)
		if eff.RailOnly {
			f.label += ", rail-only"
		}
	case topo.Torus:
		eff := c.WithDefaults()
		f.config = eff
		f.label = fmt.Sprintf("%v, %v links", eff.Dims, eff.LinkRate)
		if eff.Twisted {
			f.label += ", twisted"
		}
		if eff.Routing == "dor" {
			f.label += ", dimension-order routing"
		}
		if eff.OCS {
			f.label += ", OCS"
		}
	case topo.Mesh:
		eff := c.WithDefaults()
		f.config = eff
		f.label = fmt.Sprintf("%d nodes, %v links", eff.Nodes, eff.LinkRate)
	case scenario.GraphFile:
		f.config = c
		f.label = fmt.Sprintf("%s file %s", c.Format, c.File)
	}
	return f, nil
}

func newTopoCmd(stdout io.Writer) *cobra.Command {
	var (
		o       topoOpts
		asJSON  bool
		compare []string
	)
	cmd := &cobra.Command{
		Use:   "topo [SCENARIO.yaml]",
		Short: "Print the sizing of a fabric given on flags or in a scenario",
		Long: `Print hosts, switches per tier and plane, links, optics, bisection bandwidth, diameter and
mean hop count, worst-case latency and the blast radius of single failures of a fabric:
a multi-plane Clos (--kind clos, the default), a k-ary fat-tree (fat_tree), a rail-optimised
fabric (rail), a 3D torus (torus) or a full mesh (mesh). Hop counts are fabric hops: links
between switches (or chip routers), host links excluded.

--compare prints several fabrics side by side: each SPEC is this command's flags without
the dashes, as key=value words (a bare word sets a boolean flag), and specs are separated
by ';' or given in repeated --compare flags. --json prints {kind, label, config, sizing,
blast_radius} for one fabric, {"fabrics": [...]} for a comparison; config uses the scenario's
topology keys.

Examples:
  lockstep topo --planes 8 --radix 512 --link 100G --tiers 2
  lockstep topo --planes 1 --radix 64 --link 800G --tiers 3
  lockstep topo --kind fat_tree --k 64 --link 800G
  lockstep topo --kind rail --servers 128 --gpus-per-server 8 --rail-only --radix 128
  lockstep topo --kind torus --dims 16x20x28 --link 400G
  lockstep topo --kind torus --dims 4x4x8 --twisted --ocs --spare-cubes 1
  lockstep topo --kind mesh --nodes 64 --link 100G
  lockstep topo --compare "planes=8 radix=512 link=100G; tiers=3 radix=64; kind=torus dims=32x64x64 twisted"
  lockstep topo scenario.yaml --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs := cmd.Flags()
			if len(compare) > 0 {
				if len(args) == 1 {
					return badInput(fmt.Errorf("give either a scenario file or --compare, not both"))
				}
				var stray []string
				fs.Visit(func(f *pflag.Flag) {
					if f.Name != "compare" && f.Name != "json" {
						stray = append(stray, "--"+f.Name)
					}
				})
				if len(stray) > 0 {
					return badInput(fmt.Errorf("%s: with --compare each fabric's flags go in its SPEC (e.g. --compare \"kind=torus dims=16x16x16\")", strings.Join(stray, ", ")))
				}
				fabs, err := compareSpecs(compare)
				if err != nil {
					return badInput(err)
				}
				return printFabrics(stdout, fabs, asJSON)
			}
			var spec topo.Spec
			if len(args) == 1 {
				if fs.NFlag() > 0 && !(fs.NFlag() == 1 && asJSON) {
					return badInput(fmt.Errorf("give either a scenario file or topology flags, not both"))
				}
				tc, err := scenario.LoadTopology(args[0])
				if err != nil {
					return badInput(err)
				}
				spec = tc
			} else {
				var err error
				if spec, err = o.spec(fs); err != nil {
					return badInput(err)
				}
			}
			f, err := sizeSpec(spec)
			if err != nil {
				return badInput(err)
			}
			return printFabrics(stdout, []fabric{f}, asJSON)
		},
	}
	f := cmd.Flags()
	addTopoFlags(f, &o)
	f.BoolVar(&asJSON, "json", false, "print the configuration, sizing and blast radius as JSON")
	f.StringArrayVar(&compare, "compare", nil, "compare fabrics: SPEC;SPEC;... where SPEC is flags without dashes, e.g. \"kind=torus dims=16x16x16\"")
	return cmd
}

// compareSpecs parses and sizes every SPEC of the --compare values.
func compareSpecs(values []string) ([]fabric, error) {
	var fabs []fabric
	n := 0
	for _, v := range values {
		for _, spec := range strings.Split(v, ";") {
			spec = strings.TrimSpace(spec)
			if spec == "" {
				continue
			}
			n++
			var o topoOpts
			fs := pflag.NewFlagSet("compare", pflag.ContinueOnError)
			fs.SetOutput(io.Discard)
			addTopoFlags(fs, &o)
			var argv []string
			for _, w := range strings.Fields(spec) {
				argv = append(argv, "--"+strings.TrimLeft(w, "-"))
			}
			wrap := func(err error) error { return fmt.Errorf("--compare fabric %d (%q): %w", n, spec, err) }
			if err := fs.Parse(argv); err != nil {
				return nil, wrap(flagValueError(nil, err))
			}
			if fs.NArg() > 0 {
				return nil, wrap(fmt.Errorf("%q is not key=value", fs.Arg(0)))
			}
			s, err := o.spec(fs)
			if err != nil {
				return nil, wrap(err)
			}
			f, err := sizeSpec(s)
			if err != nil {
				return nil, wrap(err)
			}
			fabs = append(fabs, f)
		}
	}
	if len(fabs) == 0 {
		return nil, fmt.Errorf("--compare: no fabric given; want SPEC;SPEC, e.g. \"tiers=2 planes=8 radix=512 link=100G; kind=torus dims=32x64x64\"")
	}
	return fabs, nil
}

// flagError renames a topology field error to the flag that sets the field, keeping the
// scenario path in parentheses: "--oversub (topology.clos.oversubscription[0]): ...".
func flagError(kind string, err error) error {
	var fe *topo.FieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s", oneLine(err.Error()))
	}
	field, _, _ := strings.Cut(fe.Field, "[") // "oversubscription[0]" is set by --oversub
	flag, ok := kindFlags[kind][field]
	if !ok {
		flag, ok = scaleUpFlags[field]
	}
	if !ok {
		return fmt.Errorf("topology.%s.%s: %s", kind, fe.Field, oneLine(fe.Msg))
	}
	// Validate may join several errors; the first is enough on one line.
	return fmt.Errorf("%s (topology.%s.%s): %s", flag, kind, fe.Field, oneLine(fe.Msg))
}

// closJSON is a Clos as `topo --json` prints it: the keys and value forms of the scenario's
// topology.clos, so the printed config can be pasted back into a scenario.
type closJSON struct {
	Tiers            int           `json:"tiers"`
	Planes           int           `json:"planes"`
	Radix            int           `json:"radix"`
	Hosts            int           `json:"hosts"`
	HostLink         sim.Rate      `json:"host_link"`
	FabricLink       sim.Rate      `json:"fabric_link"`
	HopLatency       sim.Time      `json:"hop_latency"`
	Oversubscription []float64     `json:"oversubscription"`
	ParallelLinks    []int         `json:"parallel_links"`
	ScaleUp          *topo.ScaleUp `json:"scale_up,omitempty"`
}

func toClosJSON(c topo.Clos) closJSON {
	return closJSON{
		Tiers: c.Tiers, Planes: c.Planes, Radix: c.Radix, Hosts: c.Hosts,
		HostLink: c.HostLink, FabricLink: c.FabricLink, HopLatency: c.HopLatency,
		Oversubscription: c.Oversubscription, ParallelLinks: c.ParallelLinks, ScaleUp: c.ScaleUp,
	}
}

// fabricJSON is one fabric as --json prints it.
type fabricJSON struct {
	Kind        string       `json:"kind"`
	Label       string       `json:"label"`
	Config      any          `json:"config"`
	Sizing      topo.Sizing  `json:"sizing"`
	BlastRadius []topo.Blast `json:"blast_radius"`
}

// printFabrics writes one fabric's table, or several side by side, or JSON (an object for
// one fabric, {"fabrics": [...]} for a comparison).
func printFabrics(w io.Writer, fabs []fabric, asJSON bool) error {
	if asJSON {
		out := make([]fabricJSON, len(fabs))
		for i, f := range fabs {
			out[i] = fabricJSON{f.kind, f.label, f.config, f.topo.Sizing(), f.topo.BlastRadius()}
		}
		var v any = out[0]
		if len(fabs) > 1 {
			v = struct {
				Fabrics []fabricJSON `json:"fabrics"`
			}{out}
		}
		js, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return runFailed(err)
		}
		fmt.Fprintln(w, string(js))
		return nil
	}
	if len(fabs) == 1 {
		printSizing(w, fabs[0])
		return nil
	}
	printFabricComparison(w, fabs)
	return nil
}

// printSizing writes one fabric's sizing table and blast radius.
func printSizing(w io.Writer, f fabric) {
	s, p := f.topo.Sizing(), f.topo.Params()
	if c, ok := f.config.(closJSON); ok { // the line the Clos always had
		fmt.Fprintf(w, "Clos: %d tiers, %d plane(s), radix %d, host link %v, fabric link %v, hop latency %v\n\n",
			c.Tiers, c.Planes, c.Radix, c.HostLink, c.FabricLink, c.HopLatency)
	} else {
		fmt.Fprintf(w, "%s: %s, hop latency %v\n\n", kindTitles[f.kind], f.label, p.HopLatency)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range sizingRows(s, p) {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	for _, n := range s.Notes {
		fmt.Fprintf(tw, "note\t%s\n", n)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nblast radius of one failure:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  element\tloses\tof\taffected\t")
	for _, b := range f.topo.BlastRadius() {
		note := ""
		if b.Note != "" {
			note = "(" + b.Note + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s %s\t%s\n", b.Element, percent(b.Share), b.Lost, commas(b.Affected), b.AffectedKind, note)
	}
	tw.Flush()
}

// sizingRows returns the label and value of each sizing row.
func sizingRows(s topo.Sizing, p topo.Params) [][2]string {
	var rows [][2]string
	add := func(label, format string, args ...any) {
		rows = append(rows, [2]string{label, fmt.Sprintf(format, args...)})
	}
	add("hosts", "%s", commas(s.Hosts))
	add("GPUs", "%s", commas(s.GPUs))
	add("NIC bandwidth", "%v (%d x %v)", s.NICBandwidth, s.Planes, p.HostLink)
	if s.Switches > 0 {
		tiers := make([]string, len(s.SwitchesPerPlaneByTier))
		for i, n := range s.SwitchesPerPlaneByTier {
			tiers[i] = fmt.Sprintf("T%d %s", i, commas(n))
		}
		add("switches per plane", "%s (%s)", commas(s.SwitchesPerPlane), strings.Join(tiers, ", "))
	}
	add("switches", "%s", commas(s.Switches))
	if s.Routers > 0 {
		add("chip routers", "%s (one per chip; not switches to buy)", commas(s.Routers))
	}
	var links []string
	for i, n := range s.LinksByLevel {
		if i < len(s.LevelNames) {
			links = append(links, fmt.Sprintf("%s %s", s.LevelNames[i], commas(n)))
		}
	}
	add("links", "%s (%s)", commas(s.Links), strings.Join(links, ", "))
	add("optical links", "%s", commas(s.OpticalLinks))
	add("optics", "%s (two per optical link; %s 800G modules)", commas(s.Optics), commas(s.OpticsModules))
	bis := gbpsStr(s.BisectionGbps)
	if s.BisectionLinks > 0 {
		bis += fmt.Sprintf(" (%s links cut)", commas(s.BisectionLinks))
	}
	add("bisection bandwidth", "%s", bis)
	add("diameter", "%d fabric hops", s.DiameterHops)
	add("mean hops", "%s (all ordered host pairs, self included)", strconv.FormatFloat(s.MeanHops, 'f', -1, 64))
	add("max switch hops", "%d", s.MaxSwitchHops)
	add("worst-case latency", "%v (unloaded, one %d B packet)", s.WorstCaseLatency, topo.SizingPacketBytes)
	if su := s.ScaleUp; su != nil {
		add("scale-up domain", "%d GPUs at %v per GPU per direction, %s domains, %s TB/s per domain",
			su.GPUsPerDomain, su.GPURate, commas(su.Domains), strconv.FormatFloat(su.DomainTBps, 'f', -1, 64))
	}
	if o := s.OCS; o != nil {
		add("OCS", "%d OCSes of %d ports, %d cubes of %d^3 chips + %d spare, reconfiguration %v",
			o.OCSes, o.PortsPerOCS, o.Cubes, o.CubeSize, o.SpareCubes, o.SwitchTime)
	}
	return rows
}

// printFabricComparison writes several fabrics side by side, one column each.
func printFabricComparison(w io.Writer, fabs []fabric) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"fabric"}
	for i, f := range fabs {
		head = append(head, fmt.Sprintf("[%d] %s", i+1, f.kind))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	var table [][][2]string
	for _, f := range fabs {
		table = append(table, sizingRows(f.topo.Sizing(), f.topo.Params()))
	}
	byLabel := func(rows [][2]string, label string) string {
		for _, r := range rows {
			if r[0] == label {
				v, _, _ := strings.Cut(r[1], " (")
				return v
			}
		}
		return "-"
	}
	for _, label := range []string{"hosts", "NIC bandwidth", "switches", "chip routers", "links", "optical links", "optics",
		"bisection bandwidth", "diameter", "mean hops", "worst-case latency", "scale-up domain", "OCS"} {
		row := []string{label}
		found := false
		for _, rows := range table {
			v := byLabel(rows, label)
			found = found || v != "-"
			row = append(row, v)
		}
		if found {
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
	}
	row := []string{"800G modules"}
	for _, f := range fabs {
		row = append(row, commas(f.topo.Sizing().OpticsModules))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	tw.Flush()
	fmt.Fprintln(w)
	for i, f := range fabs {
		fmt.Fprintf(w, "[%d] %s: %s\n", i+1, kindTitles[f.kind], f.label)
	}
}

// percent formats a share as a percentage: 0.00390625 -> "0.39%", 0.125 -> "12.5%".
func percent(share float64) string {
	return strconv.FormatFloat(share*100, 'g', 3, 64) + "%"
}

// commas formats n with thousands separators: 131072 -> "131,072".
func commas(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// gbpsStr formats a rate given in Gb/s with a readable unit: "400Gbps", "51.2Tbps",
// "13421.773Pbps".
func gbpsStr(g float64) string {
	switch {
	case g >= 1e6:
		return strconv.FormatFloat(g/1e6, 'f', -1, 64) + "Pbps"
	case g >= 1e3:
		return strconv.FormatFloat(g/1e3, 'f', -1, 64) + "Tbps"
	default:
		return strconv.FormatFloat(g, 'f', -1, 64) + "Gbps"
	}
}
