package main

import (
	"bytes"
	"encoding/json"
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
