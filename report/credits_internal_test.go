package report

import (
	"slices"
	"strings"
	"testing"
)

const creditsHead = "port,node,rate_gbps,blocked_us,blocked_share,blocked_spells,tx_blocks,buffer_per_vl_bytes,peak_held_bytes,fc_packets\n"

// TestCreditsFigureData: credits.csv's ports are ranked by blocked time (ties by name), the
// plot draws at most maxCreditBars of them with a note counting the rest, and a file with no
// blocked port or no rows gives a note, not a plot.
func TestCreditsFigureData(t *testing.T) {
	var b strings.Builder
	b.WriteString(creditsHead)
	for i := range 20 {
		// p00..p19 blocked 0, 10, 20, ... us, except p05 and p06 tied.
		us := float64(i * 10)
		if i == 6 {
			us = 50
		}
		b.WriteString(strings.Join([]string{"p" + string(rune('a'+i)), "n", "100", fmtNum(us), "0.1", "3", "1", "0", "0", "0"}, ",") + "\n")
	}
	d, err := readCredits(fileCredits, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, p := range d.ports[:4] {
		order = append(order, p.port)
	}
	if d.rows != 20 || d.blocked != 19 || d.totalUs != 1890 || !slices.Equal(order, []string{"pt", "ps", "pr", "pq"}) {
		t.Fatalf("rows %d, blocked %d, total %v, top %v", d.rows, d.blocked, d.totalUs, order)
	}
	if d.ports[13].port != "pf" || d.ports[14].port != "pg" {
		t.Errorf("tie at 50 us ordered %s, %s; want by name", d.ports[13].port, d.ports[14].port)
	}
	f, err := creditsFigure(d)
	if err != nil || f.Note != "" || f.SVG == "" || f.Table == nil || len(f.Table.Rows) != maxCreditBars || !strings.Contains(f.Table.Note, "4 more blocked ports") {
		t.Fatalf("figure %q, note %q, table %+v, err %v", f.Caption, f.Note, f.Table, err)
	}
	if f.Table.Rows[0][0].Text != "pt" || f.Table.Rows[0][2].Text != "190" {
		t.Errorf("first row %+v; want pt, 190 us", f.Table.Rows[0])
	}
	for _, tc := range []struct{ body, note string }{
		{creditsHead, "no rows"},
		{creditsHead + "h0.p0,h0,100,0,0,0,10,0,0,0\n", "no port of the 1 in credits.csv was ever blocked"},
	} {
		d, err := readCredits(fileCredits, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if f, err := creditsFigure(d); err != nil || f.SVG != "" || !strings.Contains(f.Note, tc.note) {
			t.Errorf("%q: note %q, svg %d B, err %v; want a note saying %q", tc.body, f.Note, len(f.SVG), err, tc.note)
		}
	}
	if _, err := readCredits(fileCredits, strings.NewReader(creditsHead+"h0.p0,h0,100,-1,0,0,10,0,0,0\n")); err == nil || !strings.Contains(err.Error(), "blocked_us") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative blocked_us: error %v; want one naming the column", err)
	}
	if _, err := readCredits(fileCredits, strings.NewReader(creditsHead+",h0,100,1,0,0,10,0,0,0\n")); err == nil || !strings.Contains(err.Error(), "empty port name") {
		t.Errorf("empty port: error %v", err)
	}
}

func FuzzReadCredits(f *testing.F) {
	f.Add(creditsHead + "h0.p0,h0,100,1.5,0.1,2,10,0,0,0\nh1.p0,h1,100,0,0,0,10,0,0,0\n")
	f.Add(creditsHead + "x,,1,1e300,1e300,1e300,0,0,0,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := readCredits(fileCredits, strings.NewReader(in))
		checkReadErr(t, fileCredits, err)
		if err != nil {
			return
		}
		if !slices.IsSortedFunc(d.ports, func(a, b creditPort) int { return -cmpFloat(a.blockedUs, b.blockedUs) }) {
			t.Fatal("ports not ranked by blocked time")
		}
		if _, err := creditsFigure(d); err != nil {
			t.Fatal(err)
		}
	})
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
