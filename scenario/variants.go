package scenario

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxVariants bounds the variants one file expands to (the product of every list's length)
// unless the caller allows more (LoadVariantsMax: the CLI's --max), so a typo cannot start
// thousands of runs.
const MaxVariants = 64

// MaxVariantsLimit is the most variants LoadVariantsMax accepts whatever its max: each is
// resolved up front, and each is a results folder.
const MaxVariantsLimit = 100000

// ErrTooManyVariants is wrapped by the error of a file that expands beyond the variants
// allowed; TooManyVariants carries the count.
type TooManyVariants struct {
	// Count is the number of variants the file expands to (capped at MaxVariantsLimit+1),
	// Max the number allowed.
	Count, Max int
	// Line is the variants section's line.
	Line int
}

func (e *TooManyVariants) Error() string {
	if e.Max >= MaxVariantsLimit {
		return fmt.Sprintf("variants (line %d): expands to more than %d scenarios, the most one file may hold; split the file", e.Line, MaxVariantsLimit)
	}
	return fmt.Sprintf("variants (line %d): expands to %d scenarios, beyond the %d allowed; pass --max %d to run them all (lockstep sweep --list --max %d shows them), or shorten the lists", e.Line, e.Count, e.Max, e.Count, e.Count)
}

// Variant is one scenario of a file whose top level has a variants: section.
type Variant struct {
	// Label names what this variant sets, "transport.kind=roce qps=8" style: each variants
	// key with its value (a mapping value shows as its position, "#2").
	Label string
	// Base is the file's scenario name, before the variant's suffix.
	Base string
	// Values are the variant's parameter values in variants-key order: each key (its
	// dotted path) with its value as Label shows it.
	Values []Param
	// SeedKey is the variants key that sets this variant's run.seed: SeedsKey, "run.seed",
	// or "run" when its value holds a seed; "" when the seed is the file's run.seed. A
	// --seed given with such a file contradicts it (the CLI rejects the pair).
	SeedKey string
	// Scenario is the parsed, resolved scenario: the file without its variants section,
	// with this variant's values set and its name suffixed with the values
	// ("perm-mrc", "perm-roce-8").
	Scenario *Scenario
}

// Param is one swept parameter of a variant: its dotted variants key and the value's text
// (a scalar as written; a mapping or list as its position, "#2").
type Param struct{ Key, Value string }

// A variants: section maps YAML paths (dotted, e.g. "transport.kind",
// "transport.roce.qps_per_peer", "fabric.pfc") to lists of values; the file expands to one
// scenario per combination (the cross product, in key order, the first key varying slowest).
// Each value replaces the node at its path (creating missing mappings), so a value can be a
// scalar or a whole mapping. Shorthand: "transport: [mrc, roce]" sets transport.kind. Two
// keys may not set the same field (the same key twice, transport and transport.kind, seeds
// and run.seed) nor one a field inside the other's (traffic and traffic.0.bytes), and name
// and run.out cannot be varied: each is an error naming the keys.
//
//	name: perm
//	variants:
//	  transport: [mrc, roce]
//	  traffic.0.bytes: [4MiB, 16MiB]     # a list element by its index
//
// gives perm-mrc-4MiB, perm-mrc-16MiB, perm-roce-4MiB, perm-roce-16MiB.

// LoadVariants reads a scenario file. Without a variants section it returns (nil, nil): load
// it with Load. Otherwise it returns every variant, parsed and resolved. Errors name the file
// and the variants path, or the variant whose scenario is invalid.
func LoadVariants(path string) ([]Variant, error) { return LoadVariantsMax(path, MaxVariants) }

// LoadVariantsMax is LoadVariants allowing up to max variants (at most MaxVariantsLimit);
// beyond it the error is a *TooManyVariants.
func LoadVariantsMax(path string, max int) ([]Variant, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	vs, err := parseVariantsIn(data, filepath.Dir(path), max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vs, nil
}

// HasVariants reports whether data is a YAML mapping with a top-level variants key. Invalid
// YAML reports false (Parse then names the syntax error).
func HasVariants(data []byte) bool {
	if !bytes.Contains(data, []byte("variants")) {
		return false // no such key: skip parsing (a file of 100,000 flows takes a second)
	}
	root, err := parseDocument(data)
	return err == nil && root.Kind == yaml.MappingNode && keyIndex(root, "variants") >= 0
}

// ParseVariants expands data's variants section (see LoadVariants); (nil, nil) without one.
func ParseVariants(data []byte) ([]Variant, error) { return parseVariantsIn(data, "", MaxVariants) }

// ParseVariantsIn is ParseVariants for a file read from folder dir (see ParseIn) allowing up
// to max variants (at most MaxVariantsLimit; beyond it the error is a *TooManyVariants).
func ParseVariantsIn(data []byte, dir string, max int) ([]Variant, error) {
	return parseVariantsIn(data, dir, max)
}

func parseVariantsIn(data []byte, dir string, max int) ([]Variant, error) {
	max = min(max, MaxVariantsLimit)
	root, err := parseDocument(data)
	if err != nil {
		return nil, err
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil
	}
	vi := keyIndex(root, "variants")
	if vi < 0 {
		return nil, nil
	}
	sec := root.Content[vi+1]
	if sec.Kind != yaml.MappingNode || len(sec.Content) == 0 {
		return nil, &FieldError{Path: "variants", Line: sec.Line, Msg: "want a mapping of YAML paths to lists of values, e.g. {transport: [mrc, roce]}"}
	}
	var axes []axis
	total := 1
	for i := 0; i < len(sec.Content); i += 2 {
		k, v := sec.Content[i], sec.Content[i+1]
		field := "variants." + k.Value
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, &FieldError{Path: "variants", Line: k.Line, Msg: "keys are dotted YAML paths such as transport.kind"}
		}
		if k.Value == SeedsKey {
			seeds, err := seedValues(v, field)
			if err != nil {
				return nil, err
			}
			axes = append(axes, axis{path: []string{"run", "seed"}, key: SeedsKey, written: k.Value, line: k.Line, values: seeds, seeds: true})
			total = min(total*len(seeds), MaxVariantsLimit+1)
			continue
		}
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, &FieldError{Path: field, Line: v.Line, Msg: "want a non-empty list of values, e.g. [mrc, roce]"}
		}
		p := strings.Split(k.Value, ".")
		for _, part := range p {
			if part == "" {
				return nil, &FieldError{Path: field, Line: k.Line, Msg: fmt.Sprintf("%q has an empty path element", k.Value)}
			}
		}
		if p[0] == "variants" || p[0] == "name" {
			return nil, &FieldError{Path: field, Line: k.Line, Msg: "cannot vary " + p[0] + "; variants are named after their values"}
		}
		if err := checkRunOut(p, v, field, k.Line); err != nil {
			return nil, err
		}
		if len(p) == 1 && p[0] == "transport" && v.Content[0].Kind == yaml.ScalarNode {
			p = []string{"transport", "kind"} // shorthand: transport: [mrc, roce]
		}
		if len(p) == 2 && p[0] == "run" && p[1] == "seed" {
			if err := checkDuplicateSeeds(v, field); err != nil {
				return nil, err
			}
		}
		axes = append(axes, axis{path: p, key: strings.Join(p, "."), written: k.Value, line: k.Line, values: v.Content})
		total = min(total*len(v.Content), MaxVariantsLimit+1)
	}
	if err := checkOverlaps(axes); err != nil {
		return nil, err
	}
	if total > max {
		return nil, &TooManyVariants{Count: total, Max: max, Line: sec.Line}
	}
	base := copyNode(root)
	base.Content = append(base.Content[:vi:vi], base.Content[vi+2:]...)
	name := DefaultName
	if ni := keyIndex(base, "name"); ni >= 0 && base.Content[ni+1].Kind == yaml.ScalarNode {
		name = base.Content[ni+1].Value
	}
	out := make([]Variant, 0, total)
	pick := make([]int, len(axes))
	seen := map[string]int{}
	for n := 0; n < total; n++ {
		rest := n
		for a := len(axes) - 1; a >= 0; a-- {
			pick[a] = rest % len(axes[a].values)
			rest /= len(axes[a].values)
		}
		doc := copyNode(base)
		var labels, suffix []string
		var params []Param
		seedKey := ""
		for a, ax := range axes {
			val := ax.values[pick[a]]
			if ax.setsSeed(val) {
				seedKey = ax.key
			}
			if err := setPath(doc, ax.path, copyNode(val)); err != nil {
				return nil, &FieldError{Path: "variants." + ax.key, Line: val.Line, Msg: err.Error()}
			}
			text := "#" + strconv.Itoa(pick[a]+1)
			if val.Kind == yaml.ScalarNode {
				text = val.Value
			}
			labels = append(labels, ax.key+"="+text)
			params = append(params, Param{Key: ax.key, Value: text})
			if ax.seeds {
				suffix = append(suffix, "s"+nameSafe(text))
			} else {
				suffix = append(suffix, nameSafe(text))
			}
		}
		vname := name + "-" + strings.Join(suffix, "-")
		if seen[vname]++; seen[vname] > 1 {
			vname = fmt.Sprintf("%s-%d", vname, seen[vname]) // two values that print alike
		}
		setPath(doc, []string{"name"}, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: vname})
		data, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("variants: %s: %w", strings.Join(labels, " "), err)
		}
		sc, err := ParseIn(data, dir)
		if err != nil {
			return nil, fmt.Errorf("variant %s: %w", strings.Join(labels, " "), err)
		}
		out = append(out, Variant{Label: strings.Join(labels, " "), Base: name, Values: params, SeedKey: seedKey, Scenario: sc})
	}
	return out, nil
}

