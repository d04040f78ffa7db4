package report

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// permLinks is links.csv of hosts sending at line rate (100G) on planes planes for n intervals
// of dt us, every T0 uplink too; host 0's plane-1 NIC port stops (a failed link: no row) from
// interval failAt on.
func permLinks(hosts, planes, n int, dt float64, failAt int) string {
	var b strings.Builder
	b.WriteString(linksHead)
	full := int(100 * dt * 1e3 / 8) // bytes at 100 Gb/s in dt us
	for k := range n {
		t0, t1 := float64(k)*dt, float64(k+1)*dt
		for pl := range planes {
			for h := range hosts {
				if h == 0 && pl == 1 && k >= failAt {
					continue
				}
				fmt.Fprintf(&b, "%g,%g,h%d.p%d,h%d,%d,-1,100,100,%d,4096,0\n", t0, t1, h, pl, h, pl, full)
			}
			for u := range hosts / 2 {
				fmt.Fprintf(&b, "%g,%g,p%d.t0-0.up%d,p%d.t0-0,%d,0,100,90,%d,%d,0\n", t0, t1, pl, u, pl, pl, full*9/10, 1000*u)
			}
		}
	}
	return b.String()
}

// TestUtilFailureDip: one failed NIC link out of hosts per plane shows as a dip of its plane's
// line of at least a tenth of the zoomed axis, from 16 hosts to 128 (1/128 of the plane).
func TestUtilFailureDip(t *testing.T) {
	for _, hosts := range []int{16, 32, 64, 128} {
		t.Run(fmt.Sprint(hosts), func(t *testing.T) {
			l, err := readLinks(fileLinks, strings.NewReader(permLinks(hosts, 2, 40, 1, 20)))
			if err != nil {
				t.Fatal(err)
			}
			if len(l.classes) != 2 || l.classes[0].name() != "NIC ports" || l.classes[1].name() != "T0 up" {
				t.Fatalf("classes %v", l.classes)
			}
			n := l.shown(40)
			groups := colGroups(n, maxLinePts/2)
			vals := make([][]float64, 2)
			for pi := range 2 {
				for _, g := range groups {
					vals[pi] = append(vals[pi], l.classUtil(0, pi, g[0], g[1]))
				}
			}
			if vals[0][30] != 1 || math.Abs(vals[1][30]-(1-1/float64(hosts))) > 1e-9 || vals[1][10] != 1 {
				t.Fatalf("plane utilisation before and after the failure: %v %v", vals[0], vals[1])
			}
			lo, hi, zoomed := utilZoom(vals)
			dip := (vals[0][30] - vals[1][30]) / (hi - lo)
			if !zoomed || dip < 0.1 {
				t.Errorf("axis %v to %v (zoomed %v): the dip is %.3f of its height, want >= 0.1", lo, hi, zoomed, dip)
			}
			if u := l.classUtil(1, 0, 0, n); math.Abs(u-0.9) > 1e-6 {
				t.Errorf("T0 up utilisation %v, want 0.9", u)
			}
		})
	}
}

// TestUtilZoomWide: a class whose planes differ widely, or that is idle, keeps a zero-based
// axis.
func TestUtilZoomWide(t *testing.T) {
	for _, tc := range []struct {
		vals   [][]float64
		lo, hi float64
	}{
		{[][]float64{{0, 0.9, 0.9, 0}, {0, 0.2, 0.3, 0}}, 0, 0.99},
		{[][]float64{{0, 0, 0}}, 0, 1},
		{[][]float64{{0.1, 0.5, 0.1}}, 0, 0.55},
	} {
		lo, hi, zoomed := utilZoom(tc.vals)
		if zoomed || lo != tc.lo || math.Abs(hi-tc.hi) > 1e-9 {
			t.Errorf("utilZoom(%v) = %v, %v, %v; want %v, %v, not zoomed", tc.vals, lo, hi, zoomed, tc.lo, tc.hi)
		}
	}
}

