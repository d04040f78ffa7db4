// Package scenario turns a user's YAML scenario into typed, validated Go values. Errors name
// the YAML path of the offending field, its line, the bad value and what is allowed.
package scenario

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lockstepsim/lockstep/sim"
	"go.yaml.in/yaml/v3"
)

// Limits that keep hostile input from exhausting the stack, CPU or memory.
const (
	// maxDepth bounds how deeply values (and merge keys) may nest while decoding or encoding.
	maxDepth = 1000
	// maxExpanded bounds how many YAML nodes may be decoded through aliases and merge keys
	// (a "billion laughs" document expands exponentially).
	maxExpanded = 1_000_000
	// maxShown bounds how many characters of a user's value or key an error message quotes.
	maxShown = 64
)

// FieldError is an error about one place in a scenario. Its Error method renders
//
//	path (line N): message
//
// dropping "(line N)" when Line is 0 and the path when Path is empty ("line N: message"). Path
// names the field the way a user reads the YAML: "topology.radix", "traffic[1].load",
// "labels.rack", or `labels["odd key"]` for keys that are not plain words; "" means the document
// as a whole.
type FieldError struct {
	Path string // YAML path of the field; "" for the whole document
	Line int    // 1-based line in the YAML input; 0 when unknown (e.g. from a validator)
	Msg  string // what is wrong, naming the bad value and what is allowed
}

// Error formats the error on one line as "path (line N): message".
func (e *FieldError) Error() string {
	switch {
	case e.Path != "" && e.Line > 0:
		return e.Path + " (line " + strconv.Itoa(e.Line) + "): " + e.Msg
	case e.Path != "":
		return e.Path + ": " + e.Msg
	case e.Line > 0:
		return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
	default:
		return e.Msg
	}
}

// Errorf returns a *FieldError for path with no line number and a message formatted as by
// fmt.Sprintf, for validators that check a decoded scenario:
//
//	scenario.Errorf("topology.radix", "%d is odd; want an even radix", r)
func Errorf(path string, format string, args ...any) error {
	return &FieldError{Path: path, Msg: oneLine(fmt.Sprintf(format, args...))}
}

// Decode parses data as a single YAML document and stores it in the value out points to,
// strictly: every mapping key must name a field (by its `yaml:"name"` tag) or the error lists the
// allowed ones; every value must have the field's kind and fit its range. out must be a non-nil
// pointer, normally to a struct.
//
// Supported Go types: structs (a mapping; only exported fields with a non-empty yaml tag name
// can be set, options such as ",omitempty" are ignored), pointers (allocated when the value is
// present), slices (a sequence), maps with string keys (a mapping), string, bool, every int and
// uint kind (range-checked), float32 and float64 (finite), and any type whose pointer implements
// encoding.TextUnmarshaler (given the scalar's text, e.g. sim.Time "2us", sim.Rate "800G",
// sim.Size "4KiB"). A quoted number or boolean ('2', "true") is a string and refused, as YAML
// and a JSON Schema read it; integers take 0x, 0o and 0b prefixes and "_" separators.
//
// Decoding overlays: fields absent from the YAML keep what out already holds (so out may be
// pre-filled with defaults), and a pointer that is already set is copied before being decoded
// into, never written through. A slice or map given in the YAML replaces the old one. A YAML null
// sets the zero value; an empty sequence or mapping sets a nil slice or map. Anchors, aliases and
// merge keys ("<<") work; explicit keys win over merged ones and earlier merge sources over later
// ones. Duplicate keys, more than one document, and an empty document are errors.
//
// Errors about the input are *FieldError values, on one line: "topology.radix (line 4): "abc"
// is not an integer", "line 3: did not find expected key" for YAML syntax. An error about out's
// Go type (unsupported kind, duplicate tag) is a plain error.
func Decode(data []byte, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("scenario.Decode: out must be a non-nil pointer, got %T", out)
	}
	if err := checkType(rv.Type().Elem()); err != nil {
		return err
	}
	root, err := parseDocument(data)
	if err != nil {
		return err
	}
	if c, ok := out.(documentChecker); ok {
		if err := c.checkDocument(root); err != nil {
			return err
		}
	}
	d := nodeDecoder{active: make(map[*yaml.Node]bool)}
	return d.decode(root, rv.Elem(), nil, false)
}

