package scenario

import (
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