// TestShownBins: the plots take links.csv's intervals up to the traffic's end, never fewer
// than minBins when links.csv has that many there, and say when it has fewer.
func TestShownBins(t *testing.T) {
	for _, tc := range []struct {
		dt, tEnd   float64
		intervals  int // in links.csv (the drain included)
		shown      int
		coarseNote bool
	}{
		{8, 616, 80, 77, false},     // a 616 us sweep at 8 us intervals: 77 columns
		{400, 616, 3, 2, true},      // links.csv at 400 us: 2, and the caption says so
		{16, 197.741, 13, 13, true}, // the default scenario's 16 us
		{1, 5000, 6000, 5000, false},
		{2, 0, 40, 40, false}, // no traffic end known: every interval
	} {
		l, err := readLinks(fileLinks, strings.NewReader(permLinks(4, 1, tc.intervals, tc.dt, tc.intervals)))
		if err != nil {
			t.Fatal(err)
		}
		n := l.shown(tc.tEnd)
		if n != tc.shown {
			t.Errorf("dt %v, traffic to %v: %d intervals shown, want %d", tc.dt, tc.tEnd, n, tc.shown)
		}
		if g := len(colGroups(n, maxLinePts/2)); g < min(n, minBins) {
			t.Errorf("dt %v: %d line steps from %d intervals", tc.dt, g, n)
		}
		if g := len(colGroups(n, maxHeatCol)); g < min(n, minBins) {
			t.Errorf("dt %v: %d heatmap columns from %d intervals", tc.dt, g, n)
		}
		if note := coarseNote(l, n, tc.tEnd); (note != "") != tc.coarseNote {
			t.Errorf("dt %v, traffic to %v: coarse note %q, want one: %v", tc.dt, tc.tEnd, note, tc.coarseNote)
		}
	}
}

// TestTimeEnd: the time plots end at the traffic's end (duration_us, else the JCT), a failure
// after it still in view, and the captions say when the drain is cut.
func TestTimeEnd(t *testing.T) {
	for _, tc := range []struct {
		summary string
		end     float64
		drain   string // in the note; "" for none
	}{
		{`{"duration_us": 296, "end_us": 1303.5}`, 296, "the drain after it, to 1303.5 us (end_us), is not shown"},
		{`{"duration_us": 100, "end_us": 100}`, 100, ""},
		{`{"end_us": 50, "transport": {"jct_us": 40}}`, 40, "(summary.json transport.jct_us)"},
		{`{"end_us": 50}`, 50, ""},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{fileSummary: tc.summary})
		r, err := loadRun(dir, "")
		if err != nil {
			t.Fatal(err)
		}
		end, drain := r.tEnd()
		if end != tc.end || (tc.drain == "") != (drain == "") || !strings.Contains(drain, tc.drain) {
			t.Errorf("%s: end %v, drain %q; want %v, %q", tc.summary, end, drain, tc.end, tc.drain)
		}
	}
	// A failure after the traffic stays in view.
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{fileSummary: `{"duration_us": 100, "end_us": 300}`,
		fileFaults: "entry,cycle,action,target,at_us,end_us\n0,0,down,h0.p1,150,\n"})
	r, err := loadRun(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := r.tEnd(); end != 150 {
		t.Errorf("end %v with a failure at 150 us, want 150", end)
	}
}