// documentChecker is implemented by a type (*Scenario) that refuses some documents from
// their node tree alone, before Decode builds a Go value per element: a list too long for
// the memory budget costs its YAML parse, not its decoding and resolving too.
type documentChecker interface {
	checkDocument(root *yaml.Node) error
}

// parseDocument reads data as exactly one non-empty YAML document and returns its root node.
func parseDocument(data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library turns its own failures into errors; this catches anything else so
		// that no input can crash the caller.
		if r := recover(); r != nil {
			root, err = nil, &FieldError{Msg: oneLine(fmt.Sprintf("cannot parse YAML: %v", r))}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{Msg: "empty scenario"}
		}
		return nil, syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(err)
	default:
		return nil, &FieldError{Line: extra.Line, Msg: `a second YAML document starts here ("---"); a scenario is a single document`}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, &FieldError{Msg: "empty scenario"}
	}
	return doc.Content[0], nil
}

// syntaxError converts a YAML parser error ("yaml: line 3: ...") to a *FieldError.
func syntaxError(err error) error {
	msg := oneLine(strings.TrimPrefix(err.Error(), "yaml: "))
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, rest[i+2:]
			}
		}
	}
	if line == 0 {
		msg = "invalid YAML: " + msg
	}
	return &FieldError{Line: line, Msg: msg}
}

// nodeDecoder walks a YAML node tree and a Go value together.
type nodeDecoder struct {
	depth    int                 // current nesting of decode and entries calls
	expanded int                 // nodes visited through aliases and merge keys
	active   map[*yaml.Node]bool // alias and merge targets being decoded (cycle guard)
}

var (
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
)

// enter accounts for one more level of nesting at node n; expanded says whether n is reached
// through an alias or merge key. Callers must call d.leave when done.
func (d *nodeDecoder) enter(n *yaml.Node, p *fieldPath, expanded bool) error {
	d.depth++
	if d.depth > maxDepth {
		return fieldErr(p, n, "nested more than %d levels deep", maxDepth)
	}
	if expanded {
		d.expanded++
		if d.expanded > maxExpanded {
			return fieldErr(p, n, "aliases expand to more than %d values", maxExpanded)
		}
	}
	return nil
}

func (d *nodeDecoder) leave() { d.depth-- }

