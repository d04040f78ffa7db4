package main

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// printChakra writes a Chakra trace run's lines: what ran and its step time (the job
// completion time), then, over a packet-level transport, the common summary follows.
func printChakra(w io.Writer, sc *scenario.Scenario, res *runner.Result) {
	c := res.Summary.Chakra
	if c == nil {
		return
	}
	fmt.Fprintf(w, "scenario %s (seed %d): chakra trace %s: %d ranks, %d nodes, %d process group(s) over %s (collectives: %s)\n",
		res.Summary.Scenario, res.Summary.Seed, c.Trace, c.Ranks, c.Nodes, c.ProcessGroups, sc.Transport.Kind, sc.Workload.Chakra.Algorithm)
	fmt.Fprintf(w, "step time %.3f us (ranks end between %.3f and %.3f us): %d collective(s) and %d message(s), %d B; communication in flight %.3f us, most computation on one rank %.3f us\n",
		c.StepTimeUs, c.FirstRankEndUs, c.LastRankEndUs, c.Collectives, c.Messages, c.CommBytes, c.CommUs, c.ComputeUsMax)
}
