package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/spf13/cobra"
)

func newTopoCmd(stdout io.Writer) *cobra.Command {
	var (
		c          topo.Clos
		link, flnk string
		hop        string
		oversub    []float64
		parallel   []int
		asJSON     bool
	)
	cmd := &cobra.Command{
		Use:   "topo [SCENARIO.yaml]",
		Short: "Print the sizing of a Clos fabric given on flags or in a scenario",
		Long: `Print hosts, switches per tier and plane, links, optics, bisection bandwidth, worst-case
switch hops and latency of a multi-plane Clos.

Examples:
  lockstep topo --planes 8 --radix 512 --link 100G --tiers 2
  lockstep topo --planes 1 --radix 64 --link 800G --tiers 3
  lockstep topo scenario.yaml --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if cmd.Flags().NFlag() > 0 && !(cmd.Flags().NFlag() == 1 && asJSON) {
					return badInput(fmt.Errorf("give either a scenario file or topology flags, not both"))
				}
				tc, err := scenario.LoadTopology(args[0])
				if err != nil {
					return badInput(err)
				}
				c = *tc
			} else {
				var err error
				if c.HostLink, err = sim.ParseRate(link); err != nil {
					return badInput(fmt.Errorf("--link: %w", err))
				}
				if flnk != "" {
					if c.FabricLink, err = sim.ParseRate(flnk); err != nil {
						return badInput(fmt.Errorf("--fabric-link: %w", err))
					}
				}
				if c.HopLatency, err = sim.ParseTime(hop); err != nil {
					return badInput(fmt.Errorf("--hop-latency: %w", err))
				}
				c.Oversubscription, c.ParallelLinks = oversub, parallel
			}
			l, err := c.Layout()
			if err != nil {
				return badInput(flagError(err))
			}
			sz := l.Sizing()
			if asJSON {
				out := struct {
					Config closJSON    `json:"config"`
					Sizing topo.Sizing `json:"sizing"`
				}{toClosJSON(l.Config()), sz}
				js, err := json.MarshalIndent(out, "", "  ")
				if err != nil {
					return runFailed(err)
				}
				fmt.Fprintln(stdout, string(js))
				return nil
			}
			printSizing(stdout, l.Config(), sz)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&c.Tiers, "tiers", 2, "switch tiers: 2 (T0, T1) or 3 (T0, T1, T2)")
	f.IntVar(&c.Planes, "planes", 1, "independent planes (NIC ports per host), 1..8")
	f.IntVar(&c.Radix, "radix", 64, "ports per switch (even, >= 4)")
	f.IntVar(&c.Hosts, "hosts", 0, "hosts to build (0 = the most the radix allows)")
	f.StringVar(&link, "link", "800G", "host link rate per NIC port (plane), e.g. 100G, 800Gbps")
	f.StringVar(&flnk, "fabric-link", "", "switch-to-switch link rate (default: --link)")
	f.StringVar(&hop, "hop-latency", "500ns", "per-link latency: propagation + switch forwarding")
	f.Float64SliceVar(&oversub, "oversub", nil, "downlink:uplink bandwidth ratio per tier, e.g. 3 or 1,2")
	f.IntSliceVar(&parallel, "parallel", nil, "parallel links per switch pair per level, e.g. 2 or 1,2")
	f.BoolVar(&asJSON, "json", false, "print the sizing as JSON")
	return cmd
}

// flagError renames a topology field error to the flag that sets the field, keeping the
// scenario path in parentheses: "--oversub (topology.clos.oversubscription[0]): ...".
func flagError(err error) error {
	var fe *topo.FieldError
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s", oneLine(err.Error()))
	}
	field, _, _ := strings.Cut(fe.Field, "[") // "oversubscription[0]" is set by --oversub
	flag, ok := closFlags[field]
	if !ok {
		return fmt.Errorf("topology.clos.%s: %s", fe.Field, oneLine(fe.Msg))
	}
	// Validate may join several errors; the first is enough on one line.
	return fmt.Errorf("%s (topology.clos.%s): %s", flag, fe.Field, oneLine(fe.Msg))
}

// closFlags maps each topology.clos field to the topo flag that sets it.
var closFlags = map[string]string{
	"host_link": "--link", "fabric_link": "--fabric-link", "hop_latency": "--hop-latency",
	"oversubscription": "--oversub", "parallel_links": "--parallel",
	"tiers": "--tiers", "planes": "--planes", "radix": "--radix", "hosts": "--hosts",
}

// closJSON is a Clos as `topo --json` prints it: the keys and value forms of the scenario's
// topology.clos, so the printed config can be pasted back into a scenario.
type closJSON struct {
	Tiers            int       `json:"tiers"`
	Planes           int       `json:"planes"`
	Radix            int       `json:"radix"`
	Hosts            int       `json:"hosts"`
	HostLink         sim.Rate  `json:"host_link"`
	FabricLink       sim.Rate  `json:"fabric_link"`
	HopLatency       sim.Time  `json:"hop_latency"`
	Oversubscription []float64 `json:"oversubscription"`
	ParallelLinks    []int     `json:"parallel_links"`
}

func toClosJSON(c topo.Clos) closJSON {
	return closJSON{
		Tiers: c.Tiers, Planes: c.Planes, Radix: c.Radix, Hosts: c.Hosts,
		HostLink: c.HostLink, FabricLink: c.FabricLink, HopLatency: c.HopLatency,
		Oversubscription: c.Oversubscription, ParallelLinks: c.ParallelLinks,
	}
}

// printSizing writes the sizing table.
func printSizing(w io.Writer, c topo.Clos, s topo.Sizing) {
	fmt.Fprintf(w, "Clos: %d tiers, %d plane(s), radix %d, host link %v, fabric link %v, hop latency %v\n\n",
		c.Tiers, c.Planes, c.Radix, c.HostLink, c.FabricLink, c.HopLatency)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	tiers := make([]string, len(s.SwitchesPerPlaneByTier))
	for i, n := range s.SwitchesPerPlaneByTier {
		tiers[i] = fmt.Sprintf("T%d %s", i, commas(n))
	}
	levels := []string{"host-T0", "T0-T1", "T1-T2"}
	var links []string
	for i, n := range s.LinksByLevel {
		if i < len(levels) {
			links = append(links, fmt.Sprintf("%s %s", levels[i], commas(n)))
		}
	}
	fmt.Fprintf(tw, "hosts\t%s\n", commas(s.Hosts))
	fmt.Fprintf(tw, "NIC bandwidth\t%v (%d x %v)\n", s.NICBandwidth, c.Planes, c.HostLink)
	fmt.Fprintf(tw, "switches per plane\t%s (%s)\n", commas(s.SwitchesPerPlane), strings.Join(tiers, ", "))
	fmt.Fprintf(tw, "switches\t%s\n", commas(s.Switches))
	fmt.Fprintf(tw, "links\t%s (%s)\n", commas(s.Links), strings.Join(links, ", "))
	fmt.Fprintf(tw, "optics\t%s (two per link)\n", commas(s.Optics))
	fmt.Fprintf(tw, "bisection bandwidth\t%s\n", gbpsStr(s.BisectionGbps))
	fmt.Fprintf(tw, "max switch hops\t%d\n", s.MaxSwitchHops)
	fmt.Fprintf(tw, "worst-case latency\t%v (unloaded, one %d B packet)\n", s.WorstCaseLatency, topo.SizingPacketBytes)
	tw.Flush()
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