// axis is one variants key: the path it sets, as the sweep labels it (key: "transport.kind"
// for the shorthand "transport") and as written, with its values.
type axis struct {
	path    []string
	key     string // the path joined with "." (SeedsKey for the seeds key)
	written string // the key as written in the file
	line    int    // the key's line
	values  []*yaml.Node
	seeds   bool // the seeds key: names get "s<seed>"
}

// setsSeed reports whether ax with value val sets run.seed: the seeds key, run.seed, or run
// with a mapping holding seed.
func (ax axis) setsSeed(val *yaml.Node) bool {
	switch {
	case ax.seeds, len(ax.path) == 2 && ax.path[0] == "run" && ax.path[1] == "seed":
		return true
	case len(ax.path) == 1 && ax.path[0] == "run":
		return val.Kind == yaml.MappingNode && keyIndex(val, "seed") >= 0
	}
	return false
}

// describe names ax as an error shows it: "variants.transport (line 9, shorthand for
// transport.kind)".
func (ax axis) describe() string {
	s := fmt.Sprintf("variants.%s (line %d", ax.written, ax.line)
	switch {
	case ax.seeds:
		s += ", which sets run.seed"
	case ax.written != ax.key:
		s += ", shorthand for " + ax.key
	}
	return s + ")"
}

