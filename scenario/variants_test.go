package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/transport/roce"
)

const variantBase = `
name: perm
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: permutation, bytes: 1MiB}
`

func TestParseVariants(t *testing.T) {
	vs, err := ParseVariants([]byte(variantBase + `variants:
  transport: [mrc, roce]
  traffic.0.bytes: [1MiB, 2MiB]
  transport.roce: [{qps_per_peer: 4}]
`))
	if err == nil {
		t.Fatalf("transport.roce under kind mrc should fail in the mrc variants")
	}
	vs, err = ParseVariants([]byte(variantBase + `variants:
  transport: [mrc, roce]
  traffic.0.bytes: [1MiB, 2MiB]
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, kind string }{{"perm-mrc-1MiB", "mrc"}, {"perm-mrc-2MiB", "mrc"}, {"perm-roce-1MiB", "roce"}, {"perm-roce-2MiB", "roce"}}
	if len(vs) != len(want) {
		t.Fatalf("%d variants; want %d", len(vs), len(want))
	}
	for i, w := range want {
		sc := vs[i].Scenario
		if sc.Name != w.name || sc.Transport.Kind != w.kind {
			t.Errorf("variant %d: %s (%s); want %s (%s)", i, sc.Name, sc.Transport.Kind, w.name, w.kind)
		}
		if bytes := int64(sc.Traffic[0].Bytes); (i%2 == 0) != (bytes == 1<<20) {
			t.Errorf("variant %d: %d bytes", i, bytes)
		}
	}
	if vs[0].Label != "transport.kind=mrc traffic.0.bytes=1MiB" {
		t.Errorf("label %q", vs[0].Label)
	}
	if got, want := vs[3].Values, []Param{{"transport.kind", "roce"}, {"traffic.0.bytes", "2MiB"}}; !slices.Equal(got, want) {
		t.Errorf("values %v; want %v", got, want)
	}
	// A mapping value replaces the node; it is labelled by position.
	vs, err = ParseVariants([]byte(variantBase + `variants:
  transport: [{kind: roce, roce: {qps_per_peer: 1}}, {kind: roce, roce: {qps_per_peer: 8}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := vs[1].Values; len(got) != 1 || got[0] != (Param{"transport", "#2"}) {
		t.Errorf("mapping variant values %v; want transport #2", got)
	}
	if vs[1].Scenario.Transport.Block().(*roce.Config).QPsPerPeer != 8 || vs[1].Scenario.Name != "perm-#2" && vs[1].Scenario.Name != "perm-_2" {
		t.Errorf("mapping variant: %s with %d QPs", vs[1].Scenario.Name, vs[1].Scenario.Transport.Block().(*roce.Config).QPsPerPeer)
	}
	if vs, err := ParseVariants([]byte(variantBase)); vs != nil || err != nil {
		t.Errorf("no variants: %v, %v; want nil, nil", vs, err)
	}
}

func TestParseVariantsErrors(t *testing.T) {
	for _, c := range []struct{ variants, want string }{
		{"variants: [mrc]", "variants"},
		{"variants: {}", "variants"},
		{"variants: {transport: []}", "variants.transport"},
		{"variants: {transport: mrc}", "variants.transport"},
		{"variants: {traffic.5.bytes: [1MiB]}", "not an index"},
		{"variants: {name: [a, b]}", "cannot vary name"},
		{"variants: {transport.kind.x: [a]}", "is a value"},
		{"variants: {transport..kind: [a]}", "empty path element"},
		{"variants: {transport: [mrc, warp]}", "warp"},
		{"variants: {a: [1, 2, 3, 4], b: [1, 2, 3, 4], c: [1, 2, 3, 4, 5]}", "expands to 80 scenarios, beyond the 64 allowed; pass --max 80"},
		{"variants: {seeds: 1..65}", "expands to 65 scenarios, beyond the 64 allowed"},
		{"variants: {seeds: 0..3}", "variants.seeds (line 8): \"0..3\": want 1 <= first <= last"},
		{"variants: {seeds: 5..3}", "want 1 <= first <= last"},
		{"variants: {seeds: 1-3}", "is not a list of seeds or a range; want e.g. 1..20"},
		{"variants: {seeds: [1, x]}", "is not a seed; want an integer >= 1"},
		{"variants: {seeds: []}", "non-empty list of seeds"},
		{"variants: {seeds: {a: 1}}", "want a list of seeds or a range"},
		{"variants: {seeds: 1..1000000000}", "beyond the 100000 variants one file may hold"},
	} {
		_, err := ParseVariants([]byte(variantBase + c.variants + "\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one containing %q", c.variants, err, c.want)
		}
	}
	if _, err := Parse([]byte(variantBase + "variants: {transport: [mrc, roce]}\n")); err == nil || !strings.Contains(err.Error(), "lockstep run FILE") {
		t.Errorf("Parse of a file with variants: %v; want the run/compare hint", err)
	}
}

func FuzzParseVariants(f *testing.F) {
	f.Add([]byte(variantBase + "variants: {transport: [mrc, roce]}\n"))
	f.Add([]byte(variantBase + "variants: {traffic.0: [{pattern: incast, receiver: 0, senders: [1, 2], bytes: 1KiB}]}\n"))
	f.Add([]byte("variants: {a.b.c: [1]}\n"))
	f.Add([]byte(variantBase + "variants: {traffic.0.bytes: [1KiB], traffic: [[{pattern: permutation, bytes: 1KiB}]], seeds: [1, 1]}\n"))
	f.Add([]byte("variants: &x {a: *x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vs, err := ParseVariants(data)
		if err == nil && len(vs) > MaxVariants {
			t.Fatalf("%d variants", len(vs))
		}
	})
}

// seeds: A..B (or a list) sweeps run.seed, naming variants s<seed>; --max (LoadVariantsMax)
// lifts the 64-variant bound.
func TestVariantsSeeds(t *testing.T) {
	vs, err := ParseVariants([]byte(variantBase + "variants: {transport: [mrc, roce], seeds: 3..5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vs {
		names = append(names, fmt.Sprintf("%s/%d", v.Scenario.Name, v.Scenario.Run.Seed))
	}
	want := "perm-mrc-s3/3 perm-mrc-s4/4 perm-mrc-s5/5 perm-roce-s3/3 perm-roce-s4/4 perm-roce-s5/5"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("variants %s, want %s", got, want)
	}
	if vs[0].Values[1] != (Param{Key: "seeds", Value: "3"}) {
		t.Errorf("values %v", vs[0].Values)
	}
	file := filepath.Join(t.TempDir(), "many.yaml")
	os.WriteFile(file, []byte(variantBase+"variants: {seeds: 1..70}\n"), 0o644)
	if _, err := LoadVariants(file); err == nil {
		t.Errorf("70 variants loaded without a max")
	} else if tm := (*TooManyVariants)(nil); !errors.As(err, &tm) || tm.Count != 70 {
		t.Errorf("error %v; want a *TooManyVariants of 70", err)
	}
	if vs, err := LoadVariantsMax(file, 70); err != nil || len(vs) != 70 {
		t.Errorf("LoadVariantsMax 70: %d, %v", len(vs), err)
	}
}

// Two variants keys that set the same field, or one inside the other's, are an error naming
// both: otherwise each variant silently takes one key's value while its name, label and
// sweep.csv show both. The same goes for run.out (always DIR/<variant>) and a seed given twice.
func TestVariantsConflictingKeys(t *testing.T) {
	for _, c := range []struct {
		variants string
		want     []string
	}{
		// transport: [mrc] is shorthand for transport.kind.
		{"  transport.kind: [mrc, roce]\n  transport: [mrc]\n", []string{"variants.transport (line 10)", "sets transport.kind", "variants.transport.kind (line 9)", "leave one out"}},
		{"  transport: [mrc]\n  transport.kind: [roce]\n", []string{"variants.transport.kind (line 10)", "variants.transport (line 9, shorthand for transport.kind)"}},
		// A list element inside a whole replaced list, either order.
		{"  traffic.0.bytes: [64KiB]\n  traffic: [[{pattern: permutation, bytes: 1KiB}]]\n", []string{"variants.traffic (line 10)", "overlaps variants.traffic.0.bytes (line 9)", "replaces all of traffic", "set 0.bytes in the values of variants.traffic"}},
		{"  traffic: [[{pattern: permutation, bytes: 1KiB}]]\n  traffic.0.bytes: [64KiB]\n", []string{"variants.traffic.0.bytes (line 10)", "overlaps variants.traffic (line 9)"}},
		{"  traffic.0: [{pattern: permutation, bytes: 1KiB}]\n  traffic.00.bytes: [64KiB]\n", []string{"variants.traffic.00.bytes (line 10)", "overlaps variants.traffic.0 (line 9)"}},
		// A mapping value for transport replaces the whole block, kind and all.
		{"  transport: [{kind: roce}]\n  transport.roce.qps_per_peer: [4]\n", []string{"variants.transport.roce.qps_per_peer (line 10)", "overlaps variants.transport (line 9)"}},
		// The same YAML key twice.
		{"  traffic.0.bytes: [64KiB, 256KiB]\n  traffic.0.bytes: [128KiB]\n", []string{"variants.traffic.0.bytes (line 10)", "given twice (also at line 9)"}},
		{"  seeds: 1..2\n  seeds: [3]\n", []string{"variants.seeds (line 10)", "given twice (also at line 9)"}},
		// seeds sets run.seed.
		{"  seeds: 1..3\n  run.seed: [4, 5]\n", []string{"variants.run.seed (line 10)", "sets run.seed", "variants.seeds (line 9, which sets run.seed)"}},
		{"  run: [{seed: 4}]\n  seeds: 1..3\n", []string{"variants.seeds (line 10)", "overlaps variants.run (line 9)", "variants.seeds sets run.seed"}},
		// run.out is never used.
		{"  run.out: [a, b]\n", []string{"variants.run.out (line 9)", "cannot vary run.out"}},
		{"  run: [{seed: 1}, {out: b}]\n", []string{"variants.run (line 9)", "cannot vary run.out"}},
		// A seed given twice.
		{"  seeds: [1, 1, 2]\n", []string{"variants.seeds (line 9)", "seed 1 is given twice (items 1 and 2)"}},
		{"  run.seed: [3, 2, 3]\n", []string{"variants.run.seed (line 9)", "seed 3 is given twice (items 1 and 3)"}},
	} {
		_, err := ParseVariants([]byte(variantBase + "variants:\n" + c.variants))
		if err == nil {
			t.Errorf("%q: accepted", c.variants)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", c.variants, err, w)
			}
		}
	}
	// Keys that only share a prefix of their names, or that set sibling fields, are fine.
	for _, ok := range []string{
		"  transport: [roce]\n  transport.roce: [{qps_per_peer: 4}]\n",
		"  transport.kind: [roce]\n  transport.roce.qps_per_peer: [4, 8]\n  transport.roce.dcqcn: [{}]\n",
		"  traffic.0.bytes: [1KiB]\n  traffic.0.pattern: [permutation]\n",
		"  run.seed: [1, 2]\n  run.duration: [1ms]\n",
	} {
		if _, err := ParseVariants([]byte(variantBase + "variants:\n" + ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// SeedKey names the key that sets each variant's run.seed, so the CLI can refuse --seed.
func TestVariantsSeedKey(t *testing.T) {
	for _, c := range []struct{ variants, want string }{
		{"{seeds: 1..2}", "seeds seeds"},
		{"{run.seed: [4, 5]}", "run.seed run.seed"},
		{"{run: [{seed: 4}, {duration: 1ms}]}", "run -"},
		{"{transport: [mrc, roce]}", "- -"},
	} {
		vs, err := ParseVariants([]byte(variantBase + "variants: " + c.variants + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.variants, err)
		}
		var got []string
		for _, v := range vs {
			got = append(got, cmp.Or(v.SeedKey, "-"))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s: SeedKey %v; want %s", c.variants, got, c.want)
		}
	}
}