// decode stores node n in v (addressable) at path p. expanded says whether n was reached
// through an alias or merge key.
func (d *nodeDecoder) decode(n *yaml.Node, v reflect.Value, p *fieldPath, expanded bool) error {
	if err := d.enter(n, p, expanded); err != nil {
		return err
	}
	defer d.leave()
	if n.Kind == yaml.AliasNode {
		t := n.Alias
		if t == nil {
			return fieldErr(p, n, "alias *%s has no anchor", n.Value)
		}
		if d.active[t] {
			return fieldErr(p, n, "alias *%s refers to a value that contains it", n.Value)
		}
		d.active[t] = true
		err := d.decode(t, v, p, true)
		delete(d.active, t)
		return err
	}
	if isNull(n) {
		v.SetZero()
		return nil
	}
	t := v.Type()
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if n.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice {
			return d.decodeTextList(n, v, p, expanded)
		}
		if n.Kind != yaml.ScalarNode {
			return fieldErr(p, n, "want a single value (%s), got %s", t, describeNode(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return textError(p, n, err)
		}
		if v.IsZero() && v.Kind() == reflect.Int64 && positiveFields[p.String()] {
			return fieldErr(p, n, "%s: must be > 0 (it is required; e.g. \"400Gbps\")", quoteValue(n.Value))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		nv := reflect.New(t.Elem())
		if !v.IsNil() {
			nv.Elem().Set(v.Elem())
		}
		if err := d.decode(n, nv.Elem(), p, expanded); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case reflect.Struct:
		return d.decodeStruct(n, v, p, expanded)
	case reflect.Slice:
		return d.decodeSlice(n, v, p, expanded)
	case reflect.Map:
		return d.decodeMap(n, v, p, expanded)
	}
	if n.Kind != yaml.ScalarNode {
		return fieldErr(p, n, "want %s, got %s", kindWant(t), describeNode(n))
	}
	s := n.Value
	if t.Kind() != reflect.String && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		// A quoted scalar is a string in YAML (and in JSON Schema, for an editor): a number or
		// boolean written so is refused rather than read as one, so the file means the same
		// to lockstep, to its schema and to any other YAML reader.
		return fieldErr(p, n, "%s is quoted, a string; want %s: write %s, unquoted", quoteValue(s), kindWant(t), shorten(s))
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		switch s {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			return fieldErr(p, n, "%s is not a boolean; want true or false", quoteValue(s))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, ok := parseInteger(s)
		if !ok {
			return fieldErr(p, n, "%s is not an integer", quoteValue(s))
		}
		bits := t.Bits()
		if !x.IsInt64() || v.OverflowInt(x.Int64()) {
			lo, hi := int64(math.MinInt64)>>(64-bits), int64(math.MaxInt64)>>(64-bits)
			return fieldErr(p, n, "%s does not fit in %s (%d to %d)", shorten(s), t.Kind(), lo, hi)
		}
		v.SetInt(x.Int64())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		x, ok := parseInteger(s)
		if !ok {
			return fieldErr(p, n, "%s is not an integer", quoteValue(s))
		}
		if !x.IsUint64() || v.OverflowUint(x.Uint64()) {
			hi := uint64(math.MaxUint64) >> (64 - t.Bits())
			return fieldErr(p, n, "%s does not fit in %s (0 to %d)", shorten(s), t.Kind(), hi)
		}
		v.SetUint(x.Uint64())
	case reflect.Float32, reflect.Float64:
		f, err := parseFloat(s, t.Bits())
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return fieldErr(p, n, "%s does not fit in %s", shorten(s), t.Kind())
			}
			return fieldErr(p, n, "%s is not a finite number", quoteValue(s))
		}
		v.SetFloat(f)
	default:
		// checkType rejects every other kind before decoding starts.
		return fmt.Errorf("scenario.Decode: %s: cannot decode into %s", p.String(), t)
	}
	return nil
}

// textError is the error of a value its type's UnmarshalText refused: the value (unless the
// parser's message already quotes it), then the message; a value beyond its type's range
// (*sim.RangeError) at a field with a smaller limit of its own names that limit instead.
func textError(p *fieldPath, n *yaml.Node, err error) error {
	var re *sim.RangeError
	if errors.As(err, &re) && !re.Below {
		if lim, ok := fieldLimit(p.String()); ok {
			return fieldErr(p, n, "%s is out of range; allowed up to %s", quoteValue(n.Value), lim)
		}
	}
	msg := err.Error()
	if q := quoteValue(n.Value); !strings.Contains(msg, q) {
		msg = q + ": " + msg
	}
	return fieldErr(p, n, "%s", msg)
}

// misplaced points fields written at a plausible but wrong place to where they go.
var misplaced = map[string]string{
	"transport.qps_per_peer": "RoCE settings go under transport.roce: transport: {kind: roce, roce: {qps_per_peer: 4}}",
	"transport.dcqcn":        "DCQCN settings go under transport.roce: transport: {kind: roce, roce: {dcqcn: {...}}}",
	"transport.rto":          "RoCE settings go under transport.roce: transport: {kind: roce, roce: {rto: 1ms}}",
	"transport.retry_count":  "RoCE settings go under transport.roce: transport: {kind: roce, roce: {retry_count: 7}}",
	"transport.pfc":          "PFC is a switch setting: fabric: {pfc: {...}}",
	"transport.ev":           "MRC settings go under transport.mrc: transport: {kind: mrc, mrc: {ev: {...}}}",
	"transport.cc":           "MRC settings go under transport.mrc: transport: {kind: mrc, mrc: {cc: ...}}",
	"fabric.dcqcn":           "DCQCN is the sender's rate control: transport: {kind: roce, roce: {dcqcn: {...}}}",
	"fabric.ecn":             "ECN marking is per queue: fabric: {switch_queue: {ecn: {enabled: true, kmin: 100KB, kmax: 400KB, pmax: 0.2}}}",
	"topology.tiers":         "Clos settings go under topology.clos: topology: {clos: {tiers: 2, ...}}",
	"topology.radix":         "Clos settings go under topology.clos: topology: {clos: {radix: 64, ...}}",
	"topology.planes":        "Clos settings go under topology.clos: topology: {clos: {planes: 8, ...}}",
}

