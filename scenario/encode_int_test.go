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
