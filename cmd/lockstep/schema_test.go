package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// compiledSchema compiles lockstep schema's output.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out := mustRun(t, "schema")
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaID)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

// yamlInstance reads YAML as a JSON Schema instance (through JSON, as an editor does).
func yamlInstance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestSchemaAccepts: the schema accepts every preset, testdata scenario, variants file and
// README example, the built-in default, and the resolved scenario.yaml of each preset (every
// key a resolved scenario writes, the transport blocks included).
func TestSchemaAccepts(t *testing.T) {
	sch := compiledSchema(t)
	inputs := validScenarios(t)
	inputs["default"] = scenario.DefaultYAML()
	for _, p := range scenario.Presets() {
		y, err := scenario.PresetYAML(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs["preset "+p] = y
		sc, err := scenario.Preset(p)
		if err != nil {
			t.Fatal(err)
		}
		if inputs["resolved "+p], err = scenario.Encode(sc); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"coll-mrc.yaml", "roce-incast-victim.yaml", "train-llama8b.yaml"} {
		sc, err := scenario.Load(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if inputs["resolved "+f], err = scenario.Encode(sc); err != nil {
			t.Fatal(err)
		}
	}
	for i, senders := range []string{"[1, 2, 3]", "[1-7, 9]", "1-7", `"1-7, 9"`, "5"} {
		inputs[fmt.Sprintf("senders %d", i)] = []byte("topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: ib}\ntraffic: [{pattern: incast, receiver: 0, bytes: 64KB, senders: " + senders + "}]\n")
	}
	for name, data := range inputs {
		if err := sch.Validate(yamlInstance(t, data)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSchemaRejects: keys the decoder rejects are rejected by the schema too, at the top, in a
// section and in a transport block, as are values of the wrong type and a kind not
// registered.
func TestSchemaRejects(t *testing.T) {
	sch := compiledSchema(t)
	base := "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100G}}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n"
	for _, c := range []struct{ name, y string }{
		{"unknown top-level key", base + "transport: {kind: mrc}\nbogus: 1\n"},
		{"unknown run key", base + "transport: {kind: mrc}\nrun: {sed: 1}\n"},
		{"unknown mrc key", base + "transport: {kind: mrc, mrc: {window: 3}}\n"},
		{"unknown transport", base + "transport: {kind: tcp}\n"},
		{"engine", base + "transport: {kind: mrc}\nrun: {engine: fluid}\n"},
		{"tiers not a number", "topology: {clos: {tiers: two, planes: 1, radix: 16, host_link: 100G}}\n"},
		{"traffic not a list", base[:strings.Index(base, "traffic")] + "traffic: {pattern: permutation}\n"},
		{"senders not hosts", base[:strings.Index(base, "traffic")] + "traffic: [{pattern: incast, receiver: 0, senders: [1-x]}]\n"},
		{"senders text not hosts", base[:strings.Index(base, "traffic")] + "traffic: [{pattern: incast, receiver: 0, senders: \"1-3,,4\"}]\n"},
		{"senders negative", base[:strings.Index(base, "traffic")] + "traffic: [{pattern: incast, receiver: 0, senders: [-2]}]\n"},
	} {
		// The decoder rejects each too (the schema says no more than lockstep does).
		if _, err := scenario.Parse([]byte(c.y)); err == nil {
			t.Errorf("%s: scenario.Parse accepts it", c.name)
		}
		if err := sch.Validate(yamlInstance(t, []byte(c.y))); err == nil {
			t.Errorf("%s: the schema accepts it", c.name)
		}
	}
}

// TestSchemaAgreesWithValidate: every YAML under cmd/lockstep/testdata and runner/testdata
// (the bad ones included) that lockstep validate accepts, and every preset, validates against
// the schema; and a table of files each rejects both (the schema says no more than lockstep,
// and lockstep no more than the schema, on keys, types and units).
func TestSchemaAgreesWithValidate(t *testing.T) {
	sch := compiledSchema(t)
	var files []string
	for _, root := range []string{"testdata", filepath.Join("..", "..", "runner", "testdata")} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return nil
		})
	}
	accepted := 0
	for _, f := range files {
		vs, verr := scenario.LoadVariantsMax(f, scenario.MaxVariantsLimit)
		if vs == nil && verr == nil {
			_, verr = scenario.Load(f)
		}
		if verr != nil {
			continue // validate refuses it: the schema may accept it (ranges are not its business)
		}
		accepted++
		if err := sch.Validate(yamlInstance(t, readFile(t, f))); err != nil {
			t.Errorf("%s: lockstep validate accepts it, the schema does not: %v", f, err)
		}
	}
	for _, p := range scenario.Presets() {
		y, err := scenario.PresetYAML(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(yamlInstance(t, y)); err != nil {
			t.Errorf("preset %s: %v", p, err)
		}
		accepted++
	}
	if accepted < 30 {
		t.Fatalf("only %d files and presets validate; the walk missed the testdata", accepted)
	}

	base := "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100G}}\ntransport: {kind: mrc}\n"
	perm := "traffic: [{pattern: permutation, bytes: 4KiB}]\n"
	for _, c := range []struct{ name, y string }{
		{"quoted tiers", "topology: {clos: {tiers: '2', planes: 1, radix: 16, host_link: 100G}}\ntransport: {kind: mrc}\n" + perm},
		{"quoted oversubscription", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100G, oversubscription: ['2']}}\ntransport: {kind: mrc}\n" + perm},
		{"rate without unit", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100}}\ntransport: {kind: mrc}\n" + perm},
		{"quoted rate without unit", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: '100'}}\ntransport: {kind: mrc}\n" + perm},
		{"duration without unit", base + perm + "run: {duration: 5}\n"},
		{"quoted duration without unit", base + perm + "run: {duration: '5'}\n"},
		{"duration with a bad unit", base + perm + "run: {duration: 5sec}\n"},
		{"rate in bytes per second", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100GB/s}}\ntransport: {kind: mrc}\n" + perm},
		{"size in bits", base + "traffic: [{pattern: permutation, bytes: 4Kib}]\n"},
		{"clos without host_link", "topology: {clos: {tiers: 2, planes: 1, radix: 16}}\ntransport: {kind: mrc}\n" + perm},
		{"clos without radix", "topology: {clos: {tiers: 2, planes: 1, host_link: 100G}}\ntransport: {kind: mrc}\n" + perm},
		{"traffic without pattern", base + "traffic: [{bytes: 4KiB}]\n"},
		{"unknown pattern", base + "traffic: [{pattern: allpairs, bytes: 4KiB}]\n"},
		{"flow without dst", base + "traffic: [{pattern: flows, bytes: 4KiB, flows: [{src: 0}]}]\n"},
		{"collective without op", base + "workload: {collectives: [{ranks: 4, bytes: 1MiB}]}\n"},
		{"unknown op", base + "workload: {collectives: [{op: all_sum, ranks: 4, bytes: 1MiB}]}\n"},
		{"unknown algorithm", base + "workload: {collectives: [{op: all_reduce, algorithm: butterfly, ranks: 4, bytes: 1MiB}]}\n"},
		{"fault without action", base + perm + "faults: [{at: 1us, link: h0.p0}]\n"},
		{"seeds not a range", base + perm + "variants: {seeds: 1-20}\n"},
		{"seeds of strings", base + perm + "variants: {seeds: [a, b]}\n"},
	} {
		if _, err := scenario.Parse([]byte(c.y)); err == nil {
			if vs, verr := scenario.ParseVariants([]byte(c.y)); vs != nil || verr == nil {
				t.Errorf("%s: lockstep accepts it", c.name)
			}
		}
		if err := sch.Validate(yamlInstance(t, []byte(c.y))); err == nil {
			t.Errorf("%s: the schema accepts it", c.name)
		}
	}
	// The documented seeds range and a bare 0 validate.
	for _, y := range []string{base + perm + "variants: {seeds: 1..20}\n", base + perm + "run: {duration: 0}\n", base + perm + "run: {duration: never}\n"} {
		if err := sch.Validate(yamlInstance(t, []byte(y))); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}