// mappingHints suggest, for a mapping written as a single value, the mapping meant, given the
// value when it is a plain word ("" otherwise): "transport: mrc" -> "want a mapping such as
// {kind: mrc}".
var mappingHints = map[string]func(word string) string{
	"transport": func(w string) string {
		if w == "" {
			w = workloadTransport()
		}
		if w == "" {
			w = TransportRaw
		}
		return "{kind: " + w + "}"
	},
}

// presenceRecorder is implemented (on the pointer) by scenario structs that must tell a value
// written explicitly from one left out, where the zero value is also meaningful (`enabled:
// false` against no enabled key at all, `bytes: 0` against no bytes). After decoding a mapping
// into such a struct, Decode calls recordPresence with a function reporting whether the mapping
// gives a non-null value at a key path below it (aliases and merge keys resolved).
type presenceRecorder interface {
	recordPresence(given func(path ...string) bool)
}

// keyTaker is implemented (on the pointer) by a scenario struct whose mapping takes keys
// beyond its fields: Transport takes each registered transport's kind, its block. Decode
// decodes such a key's value into a copy of what takeKey returns, with the same strictness
// and error paths as a field of that type, and hands the result to setKey.
type keyTaker interface {
	// takeKey reports whether the struct takes key and returns the value held under it now:
	// a pointer of the type to decode into, nil (typed) when none.
	takeKey(key string) (cur any, ok bool)
	// setKey stores the value decoded under key (a nil pointer for a YAML null).
	setKey(key string, v any)
	// takenKeys lists the keys takeKey accepts, for an unknown key's "allowed".
	takenKeys() []string
}

// decodeTaken decodes the value of a key the struct takes (keyTaker) at path p; ok is false
// when the struct does not take it.
func (d *nodeDecoder) decodeTaken(kt keyTaker, e mapEntry, p *fieldPath, expanded bool) (ok bool, err error) {
	cur, ok := kt.takeKey(e.key.Value)
	if !ok {
		return false, nil
	}
	pv := reflect.New(reflect.TypeOf(cur)).Elem()
	pv.Set(reflect.ValueOf(cur))
	if err := checkType(pv.Type()); err != nil {
		return true, err
	}
	if err := d.decode(e.val, pv, p, expanded || e.expanded); err != nil {
		return true, err
	}
	kt.setKey(e.key.Value, pv.Interface())
	return true, nil
}

