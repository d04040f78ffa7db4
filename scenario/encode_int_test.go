package scenario

import (
	"strings"
	"testing"
)

// digitText marshals to a text that is a plain integer, as training.ZeROStage and
// training.RankRange do.
type digitText int

func (d digitText) MarshalText() ([]byte, error) {
	if d < 0 {
		return []byte("0-7"), nil
	}
	return []byte(strings.Repeat("1", int(d))), nil
}

// TestEncodeDecimalText: a TextMarshaler whose text is a plain integer is written unquoted
// (zero: 1, ranks: [17, 20-23]), any other text as a string.
func TestEncodeDecimalText(t *testing.T) {
	type doc struct {
		A digitText   `yaml:"a"`
		B []digitText `yaml:"b,flow"`
	}
	out, err := Encode(doc{A: 1, B: []digitText{2, -1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(out), "a: 1\nb: [11, 0-7]\n"; got != want {
		t.Errorf("Encode: %q; want %q", got, want)
	}
	for _, c := range []struct {
		in   string
		want bool
	}{{"1", true}, {"-12", true}, {"0", true}, {"", false}, {"-", false}, {"1.5", false}, {"0-7", false}, {"1e3", false}, {strings.Repeat("9", 19), false}} {
		if got := isDecimal([]byte(c.in)); got != c.want {
			t.Errorf("isDecimal(%q) = %v; want %v", c.in, got, c.want)
		}
	}
}

// TestEncodeFollows: a field tagged follows that omitempty leaves out is written as a comment
// naming the setting it follows and that setting's value (a nil block on the way reads as
// off), before the mapping's next key or, when it is the last, at the end of the mapping's last
// line; a field
// written, or one without the tag, draws none; and the comment does not change what Decode
// reads back.
func TestEncodeFollows(t *testing.T) {
	type ar struct {
		Enabled bool `yaml:"enabled"`
	}
	type fab struct {
		AR *ar `yaml:"ar,omitempty"`
	}
	type ooo struct {
		Enabled *bool `yaml:"enabled,omitempty" follows:"fab.ar.enabled"`
		Window  int   `yaml:"window"`
	}
	type last struct {
		Window  int   `yaml:"window"`
		Enabled *bool `yaml:"enabled,omitempty" follows:"fab.ar.enabled"`
	}
	type plain struct {
		Enabled *bool `yaml:"enabled,omitempty"`
		Window  int   `yaml:"window"`
	}
	type doc struct {
		Fab   fab   `yaml:"fab"`
		OOO   ooo   `yaml:"ooo"`
		Last  last  `yaml:"last"`
		Plain plain `yaml:"plain"`
	}
	on, off := true, false
	for _, c := range []struct {
		name string
		in   doc
		want []string // substrings, in order
		not  string   // must not appear ("" : no check)
	}{
		{"on", doc{Fab: fab{AR: &ar{Enabled: true}}, OOO: ooo{Window: 8}},
			[]string{"ooo:\n  # enabled left out: follows fab.ar.enabled, in force true\n  window: 8\n"}, ""},
		{"off", doc{Fab: fab{AR: &ar{}}, OOO: ooo{Window: 8}},
			[]string{"  # enabled left out: follows fab.ar.enabled, in force false\n  window: 8\n"}, ""},
		{"block left out", doc{OOO: ooo{Window: 8}},
			[]string{"  # enabled left out: follows fab.ar.enabled, in force false\n  window: 8\n"}, ""},
		{"written true", doc{Fab: fab{AR: &ar{}}, OOO: ooo{Enabled: &on}},
			[]string{"ooo:\n  enabled: true\n  window: 0\n"}, "ooo:\n  #"},
		{"written false", doc{Fab: fab{AR: &ar{Enabled: true}}, OOO: ooo{Enabled: &off}},
			[]string{"ooo:\n  enabled: false\n"}, "ooo:\n  #"},
		{"last field", doc{Fab: fab{AR: &ar{Enabled: true}}, Last: last{Window: 4}},
			[]string{"last:\n  window: 4 # enabled left out: follows fab.ar.enabled, in force true\n"}, ""},
		{"no tag", doc{Fab: fab{AR: &ar{Enabled: true}}, OOO: ooo{Enabled: &on}},
			[]string{"plain:\n  window: 0\n"}, "plain:\n  #"},
	} {
		out, err := Encode(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := string(out)
		at := 0
		for _, w := range c.want {
			i := strings.Index(s[at:], w)
			if i < 0 {
				t.Errorf("%s: Encode wrote\n%s\nwant, in order, %q", c.name, s, w)
				break
			}
			at += i + len(w)
		}
		if c.not != "" && strings.Contains(s, c.not) {
			t.Errorf("%s: Encode wrote\n%s\nwith %q", c.name, s, c.not)
		}
		var back doc
		if err := Decode(out, &back); err != nil {
			t.Fatalf("%s: Decode of\n%s: %v", c.name, s, err)
		}
		again, _ := Encode(back)
		if string(again) != s {
			t.Errorf("%s: re-encoded\n%s\nwant\n%s", c.name, again, s)
		}
	}
}
