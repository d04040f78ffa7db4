package scenario

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
)

// TestSwitchModelResolve: fabric.switch_model left out stays out (every scenario without it
// resolves and encodes as before); given, its defaults are filled and the resolved scenario
// round-trips; kind output writes only the kind.
func TestSwitchModelResolve(t *testing.T) {
	for _, c := range []struct {
		name, fab string
		want      *fabric.SwitchConfig
	}{
		{"left out", "", nil},
		{"output", "fabric: {switch_model: {kind: output}}", &fabric.SwitchConfig{Kind: "output"}},
		{"empty kind", "fabric: {switch_model: {}}", &fabric.SwitchConfig{Kind: "output"}},
		{"output keeps buffers", "fabric: {switch_model: {kind: output, ingress_buffer: 4MiB}}", &fabric.SwitchConfig{Kind: "output", IngressBuffer: 4 << 20}},
		{"voq defaults", "fabric: {switch_model: {kind: voq}}",
			&fabric.SwitchConfig{Kind: "voq", IngressBuffer: fabric.DefaultIngressBuffer, VOQBuffer: fabric.DefaultIngressBuffer, EgressThreshold: fabric.DefaultEgressThreshold}},
		{"shared_ingress given", "fabric: {switch_model: {kind: shared_ingress, ingress_buffer: 4MiB, egress_threshold: 16KiB}}",
			&fabric.SwitchConfig{Kind: "shared_ingress", IngressBuffer: 4 << 20, VOQBuffer: 4 << 20, EgressThreshold: 16 << 10}},
		{"voq buffer", "fabric: {switch_model: {kind: voq, ingress_buffer: 2MiB, voq_buffer: 256KiB}}",
			&fabric.SwitchConfig{Kind: "voq", IngressBuffer: 2 << 20, VOQBuffer: 256 << 10, EgressThreshold: fabric.DefaultEgressThreshold}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := valScenario(c.fab, "{kind: mrc}", "[{pattern: incast, senders: [1, 2], receiver: 0, bytes: 64KiB}]", "")
			if err != nil {
				t.Fatal(err)
			}
			got := sc.Fabric.SwitchModel
			if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
				t.Fatalf("switch_model %+v, want %+v", got, c.want)
			}
			y, err := Encode(sc)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(y), "switch_model"); has != (c.want != nil) {
				t.Fatalf("resolved scenario writes switch_model: %v, want %v\n%s", has, c.want != nil, y)
			}
			sc2, err := Parse(y)
			if err != nil {
				t.Fatalf("resolved scenario does not parse: %v\n%s", err, y)
			}
			if g2 := sc2.Fabric.SwitchModel; (g2 == nil) != (got == nil) || g2 != nil && *g2 != *got {
				t.Fatalf("round trip: %+v, want %+v", g2, got)
			}
		})
	}
}

// TestSwitchModelErrors: a bad fabric.switch_model names the field, the value and what is
// allowed; the input-buffered kinds refuse PFC (on by default under RoCE), the flow level and
// transport ideal.
func TestSwitchModelErrors(t *testing.T) {
	const incast = "[{pattern: incast, senders: [1, 2], receiver: 0, bytes: 64KiB}]"
	for _, c := range []struct {
		name, fab, tr, run string
		want               []string
	}{
		{"kind", "fabric: {switch_model: {kind: crossbar}}", "{kind: mrc}", "", []string{"fabric.switch_model.kind", `"crossbar"`, "output, shared_ingress, voq"}},
		{"scalar", "fabric: {switch_model: voq}", "{kind: mrc}", "", []string{"fabric.switch_model", "want a mapping such as {kind: voq}", `got "voq"`}},
		{"unknown key", "fabric: {switch_model: {kind: voq, buffer: 1MiB}}", "{kind: mrc}", "", []string{"fabric.switch_model", "buffer", "ingress_buffer"}},
		{"negative", "fabric: {switch_model: {kind: voq, ingress_buffer: -1}}", "{kind: mrc}", "", []string{"fabric.switch_model.ingress_buffer"}},
		{"voq buffer", "fabric: {switch_model: {kind: voq, ingress_buffer: 64KiB, voq_buffer: 1MiB}}", "{kind: mrc}", "", []string{"fabric.switch_model.voq_buffer", "1MiB", "at most the ingress buffer"}},
		{"threshold", "fabric: {switch_model: {kind: shared_ingress, ingress_buffer: 64KiB, egress_threshold: 1MiB}}", "{kind: mrc}", "", []string{"fabric.switch_model.egress_threshold", "1MiB", "at most the ingress buffer"}},
		{"output with bad buffers", "fabric: {switch_model: {kind: output, ingress_buffer: 64KiB, voq_buffer: 1MiB}}", "{kind: mrc}", "", []string{"fabric.switch_model.voq_buffer", "1MiB", "at most the ingress buffer"}},
		{"roce pfc default", "fabric: {switch_model: {kind: voq}}", "{kind: roce}", "", []string{"fabric.switch_model.kind", "voq", "fabric.pfc", "transport roce", "enabled: false"}},
		{"raw pfc", "fabric: {switch_model: {kind: shared_ingress}, pfc: {enabled: true}}", "{kind: raw}", "", []string{"fabric.switch_model.kind", "shared_ingress", "fabric.pfc", "allowed with PFC: output"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario(c.fab, c.tr, incast, "")
			wantErr(t, err, c.want)
		})
	}
	// A roce scenario with PFC off takes every kind.
	if _, err := valScenario("fabric: {switch_model: {kind: voq}, pfc: {enabled: false}}", "{kind: roce}", incast, ""); err != nil {
		t.Fatalf("roce lossy with voq: %v", err)
	}
	flow := "topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\nfabric: {switch_model: {kind: voq}}\ntransport: {kind: mrc}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB}]}\nrun: {engine: flow}\n"
	_, err := Parse([]byte(flow))
	wantErr(t, err, []string{"fabric.switch_model.kind", "voq", "flow level", "allowed there: output", "run.engine packet"})
	if _, err := Parse([]byte(strings.Replace(flow, "kind: voq", "kind: output", 1))); err != nil {
		t.Fatalf("output at flow level: %v", err)
	}
	ideal := "topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\nfabric: {switch_model: {kind: shared_ingress}}\ntransport: {kind: ideal}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB}]}\n"
	_, err = Parse([]byte(ideal))
	wantErr(t, err, []string{"fabric.switch_model.kind", "shared_ingress", "transport ideal", "allowed there: output"})
}
