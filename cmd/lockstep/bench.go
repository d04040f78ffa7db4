package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/spf13/cobra"
)

func newBenchCmd(stdout io.Writer) *cobra.Command {
	var (
		list    bool
		cpuProf string
	)
	cmd := &cobra.Command{
		Use:   "bench [PRESET...]",
		Short: "Run the embedded benchmark scenarios and report speed and memory",
		Long: `Run embedded benchmark scenarios (default: perm-1024) and print, for each, the wall time,
events per second, packets per second, the process's peak memory (max RSS) and the FCT
percentiles. Speed is measured here and with go test -bench, never asserted in tests.

Presets: perm-1024 (3-tier k=16 fat-tree, 1,024-flow permutation of 2 MB, MRC), perm-8192
(the same on k=32), and the MRC stress cases incast-255 (255 -> 1 of 100 KB; ideal 2,121 us)
and incast-1023-2mb (1,023 -> 1 of 2 MB; ideal 169 ms), whose FCT max is the incast's JCT,
ib-incast-1023 (InfiniBand with credits, 1,023 -> 1 of 100 KB: lossless; payload at line rate
8,184 us);
the training presets train-405b-8k, train-405b-16k (Llama-3-405B as Meta ran it, Llama 3 paper
Table 4: 43% and 41% BF16 MFU), train-405b-131k (the flow tier at 131,072 GPUs with 16
microbatches, MRC) and train-405b-131k-roce (the same under RoCE), and train-dsv3-2k and
train-dsv3-2k-roce (DeepSeek-V3 with PP 16 and EP 32 on 2,048 GPUs, MRC and RoCE), which print
the step time and MFU instead of FCTs, with the flow engine's rate recomputations (recomputes),
how many of them were full (the rest incremental) and the flows the incremental ones refilled.
The flow counts are of the flows simulated: under MRC the flow engine simulates one of each
set of symmetric replicas (folding, docs/flow-agreement.md "Speed"), with the same results.
agree runs the packet-vs-flow agreement suite for collectives on 64 hosts
(docs/flow-agreement.md) and fails when a case leaves its tolerance. transports runs the
transport comparison (MRC, UEC, RoCE, Ethernet with adaptive routing, InfiniBand with and
without it, every default) on a 128-host Clos and prints its markdown tables
(docs/transport-compare.md). Run one preset per process
for a clean peak-memory figure.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				for _, n := range scenario.Presets() {
					fmt.Fprintln(stdout, n)
				}
				fmt.Fprintln(stdout, "agree")      // the agreement suite (agree.go), no preset
				fmt.Fprintln(stdout, "transports") // the transport comparison (transports.go)
				return nil
			}
			if len(args) == 0 {
				args = []string{"perm-1024"}
			}
			if cpuProf != "" {
				f, err := os.Create(cpuProf)
				if err != nil {
					return badInput(fmt.Errorf("--cpuprofile: %w", err))
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return runFailed(fmt.Errorf("--cpuprofile: %w", err))
				}
				defer pprof.StopCPUProfile()
			}
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
			header := false
			for _, name := range args {
				if name == "agree" {
					tw.Flush()
					if err := benchAgree(stdout); err != nil {
						return err
					}
					header = false
					continue
				}
				if name == "transports" {
					tw.Flush()
					if err := benchTransports(stdout); err != nil {
						return err
					}
					header = false
					continue
				}
				sc, err := scenario.Preset(name)
				if err != nil {
					return badInput(err)
				}
				res, err := runner.Run(sc)
				if err != nil {
					return runFailed(fmt.Errorf("%s: %w", name, err))
				}
				s := &res.Summary
				wall := res.Wall.Seconds()
				if t := s.Training; t != nil {
					// A training preset: the step and its MFU are the figures to compare.
					tw.Flush()
					fs := trainingFlowStats(res)
					fmt.Fprintln(tw, "preset\tGPUs\tengine\ttransport\twall s\tevents\tflows\trecomputes\tfull\trefilled\tpeak RSS MB\tstep ms\tMFU %\t")
					fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t%d\t%d\t%d\t%d\t%d\t%.0f\t%.1f\t%.1f\t\n", name, t.GPUs, s.Engine, sc.Transport.Kind,
						wall, s.Events, fs.FlowsAdded, fs.Recomputes, fs.FullRecomputes, fs.Refilled, peakRSSMB(), t.StepTimeUs/1e3, 100*t.MFU)
					tw.Flush()
					header = false
					continue
				}
				if !header {
					fmt.Fprintln(tw, "preset\thosts\tflows\twall s\tevents\tevents/s\tpackets/s\tpeak RSS MB\tFCT p50 us\tp99 us\tmax us\t")
					header = true
				}
				var p50, p99, max float64
				if t := s.Transfers(); t != nil {
					p50, p99, max = t.FCTP50Us, t.FCTP99Us, t.FCTMaxUs
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f\t%d\t%.2fM\t%.2fM\t%.0f\t%.1f\t%.1f\t%.1f\t\n",
					name, s.Hosts, s.Flows, wall, s.Events, float64(s.Events)/wall/1e6,
					float64(s.SentPackets)/wall/1e6, peakRSSMB(), p50, p99, max)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the presets")
	cmd.Flags().StringVar(&cpuProf, "cpuprofile", "", "write a Go CPU profile of the runs to this file (go tool pprof)")
	return cmd
}

// trainingFlowStats is the flow engine's counters of a flow-level training run: flows added,
// rate recomputations, how many of them were full (the rest incremental) and the flows the
// incremental ones refilled (all zero on other engines).
func trainingFlowStats(res *runner.Result) flow.Stats {
	if res.Training == nil || res.Training.Flow == nil {
		return flow.Stats{}
	}
	return *res.Training.Flow
}

// peakRSSMB is the process's maximum resident set size so far, in MB (getrusage; Linux
// reports KiB). Falls back to the Go runtime's view of memory obtained from the OS.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil && ru.Maxrss > 0 {
		return float64(ru.Maxrss) * 1024 / 1e6
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / 1e6
}