// TestQueueRowsPerTier: every tier that queued gets its max row and its deepest ports, the
// rows bounded whatever the port count.
func TestQueueRowsPerTier(t *testing.T) {
	for _, ports := range []int{2, 10, 500} {
		var b strings.Builder
		b.WriteString(linksHead)
		for k := range 4 {
			for tier := -1; tier <= 2; tier++ {
				for p := range ports {
					node, port := fmt.Sprintf("p0.t%d-0", tier), fmt.Sprintf("p0.t%d-0.down%d", tier, p)
					if tier < 0 {
						node, port = fmt.Sprintf("h%d", p), fmt.Sprintf("h%d.p0", p)
					}
					fmt.Fprintf(&b, "%d,%d,%s,%s,0,%d,100,1,10,%d,0\n", k, k+1, port, node, tier, 100*(p+1)+k)
				}
			}
		}
		l, err := readLinks(fileLinks, strings.NewReader(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		per := min(8, max(3, maxQueueRows/len(l.tiers)-1))
		rows, maxQ := l.queueRows(4, per)
		if want := 4 * (1 + min(ports, per)); len(rows) != want {
			t.Fatalf("%d ports per tier: %d rows, want %d", ports, len(rows), want)
		}
		if maxQ != float64(100*ports+3) {
			t.Errorf("deepest %v, want %v", maxQ, 100*ports+3)
		}
		for i, tier := range []string{"NIC ports", "T0", "T1", "T2"} {
			r := rows[i*(1+min(ports, per))]
			if r.label != "max over "+tier || r.peak != maxQ {
				t.Errorf("row %+v, want the max over %s", r.label, tier)
			}
			if next := rows[i*(1+min(ports, per))+1]; next.peak != maxQ {
				t.Errorf("%s: first port %s peaks at %v, want the deepest %v", tier, next.label, next.peak, maxQ)
			}
		}
	}
}

// TestHottestLinks: the table lists the ports with the highest mean and peak utilisation by
// name, each once, with both ranks.
func TestHottestLinks(t *testing.T) {
	var b strings.Builder
	b.WriteString(linksHead)
	// 30 ports; port p sends p/30 of line rate in every interval but one burst at line rate
	// on port 3 (the highest peak, a low mean).
	for k := range 10 {
		for p := range 30 {
			tx := 100 * 1e3 / 8 * float64(p) / 30
			if p == 3 && k == 4 {
				tx = 100 * 1e3 / 8
			}
			fmt.Fprintf(&b, "%d,%d,p0.t0-0.up%d,p0.t0-0,0,0,100,0,%g,0,0\n", k, k+1, p, tx)
		}
	}
	l, err := readLinks(fileLinks, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tab := hottestTable(l, l.shown(10), 10)
	if len(tab.Rows) != 11 {
		t.Fatalf("%d rows, want 11 (10 by mean and by peak, and port 3 by peak)", len(tab.Rows))
	}
	if r := tab.Rows[0]; r[0].Text != "1" || r[1].Text != "2" || r[2].Text != "p0.t0-0.up29" {
		t.Errorf("first row %v", r)
	}
	if r := tab.Rows[10]; r[0].Text != "-" || r[1].Text != "1" || r[2].Text != "p0.t0-0.up3" || r[7].Text != "100" {
		t.Errorf("last row %v, want port 3 ranked first by peak (100%%)", r)
	}
	// The same bytes over a run twice as long (idle after 10 us, no rows there): half the mean.
	long := hottestTable(l, l.shown(20), 20)
	if a, b := tab.Rows[0][6].Text, long.Rows[0][6].Text; a == b {
		t.Errorf("mean %s both over 10 us and over 20 us; want it halved over the longer run", a)
	}
}

func TestPortDir(t *testing.T) {
	for port, want := range map[string]string{
		"p0.t0-1.up3": "up", "p3.t1-0.down12": "down", "p0.r2.t0-1.up0": "up", "h3.p2": "",
		"c1.r.x+": "", "p0.t0-1.upx": "", "p0.t0-1.up": "", "up3": "up",
	} {
		if got := portDir(port); got != want {
			t.Errorf("portDir(%q) = %q, want %q", port, got, want)
		}
	}
}

// TestCompareCollectives: collective runs are compared by busbw against size and get no FCT
// section; a traffic run among them brings it back.
func TestCompareCollectives(t *testing.T) {
	sweep, two := filepath.Join("testdata", "runs", "coll-sweep"), filepath.Join("testdata", "runs", "coll-mrc")
	traffic := filepath.Join("testdata", "runs", "mrc-incast-fail")
	for _, tc := range []struct {
		dirs    []string
		fct     bool
		entries []string
	}{
		{[]string{sweep, two}, false, []string{"sweep: ar", "sweep: ag", "coll-mrc: dp", "coll-mrc: tp"}},
		{[]string{sweep, traffic}, true, []string{"No collectives.csv: mrc-incast-fail"}},
	} {
		out := filepath.Join(t.TempDir(), "compare.html")
		if err := WriteCompare(out, nil, tc.dirs); err != nil {
			t.Fatal(err)
		}
		page := readFileString(t, out)
		if !strings.Contains(page, `<svg class="plot" id="busbw"`) {
			t.Errorf("%v: no busbw plot", tc.dirs)
		}
		if got := strings.Contains(page, `id="sec-fct-cdf"`); got != tc.fct {
			t.Errorf("%v: FCT section %v, want %v", tc.dirs, got, tc.fct)
		}
		for _, e := range tc.entries {
			if !strings.Contains(page, e) {
				t.Errorf("%v: page lacks %q", tc.dirs, e)
			}
		}
	}
}

func TestReadCollectivesErrors(t *testing.T) {
	head := "name,size_bytes,busbw_GBps,model_us\n"
	for _, tc := range []struct{ body, field string }{
		{"a,0,1,\n", "size_bytes"},
		{"a,x,1,\n", "size_bytes"},
		{"a,8,-1,\n", "busbw_GBps"},
		{"a,8,1,-2\n", "model_us"},
		{",8,1,\n", "name"},
	} {
		_, err := readCollectives(fileCollectives, strings.NewReader(head+tc.body))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Line != 2 {
			t.Errorf("%q: error %v, want one about %s on line 2", tc.body, err, tc.field)
		}
	}
	d, err := readCollectives(fileCollectives, strings.NewReader(head+"b,8,1,\na,8,2,3\nb,16,4,\n"))
	if err != nil || fmt.Sprint(d.names) != "[b a]" || len(d.rows["b"]) != 2 || !math.IsNaN(d.rows["b"][0].model) {
		t.Errorf("read %+v, %v", d, err)
	}
}
