package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// holYAML is the head-of-line scenario of fabric.switch_model: a 2-tier Clos of radix 4 (3
// hosts per T0 at 100 Gb/s, one 400 Gb/s uplink to the one spine), a 3 -> 1 incast into h3
// (from h0, h1 on T0 0 and h6 on T0 2) and a victim h2 -> h4, to an idle host on the
// receiver's T0. Victim and incast share T0 1's ingress from the spine and nothing else that
// is congested (the spine's egress to T0 1 carries 400 Gb/s at most): only an ingress FIFO
// can delay the victim. %s: the transport block, the switch model, the fabric's other keys.
const holYAML = `name: hol
topology:
  clos: {tiers: 2, planes: 1, radix: 4, host_link: 100G, fabric_link: 400G, oversubscription: [0.75]}
fabric:
  switch_model: %s%s
transport: %s
traffic:
  - {pattern: incast, receiver: 3, senders: [0, 1, 6], bytes: 2MiB}
  - {pattern: flows, flows: [{src: 2, dst: 4, bytes: 1MiB}]}
run: {duration: 2ms}
`

// victimRatio runs the HOL scenario under transport tr (its YAML block, the fabric's extra
// keys) and switch model, and returns the victim's FCT over its ideal (flows.csv) and the
// summary's switch_model.kind.
func victimRatio(t *testing.T, tr, extra, model string) (ratio float64, kind string) {
	t.Helper()
	sm := "{kind: " + model + "}"
	if model != "output" {
		sm = "{kind: " + model + ", ingress_buffer: 4MiB, voq_buffer: 2MiB}"
	}
	f := filepath.Join(t.TempDir(), "hol.yaml")
	if err := os.WriteFile(f, []byte(fmt.Sprintf(holYAML, sm, extra, tr)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, summary := runTo(t, f)
	var s struct {
		Switch struct {
			Kind string `json:"kind"`
		} `json:"switch_model"`
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(readFile(t, filepath.Join(dir, "flows.csv"))))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, r := range rows[1:] {
		if r[col["src"]] == "2" && r[col["dst"]] == "4" {
			v, err := strconv.ParseFloat(r[col["fct_over_ideal"]], 64)
			if err != nil {
				t.Fatalf("victim fct_over_ideal %q: %v", r[col["fct_over_ideal"]], err)
			}
			return v, s.Switch.Kind
		}
	}
	t.Fatalf("flows.csv has no victim row (src 2, dst 4):\n%v", rows)
	return 0, ""
}

// TestSwitchModelHOLCLI: lockstep run end to end, per transport and switch model. The victim
// finishes at its ideal under output queueing and under VOQ (each egress serves its own
// queue at every ingress [McKeown, iSLIP, IEEE/ACM ToN 1999, §II]) and waits behind incast
// heads under a shared ingress FIFO (head-of-line blocking [Karol et al., IEEE Trans. Commun.
// 1987]). RoCE runs lossy (the input-buffered models refuse PFC) with a short RTO, so a lost
// tail does not wait NCCL's 4.3 s.
func TestSwitchModelHOLCLI(t *testing.T) {
	for _, tr := range []struct{ name, block, extra string }{
		{"mrc", "{kind: mrc}", ""},
		{"roce", "{kind: roce, roce: {rto: 200us}}", "\n  pfc: {enabled: false}"},
		{"uec", "{kind: uec}", ""},
	} {
		t.Run(tr.name, func(t *testing.T) {
			got := map[string]float64{}
			for _, model := range []string{"output", "shared_ingress", "voq"} {
				r, kind := victimRatio(t, tr.block, tr.extra, model)
				if kind != model {
					t.Errorf("%s: summary.json switch_model.kind %q", model, kind)
				}
				got[model] = r
			}
			t.Logf("%s victim FCT/ideal: output %.3f, shared_ingress %.3f, voq %.3f", tr.name, got["output"], got["shared_ingress"], got["voq"])
			if got["output"] > 1.02 {
				t.Errorf("output queueing: victim at %.3f of its ideal, want <= 1.02 (nothing it crosses is congested)", got["output"])
			}
			if got["voq"] > got["output"]+0.01 {
				t.Errorf("voq: victim at %.3f of its ideal against %.3f under output queueing: VOQ must show no head-of-line blocking", got["voq"], got["output"])
			}
			if got["shared_ingress"] < 1.1*got["output"] {
				t.Errorf("shared_ingress: victim at %.3f of its ideal against %.3f under output queueing: want head-of-line blocking (>= 1.1x)", got["shared_ingress"], got["output"])
			}
		})
	}
}

// TestSwitchModelRefusals: what the input-buffered models cannot run with comes back from
// lockstep validate and run as an input error (exit 2) naming the fields: credit flow control
// (transport ib, turned on when the run is set up) and PFC (on by default under roce).
func TestSwitchModelRefusals(t *testing.T) {
	for _, c := range []struct {
		name, tr, extra string
		want            []string
	}{
		{"ib credits", "{kind: ib}", "", []string{"fabric.switch_model.kind", "voq", "transport.ib.credits", "allowed with credits: output"}},
		{"roce pfc", "{kind: roce}", "", []string{"fabric.switch_model.kind", "voq", "fabric.pfc", "enabled: false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "hol.yaml")
			if err := os.WriteFile(f, []byte(fmt.Sprintf(holYAML, "{kind: voq}", c.extra, c.tr)), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cmd := range []string{"validate", "run"} {
				args := []string{cmd, f}
				if cmd == "run" {
					args = append(args, "--out", t.TempDir())
				}
				code, _, stderr := cli(t, args...)
				if code != 2 {
					t.Fatalf("lockstep %s: exit %d, want 2; stderr %q", cmd, code, stderr)
				}
				checkOneLine(t, stderr)
				for _, w := range c.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("lockstep %s: stderr %q does not name %q", cmd, stderr, w)
					}
				}
			}
		})
	}
}
