package main

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// holScenario is the preset voq-hol (a 3 -> 1 incast and a victim sharing one switch ingress
// and nothing else congested; its comment says more) with its transport block replaced by tr,
// fabric.switch_model by sm and extra added to the fabric section.
func holScenario(t *testing.T, tr, sm, extra string) string {
	t.Helper()
	y, err := scenario.PresetYAML("voq-hol")
	if err != nil {
		t.Fatal(err)
	}
	s := string(y)
	for _, r := range []struct{ old, new string }{
		{"transport: {kind: uec}\n", "transport: " + tr + "\n"},
		{"  switch_model: {kind: shared_ingress, ingress_buffer: 4MiB, voq_buffer: 2MiB}\n", "  switch_model: " + sm + "\n" + extra},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("preset voq-hol has no line %q", r.old)
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	f := filepath.Join(t.TempDir(), "hol.yaml")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// victimRatio runs the HOL scenario under transport tr (its YAML block, the fabric's extra
// keys) and switch model, and returns the victim's FCT over its ideal (flows.csv) and the
// summary's switch_model.kind.
func victimRatio(t *testing.T, tr, extra, model string) (ratio float64, kind string) {
	t.Helper()
	sm := "{kind: " + model + "}"
	if model != "output" {
		sm = "{kind: " + model + ", ingress_buffer: 4MiB, voq_buffer: 2MiB}"
	}
	dir, summary := runTo(t, holScenario(t, tr, sm, extra))
	var s struct {
		Switch struct {
			Kind string `json:"kind"`
		} `json:"switch_model"`
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		t.Fatal(err)
	}
	return victimFCT(t, dir), s.Switch.Kind
}

// victimFCT returns the victim's (h2 -> h4) FCT over its ideal from dir's flows.csv.
func victimFCT(t *testing.T, dir string) float64 {
	t.Helper()
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
			return v
		}
	}
	t.Fatalf("flows.csv has no victim row (src 2, dst 4):\n%v", rows)
	return 0
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
		{"roce", "{kind: roce, roce: {rto: 200us}}", "  pfc: {enabled: false}\n"},
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
			f := holScenario(t, c.tr, "{kind: voq}", c.extra)
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

// TestSwitchModelSchema: the schema takes fabric.switch_model's kinds and keys and refuses a
// kind lockstep refuses, a scalar and an unknown key, as the decoder does.
func TestSwitchModelSchema(t *testing.T) {
	sch := compiledSchema(t)
	base := "topology: {clos: {tiers: 2, planes: 1, radix: 4, host_link: 100G}}\ntransport: {kind: uec}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n"
	for _, sm := range []string{"{kind: output}", "{kind: shared_ingress, ingress_buffer: 4MiB}", "{kind: voq, ingress_buffer: 4MiB, voq_buffer: 1MiB, egress_threshold: 16KiB}"} {
		y := base + "fabric: {switch_model: " + sm + "}\n"
		if _, err := scenario.Parse([]byte(y)); err != nil {
			t.Fatalf("%s: %v", sm, err)
		}
		if err := sch.Validate(yamlInstance(t, []byte(y))); err != nil {
			t.Errorf("%s: the schema refuses it: %v", sm, err)
		}
	}
	for _, sm := range []string{"{kind: crossbar}", "voq", "{kind: voq, buffer: 1MiB}", "{kind: voq, ingress_buffer: lots}"} {
		y := base + "fabric: {switch_model: " + sm + "}\n"
		if _, err := scenario.Parse([]byte(y)); err == nil {
			t.Errorf("%s: scenario.Parse accepts it", sm)
		}
		if err := sch.Validate(yamlInstance(t, []byte(y))); err == nil {
			t.Errorf("%s: the schema accepts it", sm)
		}
	}
}

// TestSwitchModelVariants: a variants: sweep over fabric.switch_model.kind runs each model
// (the buffers written for the input-buffered kinds are kept, unused, under output) and the
// shared ingress FIFO is the one whose victim is late.
func TestSwitchModelVariants(t *testing.T) {
	y, err := scenario.PresetYAML("voq-hol")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "hol.yaml")
	if err := os.WriteFile(f, append(y, []byte("variants:\n  fabric.switch_model.kind: [output, shared_ingress, voq]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mustRun(t, "run", f, "--out", dir)
	for _, model := range []string{"output", "shared_ingress", "voq"} {
		var s struct {
			Switch struct {
				Kind string `json:"kind"`
			} `json:"switch_model"`
		}
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, "voq-hol-"+model, "summary.json")), &s); err != nil {
			t.Fatal(err)
		}
		if s.Switch.Kind != model {
			t.Errorf("variant %s: summary.json switch_model.kind %q", model, s.Switch.Kind)
		}
		r := victimFCT(t, filepath.Join(dir, "voq-hol-"+model))
		if late := r > 1.1; late != (model == "shared_ingress") {
			t.Errorf("variant %s: victim at %.3f of its ideal", model, r)
		}
	}
	sweep := string(readFile(t, filepath.Join(dir, "sweep.csv")))
	if !strings.Contains(sweep, "shared_ingress") {
		t.Fatalf("sweep.csv does not list the shared_ingress variant:\n%s", sweep)
	}
}

// TestSwitchModelDeterministicCLI: the same scenario and seed under each input-buffered model
// write byte-identical summary.json and flows.csv.
func TestSwitchModelDeterministicCLI(t *testing.T) {
	for _, model := range []string{"shared_ingress", "voq"} {
		f := holScenario(t, "{kind: uec}", "{kind: "+model+", ingress_buffer: 4MiB, voq_buffer: 2MiB}", "")
		d1, s1 := runTo(t, f)
		d2, s2 := runTo(t, f)
		if string(s1) != string(s2) {
			t.Errorf("%s: summary.json differs between two runs", model)
		}
		if a, b := readFile(t, filepath.Join(d1, "flows.csv")), readFile(t, filepath.Join(d2, "flows.csv")); string(a) != string(b) {
			t.Errorf("%s: flows.csv differs between two runs", model)
		}
	}
}
