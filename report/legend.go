package report

import (
	"image/color"
	"strings"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Legend geometry. A legend is laid out by the report rather than by gonum's plot.Legend,
// which draws each entry on one line however long and past the space it has: here a long
// name wraps, the font shrinks to fit, and a legend too long for the column right of its plot
// goes below the plot in as many columns as fit, however many entries it has.
const (
	legendFontMax = 8.5 // points
	legendFontMin = 6.5
	legendThumbW  = 18 // points: a thumbnail's width
	legendGap     = 2  // points between entries
)

// legend is a plot's key: each entry a name and the thumbnails that show its style.
type legend struct {
	entries []legendEntry
}

type legendEntry struct {
	text   string
	thumbs []plot.Thumbnailer
}

// Add adds an entry named name drawn with thumbs.
func (l *legend) Add(name string, thumbs ...plot.Thumbnailer) {
	l.entries = append(l.entries, legendEntry{text: name, thumbs: thumbs})
}

// legendStyle is the legend's text at size points.
func legendStyle(size float64) text.Style {
	return text.Style{Font: sans(vg.Points(size)), Handler: plot.DefaultTextHandler, Color: color.Black}
}

// lineHeight is the height of one line of text in sty.
func lineHeight(sty text.Style) vg.Length { return sty.FontExtents().Height }

// textIndent is how far an entry's text starts right of its thumbnail's left edge.
func textIndent(sty text.Style) vg.Length { return vg.Points(legendThumbW) + sty.Width(" ") }

// wrapText breaks s into lines no wider than w at spaces; a word wider than w on its own is
// cut between characters. It always returns at least one line.
func wrapText(sty text.Style, s string, w vg.Length) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		try := word
		if cur != "" {
			try = cur + " " + word
		}
		if sty.Width(try) <= w {
			cur = try
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
			cur = ""
		}
		for sty.Width(word) > w && utf8.RuneCountInString(word) > 1 {
			// The longest prefix that fits (at least one character).
			cut := 0
			for i := range word {
				if i > 0 && sty.Width(word[:i]) > w {
					break
				}
				cut = i
			}
			if cut == 0 {
				_, cut = utf8.DecodeRuneInString(word)
			}
			lines = append(lines, word[:cut])
			word = word[cut:]
		}
		cur = word
	}
	if cur != "" || len(lines) == 0 {
		lines = append(lines, cur)
	}
	return lines
}

// entryLines wraps every entry for a text width of w at size points.
func (l *legend) entryLines(size float64, w vg.Length) [][]string {
	sty := legendStyle(size)
	out := make([][]string, len(l.entries))
	for i, e := range l.entries {
		out[i] = wrapText(sty, e.text, w)
	}
	return out
}

// columnHeight is the height of entries stacked in one column, wrapped to the column width w.
func (l *legend) columnHeight(size float64, w vg.Length) vg.Length {
	sty := legendStyle(size)
	var h vg.Length
	for i, ls := range l.entryLines(size, w-textIndent(sty)) {
		if i > 0 {
			h += vg.Points(legendGap)
		}
		h += lineHeight(sty) * vg.Length(len(ls))
	}
	return h
}

// fitColumn returns the largest font size (legendFontMin to legendFontMax, in half points) at
// which the entries, wrapped to width w, stack within height h; ok is false when none does.
func (l *legend) fitColumn(w, h vg.Length) (size float64, ok bool) {
	for size = legendFontMax; size >= legendFontMin; size -= 0.5 {
		if l.columnHeight(size, w) <= h {
			return size, true
		}
	}
	return legendFontMin, false
}

// drawEntry draws entry i with its lines from the top-left corner (x, top) and returns its
// height.
func (l *legend) drawEntry(c draw.Canvas, sty text.Style, i int, lines []string, x, top vg.Length) vg.Length {
	lh := lineHeight(sty)
	icon := &draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: x, Y: top - lh},
		Max: vg.Point{X: x + vg.Points(legendThumbW), Y: top},
	}}
	for _, t := range l.entries[i].thumbs {
		t.Thumbnail(icon)
	}
	ext := sty.FontExtents()
	for k, line := range lines {
		// Handler.Draw puts the baseline of a one-line text at pt.Y - ascent + size.
		base := top - vg.Length(k)*lh - ext.Ascent
		c.FillText(sty, vg.Point{X: x + textIndent(sty), Y: base + ext.Ascent - sty.Font.Size}, line)
	}
	return lh * vg.Length(len(lines))
}

// drawColumn draws the entries top down in c at size points, wrapped to c's width.
func (l *legend) drawColumn(c draw.Canvas, size float64) {
	sty := legendStyle(size)
	lines := l.entryLines(size, c.Max.X-c.Min.X-textIndent(sty))
	top := c.Max.Y
	for i := range l.entries {
		top -= l.drawEntry(c, sty, i, lines[i], c.Min.X, top) + vg.Points(legendGap)
	}
}

// gridLayout places the entries in columns across width w, left to right and then down, at
// legendFontMax: as many columns as the widest name allows (a name wider than the whole width
// wraps). It returns the column count, each entry's lines and each row's height.
func (l *legend) gridLayout(w vg.Length) (cols int, lines [][]string, rowH []vg.Length) {
	sty := legendStyle(legendFontMax)
	colGap := vg.Points(12)
	var widest vg.Length
	for _, e := range l.entries {
		widest = max(widest, sty.Width(e.text))
	}
	cols = int((w + colGap) / (textIndent(sty) + widest + colGap))
	cols = min(max(cols, 1), max(len(l.entries), 1))
	colW := (w+colGap)/vg.Length(cols) - colGap
	lines = l.entryLines(legendFontMax, colW-textIndent(sty))
	for i, ls := range lines {
		if i%cols == 0 {
			rowH = append(rowH, 0)
		}
		r := len(rowH) - 1
		rowH[r] = max(rowH[r], lineHeight(sty)*vg.Length(len(ls)))
	}
	return cols, lines, rowH
}

// gridHeight is the height of the legend laid out in columns across width w.
func (l *legend) gridHeight(w vg.Length) vg.Length {
	if len(l.entries) == 0 {
		return 0
	}
	_, _, rowH := l.gridLayout(w)
	var h vg.Length
	for _, r := range rowH {
		h += r + vg.Points(legendGap)
	}
	return h
}

// drawGrid draws the legend in columns across c, from its top.
func (l *legend) drawGrid(c draw.Canvas) {
	if len(l.entries) == 0 {
		return
	}
	w := c.Max.X - c.Min.X
	cols, lines, rowH := l.gridLayout(w)
	colGap := vg.Points(12)
	colW := (w+colGap)/vg.Length(cols) - colGap
	sty := legendStyle(legendFontMax)
	top := c.Max.Y
	for i := range l.entries {
		r, k := i/cols, i%cols
		l.drawEntry(c, sty, i, lines[i], c.Min.X+vg.Length(k)*(colW+colGap), top)
		if k == cols-1 || i == len(l.entries)-1 {
			top -= rowH[r] + vg.Points(legendGap)
		}
	}
}
