package scenario

import (
	"bytes"
	"encoding"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Encode writes v as YAML that Decode reads back to an equal value; it is meant for writing a
// fully resolved scenario. It follows the same rules as Decode: every struct field with a
// `yaml:"name"` tag, in declaration order (",omitempty" leaves out a zero or empty field, ",flow"
// writes a list or mapping on one line); types implementing encoding.TextMarshaler (by value or
// pointer) as their text ("2us", "800Gbps", "4KiB"); lists of single values on one line; map
// keys sorted; a nil pointer as null, a nil slice as [] and a nil map as {}; strings quoted when
// YAML would read them as something else. A zero value whose text its own UnmarshalText rejects
// (sim.Rate's "0bps") is written as null, which Decode reads as zero. Infinite and NaN floats are
// written as .inf and .nan, which Decode rejects.
//
// A field tagged follows:"path" (a YAML path from the root, "fabric.adaptive_routing.enabled")
// that ",omitempty" leaves out takes that setting's value: a comment before the mapping's next
// key (or at the end of its last line) says so and gives the value in force, "enabled left out: follows
// fabric.adaptive_routing.enabled, in force true"; Decode ignores it.
//
// A type that implements encoding.TextUnmarshaler but not encoding.TextMarshaler is written by
// its kind, which Decode may not read back.
func Encode(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return nil, fmt.Errorf("scenario.Encode: nil value")
	}
	if err := checkType(rv.Type()); err != nil {
		return nil, err
	}
	e := &encoder{root: rv}
	n, err := e.encodeValue(rv, "", 0)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("scenario.Encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("scenario.Encode: %w", err)
	}
	return buf.Bytes(), nil
}

// keyGiver is implemented (on the value) by a scenario struct that writes keys beyond its
// fields, the ones it takes on decoding (keyTaker): Transport's blocks.
type keyGiver interface {
	// extraKeys returns the keys to write, in order, with their values, and the field they
	// follow ("" or a field not written: after the fields).
	extraKeys() (after string, keys []string, vals []any)
}

// encoder is one Encode call: root is the value encoded, which a field tagged follows reads
// (followedValue).
type encoder struct {
	root reflect.Value
}

