package scenario

import (
	"encoding"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode checks that Decode never panics, that its input errors are one-line *FieldErrors,
// and that whatever it accepts survives Encode and a second Decode unchanged.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		decGoodYAML,
		"name: a\n",
		"topology: {hosts: 4, planes: 300}\n",
		"topology:\n  planez: 1\n",
		"run: {duration: 5}\n",
		"traffic:\n  - load: 0.5\n  - load: x\n",
		"traffic: [{weights: [1, 2, 3e-3], senders: [0x1, 0b1, 0o7, 1_000]}]\n",
		"labels: {a: b, 'c d': '', yes: no, '~': null, '': x}\n",
		"faults: {links: [a, b], at: 1us, mtbf: {x: 1h}, extra: {k: {kind: a, down: 1}}}\n",
		"faults: ~\nlabels: {}\ntraffic: []\n",
		"topology: &t {hosts: 2}\ntraffic: [&a {load: 1}, *a, {<<: *a, ecn: true}]\n",
		"labels: {<<: [{a: '1'}, {b: '2'}], c: '3'}\n",
		"&a {name: x, labels: *a}\n",
		"name: a\n---\nname: b\n",
		"", "~", "---\n", "- 1\n", "x", "{", "name: [", "\t", "\x00\xff",
		"name: a\nname: b\n",
		"name: root\nkids: [{name: a, next: {name: b, kids: [{}]}}, ~]\nnext: ~\n",
		"&a {name: x, kids: [*a]}\n",
		"&a {name: x, <<: *a}\n",
		"{next: {next: {next: {next: {name: deep}}}}}\n",
		"name: \"\\x00\\u2028\\r\\n\\t end \"\n",
		"name: |\n  line 1\n   line 2\n\nlabels: {a: >-\n    folded\n    text\n}\n",
		"topology: {link: 1.6Tbps, latency: 1.5ms, oversub: 1e-40}\nrun: {seed: 18446744073709551615, limit: -9223372036854775808}\n",
		"traffic: [{size: 1.5KiB, start: 0, load: -0.0}]\n",
		"run: {limit: !!int 5, seed: !!str 7}\nname: !custom x\n",
		"topology: {link: 1234567890123456789, latency: 9007199254740993ps}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkRoundTrip[tScenario](t, data)
		checkRoundTrip[tTree](t, data) // a recursive type, for alias cycles and deep nesting
	})
}

// checkRoundTrip decodes data into a T and checks the FuzzDecode properties.
func checkRoundTrip[T any](t *testing.T, data []byte) {
	t.Helper()
	var a T
	err := Decode(data, &a)
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Fatalf("error %T is not a *FieldError: %v", err, err)
		}
		if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\r\n") {
			t.Fatalf("error is empty or not one line: %q", msg)
		}
		return
	}
	out, err := Encode(&a)
	if err != nil {
		t.Fatalf("Encode(%+v): %v", a, err)
	}
	var b T
	if err := Decode(out, &b); err != nil {
		t.Fatalf("decoding Encode's output: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(a, b) {
		if v, ok := lossyText(reflect.ValueOf(a)); ok {
			// The type's own MarshalText/UnmarshalText pair loses information (sim.Time above
			// 2^53 ps before sim's exact decimal parsing); nothing Decode or Encode could fix.
			t.Logf("%s %v does not survive its own MarshalText/UnmarshalText", v.Type(), v)
			return
		}
		t.Fatalf("round trip changed the value\nfirst:  %+v\nsecond: %+v\nyaml:\n%s", a, b, out)
	}
}

// lossyText finds a value inside v whose type's MarshalText output, read back by its
// UnmarshalText, does not give the same value.
func lossyText(v reflect.Value) (reflect.Value, bool) {
	t := v.Type()
	if m, ok := v.Interface().(encoding.TextMarshaler); ok && reflect.PointerTo(t).Implements(textUnmarshalerType) {
		text, err := m.MarshalText()
		p := reflect.New(t)
		if err != nil || p.Interface().(encoding.TextUnmarshaler).UnmarshalText(text) != nil {
			return v, !v.IsZero() // zero values that do not parse are written as null
		}
		return v, !reflect.DeepEqual(p.Elem().Interface(), v.Interface())
	}
	switch t.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			return lossyText(v.Elem())
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if t.Field(i).IsExported() {
				if l, ok := lossyText(v.Field(i)); ok {
					return l, true
				}
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if l, ok := lossyText(v.Index(i)); ok {
				return l, true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if l, ok := lossyText(it.Value()); ok {
				return l, true
			}
		}
	}
	return v, false
}