// checkOverlaps rejects two variants keys that set the same field (the same key twice, which
// YAML keeps, or two spellings of one path such as transport and transport.kind, or seeds
// and run.seed) or where one sets a field inside the other's (traffic and traffic.0.bytes):
// each variant would take the later key's value while its name, label and sweep.csv showed
// both. A numeric path element compares by its value (traffic.00 is traffic.0).
func checkOverlaps(axes []axis) error {
	canon := func(p []string) string {
		c := make([]string, len(p))
		for i, part := range p {
			c[i] = part
			if j, err := strconv.Atoi(part); err == nil {
				c[i] = strconv.Itoa(j)
			}
		}
		return strings.Join(c, ".")
	}
	at := make(map[string]int, len(axes))
	for i, ax := range axes {
		c := canon(ax.path)
		j, dup := at[c]
		if !dup {
			at[c] = i
			continue
		}
		first := axes[j]
		msg := fmt.Sprintf("sets %s, as %s does; every variant would take this key's value while its name and sweep.csv show both; leave one out", c, first.describe())
		if first.written == ax.written {
			msg = fmt.Sprintf("is given twice (also at line %d); every variant would take this one's value while its name and sweep.csv show both; merge the two lists into one", first.line)
		}
		return &FieldError{Path: "variants." + ax.written, Line: ax.line, Msg: msg}
	}
	for i, ax := range axes {
		for n := len(ax.path) - 1; n >= 1; n-- {
			j, ok := at[canon(ax.path[:n])]
			if !ok {
				continue
			}
			outer := axes[j]
			a, b := outer, ax // report at the later key
			if j > i {
				a, b = ax, outer
			}
			return &FieldError{Path: "variants." + b.written, Line: b.line, Msg: fmt.Sprintf("overlaps %s: variants.%s replaces all of %s, inside which variants.%s sets %s, so one would silently override the other while the variant's name and sweep.csv show both; leave one out, or set %s in the values of variants.%s",
				a.describe(), outer.written, outer.key, ax.written, strings.Join(ax.path, "."), strings.Join(ax.path[n:], "."), outer.written)}
		}
	}
	return nil
}

// checkRunOut rejects a variants key that sets run.out (run.out itself, or run with a mapping
// value holding out): every variant writes into DIR/<variant name>, so the value would be
// ignored.
func checkRunOut(p []string, v *yaml.Node, field string, line int) error {
	const msg = "cannot vary run.out; each variant writes its results into DIR/<variant name> (--out sets DIR)"
	if len(p) >= 2 && p[0] == "run" && p[1] == "out" {
		return &FieldError{Path: field, Line: line, Msg: msg}
	}
	if len(p) == 1 && p[0] == "run" {
		for _, n := range v.Content {
			if n.Kind == yaml.MappingNode && keyIndex(n, "out") >= 0 {
				return &FieldError{Path: field, Line: n.Line, Msg: msg}
			}
		}
	}
	return nil
}