// allowedKeys is the "allowed" list of an unknown key in a struct's mapping: its field names
// and the keys it takes (keyTaker), sorted.
func allowedKeys(info *structInfo, kt keyTaker) string {
	if kt == nil {
		return info.allowed
	}
	names := make([]string, 0, len(info.fields))
	for _, f := range info.fields {
		names = append(names, f.name)
	}
	names = append(names, kt.takenKeys()...)
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func (d *nodeDecoder) decodeStruct(n *yaml.Node, v reflect.Value, p *fieldPath, expanded bool) error {
	if n.Kind != yaml.MappingNode {
		if hint, ok := mappingHints[p.String()]; ok {
			word := ""
			if n.Kind == yaml.ScalarNode && isWord(n.Value) {
				word = n.Value
			}
			return fieldErr(p, n, "want a mapping such as %s, got %s", hint(word), describeNode(n))
		}
		return fieldErr(p, n, "want a mapping, got %s", describeNode(n))
	}
	info := structInfoOf(v.Type())
	ents, err := d.entries(n, p)
	if err != nil {
		return err
	}
	var kt keyTaker
	if v.CanAddr() {
		kt, _ = v.Addr().Interface().(keyTaker)
	}
	for _, e := range ents {
		fp := &fieldPath{parent: p, key: e.key.Value, index: -1}
		i, ok := info.byName[e.key.Value]
		if !ok && kt != nil {
			if taken, err := d.decodeTaken(kt, e, fp, expanded); taken || err != nil {
				if err != nil {
					return err
				}
				continue
			}
		}
		if !ok {
			if len(info.fields) == 0 {
				return fieldErr(fp, e.key, "unknown field; this mapping takes no fields")
			}
			if hint, ok := misplaced[fp.String()]; ok {
				return fieldErr(fp, e.key, "unknown field here; %s", hint)
			}
			return fieldErr(fp, e.key, "unknown field; allowed: %s", allowedKeys(info, kt))
		}
		if err := d.decode(e.val, v.Field(info.fields[i].index), fp, expanded || e.expanded); err != nil {
			return err
		}
	}
	if v.CanAddr() {
		if r, ok := v.Addr().Interface().(presenceRecorder); ok {
			r.recordPresence(func(path ...string) bool { return d.given(n, path) })
		}
	}
	return nil
}

// given reports whether mapping n holds a non-null value at the key path (aliases and merge
// keys resolved, as decoding sees them).
func (d *nodeDecoder) given(n *yaml.Node, path []string) bool {
	for _, k := range path {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return false
		}
		ents, err := d.entries(n, nil)
		if err != nil {
			return false
		}
		var next *yaml.Node
		for _, e := range ents {
			if e.key.Value == k {
				next = e.val
				break
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return !isNull(n)
}

// isWord reports whether s is a short plain word (letters, digits, '_', '-'), safe to show
// inside a suggested YAML mapping.
func isWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// decodeTextList stores sequence n in v, a slice type read from text (scenario.HostList):
// each item is a single value, read by the type's UnmarshalText on its own, and the lists
// they give are joined in order ([1, 8-15] is 1, 8, 9, ..., 15). An empty sequence sets nil.
func (d *nodeDecoder) decodeTextList(n *yaml.Node, v reflect.Value, p *fieldPath, expanded bool) error {
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, item := range n.Content {
		ip := &fieldPath{parent: p, index: i}
		if item.Kind == yaml.SequenceNode || item.Kind == yaml.MappingNode || isNull(item) {
			return fieldErr(ip, item, "want one item of %s (a single value), got %s", v.Type(), describeNode(item))
		}
		one := reflect.New(v.Type()).Elem()
		if err := d.decode(item, one, ip, expanded); err != nil {
			return err
		}
		out = reflect.AppendSlice(out, one)
	}
	if out.Len() == 0 {
		v.SetZero()
		return nil
	}
	v.Set(out)
	return nil
}

func (d *nodeDecoder) decodeSlice(n *yaml.Node, v reflect.Value, p *fieldPath, expanded bool) error {
	if n.Kind != yaml.SequenceNode {
		return fieldErr(p, n, "want a list, got %s", describeNode(n))
	}
	if len(n.Content) == 0 {
		v.SetZero()
		return nil
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, item := range n.Content {
		if err := d.decode(item, s.Index(i), &fieldPath{parent: p, index: i}, expanded); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *nodeDecoder) decodeMap(n *yaml.Node, v reflect.Value, p *fieldPath, expanded bool) error {
	if n.Kind != yaml.MappingNode {
		return fieldErr(p, n, "want a mapping, got %s", describeNode(n))
	}
	ents, err := d.entries(n, p)
	if err != nil {
		return err
	}
	if len(ents) == 0 {
		v.SetZero()
		return nil
	}
	t := v.Type()
	m := reflect.MakeMapWithSize(t, len(ents))
	for _, e := range ents {
		ev := reflect.New(t.Elem()).Elem()
		if err := d.decode(e.val, ev, &fieldPath{parent: p, key: e.key.Value, index: -1}, expanded || e.expanded); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(e.key.Value).Convert(t.Key()), ev)
	}
	v.Set(m)
	return nil
}

// mapEntry is one key-value pair of a mapping after merge keys are applied.
type mapEntry struct {
	key, val *yaml.Node // key is a scalar (aliases resolved)
	expanded bool       // reached through an alias or merge key
}

// entries lists mapping n's pairs: its own keys first (duplicates are an error), then keys
// merged in with "<<" that it does not already have, earlier merge sources first.
func (d *nodeDecoder) entries(n *yaml.Node, p *fieldPath) ([]mapEntry, error) {
	var out []mapEntry
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return nil, fieldErr(p, k, "a mapping key must be a single value, got %s", describeNode(k))
		}
		if first, dup := seen[k.Value]; dup {
			return nil, fieldErr(&fieldPath{parent: p, key: k.Value, index: -1}, k, "duplicate key (first at line %d)", first.Line)
		}
		seen[k.Value] = k
		out = append(out, mapEntry{key: k, val: val})
	}
	for _, m := range merges {
		srcs := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		for _, src := range srcs {
			merged, err := d.mergeSource(src, p)
			if err != nil {
				return nil, err
			}
			for _, e := range merged {
				if _, ok := seen[e.key.Value]; !ok {
					seen[e.key.Value] = e.key
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// mergeSource returns the entries of one "<<" source, which must be a mapping or an alias of one.
func (d *nodeDecoder) mergeSource(src *yaml.Node, p *fieldPath) ([]mapEntry, error) {
	if err := d.enter(src, p, true); err != nil {
		return nil, err
	}
	defer d.leave()
	t := src
	if src.Kind == yaml.AliasNode && src.Alias != nil {
		t = src.Alias
	}
	if t.Kind != yaml.MappingNode {
		return nil, fieldErr(p, src, `merge key "<<" wants a mapping or a list of mappings, got %s`, describeNode(src))
	}
	if d.active[t] {
		return nil, fieldErr(p, src, `merge key "<<" refers to a mapping that contains it`)
	}
	d.active[t] = true
	ents, err := d.entries(t, p)
	delete(d.active, t)
	if err != nil {
		return nil, err
	}
	d.expanded += len(ents)
	if d.expanded > maxExpanded {
		return nil, fieldErr(p, src, "aliases expand to more than %d values", maxExpanded)
	}
	for i := range ents {
		ents[i].expanded = true
	}
	return ents, nil
}

// isNull reports whether n is a YAML null (resolving an alias).
func isNull(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// parseInteger parses a YAML integer: optional sign, optional 0x/0o/0b prefix, digits with
// optional "_" separators. Very long digit strings give a value too big for any Go integer.
func parseInteger(s string) (*big.Int, bool) {
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	base := 10
	if len(s) > 2 && s[0] == '0' {
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 10 {
			s = s[2:]
		}
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return nil, false
	}
	digits := strings.ReplaceAll(s, "_", "")
	for _, c := range digits {
		var val int
		switch {
		case c >= '0' && c <= '9':
			val = int(c - '0')
		case c >= 'a' && c <= 'f':
			val = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			val = int(c-'A') + 10
		default:
			return nil, false
		}
		if val >= base {
			return nil, false
		}
	}
	x := new(big.Int)
	if len(strings.TrimLeft(digits, "0")) > 100 {
		x.Lsh(big.NewInt(1), 400) // beyond every integer kind; avoids parsing huge input
	} else if _, ok := x.SetString(digits, base); !ok {
		return nil, false
	}
	if neg {
		x.Neg(x)
	}
	return x, true
}

// parseFloat parses a finite decimal (or Go hexadecimal) floating-point number with optional "_"
// separators. Infinities and NaN are rejected; out-of-range values give strconv.ErrRange.
func parseFloat(s string, bits int) (float64, error) {
	if s == "" || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") {
		return 0, strconv.ErrSyntax
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
			return 0, strconv.ErrRange
		}
		if !errors.Is(err, strconv.ErrRange) {
			return 0, strconv.ErrSyntax
		}
		// Underflow to zero or a denormal: accept the rounded value.
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, strconv.ErrSyntax
	}
	return f, nil
}

// kindWant describes what a scalar type expects, for "want X, got Y" errors.
func kindWant(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "an integer"
	}
}

// describeNode names a node for error messages: "a mapping", "a list", or the quoted scalar.
func describeNode(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return quoteValue(n.Value)
	}
	return "nothing"
}

// fieldErr returns a *FieldError at path p and node n's line.
func fieldErr(p *fieldPath, n *yaml.Node, format string, args ...any) error {
	return &FieldError{Path: p.String(), Line: n.Line, Msg: oneLine(fmt.Sprintf(format, args...))}
}

// fieldPath is where the decoder is in the document, kept as a chain of steps and rendered
// only for an error; nil is the document root.
type fieldPath struct {
	parent *fieldPath
	key    string // mapping key, when index < 0
	index  int    // list index, or -1
}

// String renders p as "a.b[2].c" (see joinKey).
func (p *fieldPath) String() string {
	if p == nil {
		return ""
	}
	if p.index >= 0 {
		return p.parent.String() + "[" + strconv.Itoa(p.index) + "]"
	}
	return joinKey(p.parent.String(), p.key)
}

// shorten cuts s to maxShown runes, marking the cut with "…".
func shorten(s string) string {
	if utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	r := []rune(s)
	return string(r[:maxShown]) + "…"
}

// quoteValue returns s shortened and Go-quoted, safe to print on one line.
func quoteValue(s string) string { return strconv.Quote(shorten(s)) }

// oneLine replaces line breaks so that an error message stays on one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}

// joinKey appends mapping key k to path p: "a.b" for plain words, `a["odd key"]` otherwise.
func joinKey(p, k string) string {
	plain := k != "" && utf8.RuneCountInString(k) <= maxShown
	for i := 0; plain && i < len(k); i++ {
		c := k[i]
		plain = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	switch {
	case !plain:
		return p + "[" + quoteValue(k) + "]"
	case p == "":
		return k
	default:
		return p + "." + k
	}
}

// fieldInfo is one YAML-settable struct field.
type fieldInfo struct {
	name      string
	index     int
	omitEmpty bool
	flow      bool
	// follows is the field's follows tag: the YAML path of the setting it takes when left
	// out (Encode writes a comment saying so and what that setting is).
	follows string
}

// structInfo describes a struct type's YAML-settable fields.
type structInfo struct {
	fields  []fieldInfo    // declaration order
	byName  map[string]int // index into fields
	allowed string         // sorted names, comma-separated
	err     error          // a problem with the tags
}

var structInfos sync.Map // reflect.Type -> *structInfo

// structInfoOf returns t's fields: exported ones with a yaml tag whose name is not "" or "-".
func structInfoOf(t reflect.Type) *structInfo {
	if si, ok := structInfos.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: make(map[string]int)}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || name == "-" {
			continue
		}
		fi := fieldInfo{name: name, index: i, follows: f.Tag.Get("follows")}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "":
			case "omitempty":
				fi.omitEmpty = true
			case "flow":
				fi.flow = true
			default:
				if si.err == nil {
					si.err = fmt.Errorf("scenario: %s.%s: unsupported yaml tag option %q", t, f.Name, o)
				}
			}
		}
		if _, dup := si.byName[name]; dup && si.err == nil {
			si.err = fmt.Errorf("scenario: %s: two fields are tagged yaml:%q", t, name)
		}
		si.byName[name] = len(si.fields)
		si.fields = append(si.fields, fi)
		names = append(names, name)
	}
	sort.Strings(names)
	si.allowed = strings.Join(names, ", ")
	actual, _ := structInfos.LoadOrStore(t, si)
	return actual.(*structInfo)
}

var checkedTypes sync.Map // reflect.Type -> error (nil when fine)

// checkType reports whether Decode and Encode support t and every type reachable from it
// through settable fields, pointers, slices and maps.
func checkType(t reflect.Type) error {
	if err, ok := checkedTypes.Load(t); ok {
		if err == nil {
			return nil
		}
		return err.(error)
	}
	err := checkTypeRec(t, make(map[reflect.Type]bool))
	checkedTypes.Store(t, err)
	return err
}

func checkTypeRec(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] {
		return nil
	}
	seen[t] = true
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return nil
	case reflect.Pointer, reflect.Slice:
		return checkTypeRec(t.Elem(), seen)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Errorf("scenario: unsupported type %s: map keys must be strings", t)
		}
		return checkTypeRec(t.Elem(), seen)
	case reflect.Struct:
		si := structInfoOf(t)
		if si.err != nil {
			return si.err
		}
		for _, f := range si.fields {
			if err := checkTypeRec(t.Field(f.index).Type, seen); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("scenario: unsupported type %s", t)
}