// encodeValue converts v, at path p and nesting depth, to a YAML node.
func (e *encoder) encodeValue(v reflect.Value, p string, depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("scenario.Encode: %s: nested more than %d levels deep (a pointer cycle?)", p, maxDepth)
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nullNode(), nil
		}
		return e.encodeValue(v.Elem(), p, depth+1)
	}
	if m, ok := textMarshaler(v); ok {
		b, err := m.MarshalText()
		if err != nil {
			return nil, fmt.Errorf("scenario.Encode: %s: %w", p, err)
		}
		if v.IsZero() && !parsesBack(t, b) {
			// sim.Rate writes 0 as "0bps" but rejects it on reading; null reads back as 0.
			return nullNode(), nil
		}
		if isDecimal(b) {
			// A text that is a plain integer (a ZeRO stage "1", a rank "17") is written as
			// one, not as the quoted string "1"; the type's UnmarshalText reads it back.
			return scalarNode("!!int", string(b)), nil
		}
		return strNode(string(b)), nil
	}
	switch t.Kind() {
	case reflect.Struct:
		si := structInfoOf(t)
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		var after string
		var keys []string
		var vals []any
		if g, ok := v.Interface().(keyGiver); ok {
			after, keys, vals = g.extraKeys()
		}
		extra := func() error { // the keys beyond the fields, once
			for i, k := range keys {
				ev := reflect.ValueOf(vals[i])
				if err := checkType(ev.Type()); err != nil {
					return err
				}
				c, err := e.encodeValue(ev, joinKey(p, k), depth+1)
				if err != nil {
					return err
				}
				n.Content = append(n.Content, strNode(k), c)
			}
			keys = nil
			return nil
		}
		var note []string // comments for fields left out that follow another setting
		for _, f := range si.fields {
			fv := v.Field(f.index)
			if f.omitEmpty && isEmpty(fv) {
				if f.follows != "" {
					note = append(note, fmt.Sprintf("%s left out: follows %s, in force %s", f.name, f.follows, e.followedValue(f.follows)))
				}
				continue
			}
			c, err := e.encodeValue(fv, joinKey(p, f.name), depth+1)
			if err != nil {
				return nil, err
			}
			if f.flow && (c.Kind == yaml.SequenceNode || c.Kind == yaml.MappingNode) {
				c.Style |= yaml.FlowStyle
			}
			k := strNode(f.name)
			if len(note) > 0 {
				k.HeadComment, note = strings.Join(note, "\n"), nil
			}
			n.Content = append(n.Content, k, c)
			if f.name == after {
				if err := extra(); err != nil {
					return nil, err
				}
			}
		}
		if err := extra(); err != nil {
			return nil, err
		}
		if len(note) > 0 { // the fields left out were the last: on the last line
			at := n
			if len(n.Content) > 0 {
				at = n.Content[len(n.Content)-1]
			}
			at.LineComment = strings.Join(note, "; ")
		}
		return n, nil
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for i := 0; i < v.Len(); i++ {
			c, err := e.encodeValue(v.Index(i), p+"["+strconv.Itoa(i)+"]", depth+1)
			if err != nil {
				return nil, err
			}
			if c.Kind != yaml.ScalarNode {
				n.Style = 0
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		if v.Len() == 0 {
			n.Style = yaml.FlowStyle
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			c, err := e.encodeValue(v.MapIndex(k), joinKey(p, k.String()), depth+1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, strNode(k.String()), c)
		}
		return n, nil
	case reflect.String:
		return strNode(v.String()), nil
	case reflect.Bool:
		return scalarNode("!!bool", strconv.FormatBool(v.Bool())), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return scalarNode("!!int", strconv.FormatInt(v.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return scalarNode("!!int", strconv.FormatUint(v.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			return scalarNode("!!float", ".nan"), nil
		case math.IsInf(f, 1):
			return scalarNode("!!float", ".inf"), nil
		case math.IsInf(f, -1):
			return scalarNode("!!float", "-.inf"), nil
		}
		// No tag: a whole number such as 1 is written as "1", which Decode reads as a float.
		return scalarNode("", strconv.FormatFloat(f, 'g', -1, t.Bits())), nil
	}
	return nil, fmt.Errorf("scenario.Encode: %s: unsupported type %s", p, t)
}

// textMarshaler returns v's encoding.TextMarshaler, through a pointer when the method has a
// pointer receiver (copying v when it is not addressable).
func textMarshaler(v reflect.Value) (encoding.TextMarshaler, bool) {
	t := v.Type()
	if t.Implements(textMarshalerType) {
		return v.Interface().(encoding.TextMarshaler), true
	}
	if reflect.PointerTo(t).Implements(textMarshalerType) {
		if !v.CanAddr() {
			c := reflect.New(t).Elem()
			c.Set(v)
			v = c
		}
		return v.Addr().Interface().(encoding.TextMarshaler), true
	}
	return nil, false
}

// parsesBack reports whether text, read by type t's UnmarshalText, gives the zero value of t.
// It is true when t has no UnmarshalText.
func parsesBack(t reflect.Type, text []byte) bool {
	if !reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true
	}
	p := reflect.New(t)
	if err := p.Interface().(encoding.TextUnmarshaler).UnmarshalText(text); err != nil {
		return false
	}
	return p.Elem().IsZero()
}

// isEmpty reports whether v counts as empty for ",omitempty": the zero value, or a slice or
// map of length 0.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	}
	return v.IsZero()
}

// strNode returns a string scalar styled so that it reads back as the same string.
func strNode(s string) *yaml.Node {
	n := scalarNode("!!str", s)
	switch {
	case yaml11Bools[s]:
		n.Style = yaml.DoubleQuotedStyle // plain, YAML 1.1 readers would see a boolean
	case strings.Contains(s, "\n") && !literalSafe(s):
		// The library would pick a literal block, which cannot hold every string (a line
		// holding only a tab does not read back).
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// literalSafe reports whether multi-line s is plain enough for a literal block ("|"): no line
// starts or ends with white space or holds a tab or carriage return.
func literalSafe(s string) bool {
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" {
			continue
		}
		if strings.ContainsAny(line, "\t\r") || line[0] == ' ' || line[len(line)-1] == ' ' {
			return false
		}
	}
	return true
}

// yaml11Bools are the plain words YAML 1.1 reads as booleans (YAML 1.2 reads them as strings).
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "n": true, "N": true, "no": true, "No": true, "NO": true,
	"on": true, "On": true, "ON": true, "off": true, "Off": true, "OFF": true,
}

// scalarNode returns a scalar node; an empty tag lets the YAML library choose.
func scalarNode(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

// nullNode returns a YAML null.
func nullNode() *yaml.Node { return scalarNode("!!null", "null") }

// isDecimal reports whether b is a plain decimal integer: an optional minus sign and 1 to 18
// digits.
func isDecimal(b []byte) bool {
	if len(b) > 0 && b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// followedValue is the text of the setting at path (YAML keys joined by dots, from the
// encoded root: "fabric.adaptive_routing.enabled") that a field tagged follows:"path" takes
// when left out: a nil pointer on the way reads as its type's zero value (a block left out,
// its settings off). "?" when path names no struct field.
func (e *encoder) followedValue(path string) string {
	v := e.root
	for _, key := range strings.Split(path, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v = reflect.Zero(v.Type().Elem())
				continue
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return "?"
		}
		i, ok := structInfoOf(v.Type()).byName[key]
		if !ok {
			return "?"
		}
		v = v.Field(structInfoOf(v.Type()).fields[i].index)
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "null"
		}
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}