// checkDuplicateSeeds rejects a seed given twice in a list of seeds (v, the value of the seeds
// key or of run.seed): the two variants would be one run counted twice in sweep_stats.csv.
// Values that are not integers are left to the seed's own checks.
func checkDuplicateSeeds(v *yaml.Node, field string) error {
	first := map[uint64]int{}
	for i, n := range v.Content {
		s, err := strconv.ParseUint(n.Value, 10, 64)
		if n.Kind != yaml.ScalarNode || err != nil {
			continue
		}
		if j, dup := first[s]; dup {
			return &FieldError{Path: field, Line: n.Line, Msg: fmt.Sprintf("seed %d is given twice (items %d and %d); each seed is one run of every setting, so a repeat would count one run twice", s, j+1, i+1)}
		}
		first[s] = i
	}
	return nil
}

// keyIndex returns the index in m.Content of mapping m's key k, or -1.
func keyIndex(m *yaml.Node, k string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == k {
			return i
		}
	}
	return -1
}

// setPath replaces the node at path under root with v, creating mappings where keys are
// missing; a numeric element indexes a sequence. Errors: a path through a scalar, or a
// sequence index out of range.
func setPath(root *yaml.Node, path []string, v *yaml.Node) error {
	n := root
	for i, part := range path {
		last := i == len(path)-1
		switch n.Kind {
		case yaml.MappingNode:
			k := keyIndex(n, part)
			if k < 0 {
				child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				if last {
					child = v
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: part}, child)
				n = child
				continue
			}
			if last {
				n.Content[k+1] = v
				return nil
			}
			n = n.Content[k+1]
			if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
				*n = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
		case yaml.SequenceNode:
			j, err := strconv.Atoi(part)
			if err != nil || j < 0 || j >= len(n.Content) {
				return fmt.Errorf("%s: %q is not an index of the %d-element list", strings.Join(path[:i+1], "."), part, len(n.Content))
			}
			if last {
				n.Content[j] = v
				return nil
			}
			n = n.Content[j]
		default:
			return fmt.Errorf("%s is a value, not a mapping or list, so %s cannot be set", strings.Join(path[:i], "."), strings.Join(path, "."))
		}
	}
	return nil
}

// copyNode deep-copies a YAML node tree (aliases keep pointing at copies made on the way or
// at the original anchors, which are never modified).
func copyNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, ch := range n.Content {
		c.Content[i] = copyNode(ch)
	}
	return &c
}

// nameSafe keeps the characters a scenario name allows, replacing others with '_'.
func nameSafe(s string) string {
	b := []byte(s)
	for i, r := range b {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b[i] = '_'
		}
	}
	return string(b)
}

// SeedsKey is the variants key that sweeps run.seed: a list of seeds ([1, 2, 3]) or an
// inclusive range written "1..20". Its variants are named "<name>-...-s<seed>", and a
// sweep reports each figure's mean and 95% confidence interval over the seeds of variants
// that differ only in their seed (docs/outputs.md, sweep_stats.csv).
const SeedsKey = "seeds"

// seedValues expands the seeds key's value (a list of seeds or "A..B") into scalar nodes,
// checking each seed is an integer >= 1.
func seedValues(v *yaml.Node, field string) ([]*yaml.Node, error) {
	bad := func(msg string) error { return &FieldError{Path: field, Line: v.Line, Msg: msg} }
	var seeds []uint64
	switch v.Kind {
	case yaml.ScalarNode:
		lo, hi, ok := strings.Cut(v.Value, "..")
		a, errA := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, errB := strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		if !ok || errA != nil || errB != nil {
			return nil, bad(fmt.Sprintf("%q is not a list of seeds or a range; want e.g. 1..20 or [1, 2, 3]", v.Value))
		}
		if a < 1 || b < a {
			return nil, bad(fmt.Sprintf("%q: want 1 <= first <= last", v.Value))
		}
		if b-a >= MaxVariantsLimit {
			return nil, bad(fmt.Sprintf("%q is %d seeds, beyond the %d variants one file may hold", v.Value, b-a+1, MaxVariantsLimit))
		}
		for s := a; s <= b; s++ {
			seeds = append(seeds, s)
		}
	case yaml.SequenceNode:
		if len(v.Content) == 0 {
			return nil, bad("want a non-empty list of seeds or a range such as 1..20")
		}
		for _, n := range v.Content {
			s, err := strconv.ParseUint(n.Value, 10, 64)
			if n.Kind != yaml.ScalarNode || err != nil || s < 1 {
				return nil, &FieldError{Path: field, Line: n.Line, Msg: fmt.Sprintf("%s is not a seed; want an integer >= 1", describeNode(n))}
			}
			seeds = append(seeds, s)
		}
		if err := checkDuplicateSeeds(v, field); err != nil {
			return nil, err
		}
	default:
		return nil, bad("want a list of seeds or a range such as 1..20")
	}
	nodes := make([]*yaml.Node, len(seeds))
	for i, s := range seeds {
		nodes[i] = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(s, 10), Line: v.Line}
	}
	return nodes, nil
}
