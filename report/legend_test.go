package report

import (
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestWrapText: lines fit the width, keep every word in order, and a word wider than the width
// is cut.
func TestWrapText(t *testing.T) {
	sty := legendStyle(legendFontMax)
	for _, tc := range []struct {
		s     string
		w     vg.Length
		lines int
	}{
		{"detected (first loss retx)", legendW - vg.Points(8) - textIndent(sty), 2},
		{"recovered", vg.Points(100), 1},
		{"", vg.Points(100), 1},
		{"a-very-long-run-name-without-any-space-in-it-at-all", vg.Points(60), 4},
	} {
		lines := wrapText(sty, tc.s, tc.w)
		if len(lines) != tc.lines {
			t.Errorf("%q in %v: %d lines %q, want %d", tc.s, tc.w, len(lines), lines, tc.lines)
		}
		for _, l := range lines {
			if sty.Width(l) > tc.w {
				t.Errorf("%q: line %q is %v wide, over %v", tc.s, l, sty.Width(l), tc.w)
			}
		}
		if got := strings.Join(lines, " "); !strings.Contains(tc.s, " ") && strings.Join(lines, "") != tc.s || strings.Contains(tc.s, " ") && got != tc.s {
			t.Errorf("%q wrapped into %q", tc.s, lines)
		}
	}
}

// TestLegendFit: a legend fits its column by wrapping and a smaller font, and says when it
// cannot.
func TestLegendFit(t *testing.T) {
	var l legend
	for _, name := range []string{"failure (to its end)", "detected (first loss retx)", "recovered"} {
		l.Add(name)
	}
	w := legendW - vg.Points(8)
	if size, ok := l.fitColumn(w, vg.Points(60)); !ok || size != legendFontMax {
		t.Errorf("three entries in 60 pt: size %v, fits %v", size, ok)
	}
	for range 40 {
		l.Add("run")
	}
	if _, ok := l.fitColumn(w, panelH); ok {
		t.Error("43 entries fit a panel's height")
	}
	if h := l.gridHeight(figWidth - vg.Points(48)); !(h > 0 && h < panelH) {
		t.Errorf("43 short entries below the plot take %v", h)
	}
}
