package transport

import (
	"bytes"
	"strings"
	"testing"
)

// TestRoundFrac: fractions of line rate keep 3 decimals from 0.01 up and 3 significant digits
// below, so a 1/N share (an N -> 1 incast's sender) is never shown as 0; FormatFrac prints
// them the same way.
func TestRoundFrac(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want float64
		str  string
	}{
		{0, 0, "0.000"},
		{1, 1, "1.000"},
		{0.8512, 0.851, "0.851"},
		{0.0803, 0.08, "0.080"},
		{0.01, 0.01, "0.010"},
		{0.0099949, 0.00999, "0.00999"},
		{0.0099951, 0.01, "0.010"},
		{1.0 / 1023, 0.000978, "0.000978"},
		{0.968 / 1023, 0.000946, "0.000946"},
		{1.0 / 131072, 7.63e-06, "7.63e-06"},
	} {
		if got := RoundFrac(c.x); got != c.want {
			t.Errorf("RoundFrac(%v) = %v; want %v", c.x, got, c.want)
		}
		if got := FormatFrac(c.x); got != c.str {
			t.Errorf("FormatFrac(%v) = %q; want %q", c.x, got, c.str)
		}
	}
}

// TestPrintActive: the throughput-while-all-active line shows small shares with their
// significant digits (not 0.000) and, below 0.1 of line with several flows, the flows' sum
// in NIC line rates; a large share or a single flow prints no sum, an unmeasured one nothing.
func TestPrintActive(t *testing.T) {
	for _, c := range []struct {
		name       string
		s          Summary
		want, nope []string
	}{
		{"1023 -> 1", Summary{ActiveUntilUs: 169039.1, ActiveThroughputMeanOfLine: 0.000946, ActiveThroughputMinOfLine: 0.000301, ActiveFlows: 1023, HeaderOverheadPct: 3.17},
			[]string{"mean 0.000946, min 0.000301 of line rate", "the 1023 flows together 0.968 of one NIC's line rate"}, []string{"0.000,"}},
		{"permutation", Summary{ActiveUntilUs: 87.5, ActiveThroughputMeanOfLine: 0.872, ActiveThroughputMinOfLine: 0.812, ActiveFlows: 32},
			[]string{"mean 0.872, min 0.812 of line rate"}, []string{"together"}},
		{"one flow", Summary{ActiveUntilUs: 10, ActiveThroughputMeanOfLine: 0.05, ActiveThroughputMinOfLine: 0.05, ActiveFlows: 1},
			[]string{"mean 0.050"}, []string{"together"}},
		{"not measured", Summary{}, nil, []string{"throughput"}},
	} {
		var b bytes.Buffer
		PrintActive(&b, &c.s)
		out := b.String()
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: %q; want it to contain %q", c.name, out, w)
			}
		}
		for _, w := range c.nope {
			if strings.Contains(out, w) {
				t.Errorf("%s: %q; want no %q", c.name, out, w)
			}
		}
	}
}
