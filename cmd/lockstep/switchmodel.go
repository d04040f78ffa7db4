package main

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/runner"
)

// printSwitchModel prints the headline line of fabric.switch_model (summary.json
// switch_model): the model, its buffers and what the ingresses dropped; nothing when the
// scenario leaves the key out.
func printSwitchModel(w io.Writer, s *runner.SwitchSummary) {
	if s == nil {
		return
	}
	if s.IngressBufferBytes == 0 {
		fmt.Fprintf(w, "switch model: %s (output queueing)\n", s.Kind)
		return
	}
	fmt.Fprintf(w, "switch model: %s (ingress buffer %s", s.Kind, bytesStr(s.IngressBufferBytes))
	if s.Kind == "voq" {
		fmt.Fprintf(w, ", %s per VOQ", bytesStr(s.VOQBufferBytes))
	}
	fmt.Fprintf(w, ", egress takes below %s): on admission %d marked CE, %d trimmed; %d packets dropped at %d ingresses", bytesStr(s.EgressThresholdBytes), s.IngressCEMarks, s.IngressTrims, s.IngressDrops, s.IngressDropPorts)
	if len(s.IngressDropsTop) > 0 {
		fmt.Fprintf(w, " (most: %s, %d)", s.IngressDropsTop[0].Port, s.IngressDropsTop[0].Packets)
	}
	fmt.Fprintln(w)
}
