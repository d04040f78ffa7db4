package training

import (
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParseModel: no input crashes ParseModel; every model it accepts is valid, re-encodes,
// and parses back to itself. Seeded from the presets, round-tripped, and a few broken ones.
func FuzzParseModel(f *testing.F) {
	for _, name := range ModelPresets() {
		m, err := ModelPreset(name)
		if err != nil {
			f.Fatal(err)
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add([]byte("preset: " + name + "\nseq_len: 4096\n"))
	}
	for _, s := range []string{"", "layers: -1", "preset: llama3-8b\nkv_heads: 0x7fffffffffffffff", "hidden: [1]", "preset: [", "{}",
		"preset: deepseek-v3\ntop_k: 257", "preset: llama3-8b\nglobal_batch_tokens: 8192\nglobal_batch: 0", "a: &a [*a]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseModel(data)
		if err != nil {
			return
		}
		if err := m.validate(); err != nil {
			t.Fatalf("accepted an invalid model: %v", err)
		}
		out, err := yaml.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseModel(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the model:\n%+v\n%+v", m, back)
		}
		_ = m.Params()
		_ = m.StepFLOPs()
	})
}
