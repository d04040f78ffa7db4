package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/traffic/htsim"
	"github.com/lockstepsim/lockstep/traffic/ns3"
	"github.com/spf13/cobra"
)

// importOpts are lockstep import's flags.
type importOpts struct {
	format, topology, transport, out, name, hostLink string
}

func newImportCmd(stdout io.Writer) *cobra.Command {
	var o importOpts
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Write a lockstep scenario that runs another simulator's input (htsim .cm, ns-3 flow.txt)",
		Long: `Read a traffic file written for another simulator and write an equivalent lockstep
scenario (docs/importers.md), which 'lockstep run' then runs:

  --format htsim   an htsim connection matrix (.cm): connections, triggers and failures.
                   The topology is the smallest k-ary fat_tree with the file's Nodes hosts
                   (host links --host-link); failure lines become faults on its switches.
  --format ns3     an ns-3 HPCC flow.txt; with --topology topology.txt the topology is that
                   file (topology.graph), its error rates loss faults; without it, the
                   smallest fat_tree with enough hosts.

The scenario references the files (paths relative to the scenario's folder), so triggers
and the file's own order are kept. It is resolved before it is written: a bad line fails
here with the file, line and column (exit 2).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			y, err := importScenario(args[0], o)
			if err != nil {
				return badInput(err)
			}
			if o.out == "" {
				_, err = stdout.Write(y)
				return err
			}
			if err := os.WriteFile(o.out, y, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %s\n", o.out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", "", "the file's format: htsim or ns3 (default: htsim for a .cm file)")
	f.StringVar(&o.topology, "topology", "", "ns-3 topology.txt for --format ns3 (topology kind graph)")
	f.StringVar(&o.transport, "transport", "mrc", "transport kind of the scenario")
	f.StringVarP(&o.out, "output", "o", "", "scenario file to write (default: standard output, paths relative to the working directory)")
	f.StringVar(&o.name, "name", "", "scenario name (default: the file's base name)")
	f.StringVar(&o.hostLink, "host-link", "100G", "host link rate of a generated fat_tree, e.g. 100G, 400Gbps")
	return cmd
}

// importScenario reads file and returns the scenario YAML, checked by resolving it in the
// output's folder.
func importScenario(file string, o importOpts) ([]byte, error) {
	if o.format == "" && strings.EqualFold(filepath.Ext(file), ".cm") {
		o.format = "htsim"
	}
	outDir := "."
	if o.out != "" {
		outDir = filepath.Dir(o.out)
	}
	rel := func(p string) (string, error) {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		dir, err := filepath.Abs(outDir)
		if err != nil {
			return "", err
		}
		if r, err := filepath.Rel(dir, abs); err == nil {
			return r, nil
		}
		return abs, nil
	}
	name := o.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# lockstep import --format %s %s\nname: %q\n", o.format, file, name)
	var hosts int
	switch o.format {
	case "htsim":
		if o.topology != "" {
			return nil, errors.New("--topology: an htsim connection matrix runs on a generated fat_tree; --topology is for --format ns3")
		}
		m, err := readHTSim(file)
		if err != nil {
			return nil, err
		}
		hosts = m.Nodes // failure lines become faults as the scenario resolves
	case "ns3":
		if o.topology != "" {
			t, err := readNS3Topology(o.topology)
			if err != nil {
				return nil, err
			}
			hosts = t.Nodes - len(t.Switches)
		} else {
			n, err := ns3Hosts(file)
			if err != nil {
				return nil, err
			}
			hosts = n
		}
	case "":
		return nil, errors.New("--format: missing; allowed htsim, ns3")
	default:
		return nil, fmt.Errorf("--format: %q is not an importer; allowed htsim, ns3", o.format)
	}
	if o.topology != "" {
		p, err := rel(o.topology)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "topology: {graph: {format: ns3, file: %q}}\n", p)
	} else {
		fmt.Fprintf(&b, "topology: {fat_tree: {k: %d, host_link: %q}}\n", fatTreeK(hosts), o.hostLink)
	}
	fmt.Fprintf(&b, "transport: {kind: %q}\n", o.transport)
	p, err := rel(file)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&b, "traffic: [{pattern: file, format: %s, file: %q}]\n", o.format, p)
	y := []byte(b.String())
	if _, err := scenario.ParseIn(y, outDir); err != nil {
		return nil, err
	}
	return y, nil
}

// fatTreeK returns the smallest even k >= 4 whose fat-tree has at least hosts hosts (k^3/4).
func fatTreeK(hosts int) int {
	k := 4
	for k*k*k/4 < hosts && k < 1<<12 {
		k += 2
	}
	return k
}

func readHTSim(file string) (*htsim.Matrix, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return htsim.Read(f, file)
}

func readNS3Topology(file string) (*ns3.Topology, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ns3.ReadTopology(f, file)
}

// ns3Hosts returns the hosts a flow.txt needs: its largest node id plus one.
func ns3Hosts(file string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	flows, err := ns3.ReadFlows(f, file, 0)
	if err != nil {
		return 0, err
	}
	n := 2
	for _, x := range flows {
		n = max(n, x.Src+1, x.Dst+1)
	}
	return n, nil
}
