package report

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

const linksHead = "start_us,end_us,port,node,plane,tier,rate_gbps,util_pct,tx_bytes,queue_max_bytes,drops\n"

// checkContiguous fails unless the intervals follow each other without holes from 0.
func checkContiguous(t *testing.T, ivs []interval) {
	t.Helper()
	prev := 0.0
	for i, iv := range ivs {
		if math.Abs(iv.start-prev) > 0.0021 || !(iv.end > iv.start) {
			t.Fatalf("interval %d %+v after %v: a hole or an overlap", i, iv, prev)
		}
		prev = iv.end
	}
}

// TestLinksIdleIntervals: links.csv has no row for an interval in which nothing happened; the
// throughput drops to 0 there instead of ramping from one busy interval to the next.
func TestLinksIdleIntervals(t *testing.T) {
	var b strings.Builder
	b.WriteString(linksHead)
	// Plane 0's NIC port busy in intervals 1, 2 and 7 of 2 us (250,000 B = 1000 Gb/s), plane 1's
	// in 2 only; a T0 port queues in 7. Intervals 0, 3 to 6 and 8 have no row.
	for _, k := range []int{1, 2, 7} {
		fmt.Fprintf(&b, "%d,%d,h0.p0,h0,0,-1,1000,100,250000,0,0\n", 2*k, 2*k+2)
	}
	b.WriteString("4,6,h0.p1,h0,1,-1,800,100,125000,0,0\n")
	b.WriteString("14,16,p0.t0-0.down1,p0.t0-0,0,0,800,0,0,4096,0\n")
	l, err := readLinks(fileLinks, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.intervals) != 8 {
		t.Fatalf("%d intervals, want 8 (0 to 16 us in steps of 2): %v", len(l.intervals), l.intervals)
	}
	checkContiguous(t, l.intervals)
	wantTx := [][]float64{{0, 250000, 250000, 0, 0, 0, 0, 250000}, {0, 0, 125000, 0, 0, 0, 0, 0}}
	for pi := range wantTx {
		if fmt.Sprint(l.nicTx[pi]) != fmt.Sprint(wantTx[pi]) {
			t.Errorf("plane %d sent %v, want %v", pi, l.nicTx[pi], wantTx[pi])
		}
	}
	rows, _ := l.queueRows(len(l.intervals), 8)
	if len(rows) != 2 || rows[0].label != "max over T0" || rows[1].label != "p0.t0-0.down1" || rows[1].q[7] != 4096 || rows[1].q[6] != 0 {
		t.Errorf("queue rows %+v", rows)
	}

	// The plotted line: 0 before the first busy interval, the line rate (1) in 1 and 2, 0
	// from 6 to 14 us, 1 in 7, then 0 to the end of the run.
	if l.classes[0].name() != "NIC ports" || l.classes[0].planes[0] != 0 {
		t.Fatalf("classes %+v", l.classes)
	}
	pts := tailZero(stepPoints(l.intervals, colGroups(len(l.intervals), maxLinePts/2), func(lo, hi int) float64 { return l.classUtil(0, 0, lo, hi) }), 20)
	at := func(x float64) []float64 { // the line's values at x (two at a step)
		var ys []float64
		for _, p := range pts {
			if p.X == x {
				ys = append(ys, p.Y)
			}
		}
		return ys
	}
	for _, x := range []float64{6, 8, 10, 12, 14} {
		for _, y := range at(x) {
			if x != 6 && x != 14 && y != 0 {
				t.Errorf("throughput at %v us = %v over silence, want 0 (points %v)", x, y, pts)
			}
		}
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].X > pts[i-1].X && pts[i].Y != pts[i-1].Y {
			t.Fatalf("a ramp from %v to %v: the line must step, not slope", pts[i-1], pts[i])
		}
	}
	if fmt.Sprint(at(0)) != "[0]" || fmt.Sprint(at(4)) != "[1 1]" || fmt.Sprint(at(16)) != "[1 0]" || fmt.Sprint(at(20)) != "[0]" {
		t.Errorf("line %v", pts)
	}
}

// TestLinksGridRounding: links.csv rounds times to 3 decimals; an interval of 0.4 us over
// thousands of intervals, most of them silent, still lands on its grid, and a downsampled
// point is the mean over silence too.
func TestLinksGridRounding(t *testing.T) {
	var b strings.Builder
	b.WriteString(linksHead)
	const dt, n = 0.4, 3000
	for k := 0; k < n; k += 7 {
		s, e := math.Round(float64(k)*dt*1000)/1000, math.Round(float64(k+1)*dt*1000)/1000
		fmt.Fprintf(&b, "%g,%g,h0.p0,h0,0,-1,800,1,1000,0,0\n", s, e)
	}
	l, err := readLinks(fileLinks, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	last := (n - 1) / 7 * 7
	if len(l.intervals) != last+1 {
		t.Fatalf("%d intervals, want %d", len(l.intervals), last+1)
	}
	checkContiguous(t, l.intervals)
	groups := colGroups(len(l.intervals), maxLinePts/2)
	g := groups[1]
	busy := 0.0
	for k := g[0]; k < g[1]; k++ {
		busy += l.nicTx[0][k]
	}
	want := busy * 8 / (float64(g[1]-g[0]) * dt * 1e3)
	if got := l.totalGbps(g[0], g[1]); math.Abs(got-want) > 1e-6*want {
		t.Errorf("group %v: %v Gb/s, want %v (its bytes over all its time)", g, got, want)
	}
}

// TestLinksIrregular: intervals that are not on one grid (a hand-made file) keep their own
// times, with a zero slot for each hole between them.
func TestLinksIrregular(t *testing.T) {
	in := "start_us,end_us,port,plane,tier,tx_bytes,queue_max_bytes\n1,2,a,0,-1,5,0\n2,5,a,0,-1,5,7\n9,10,a,0,-1,5,0\n"
	l, err := readLinks(fileLinks, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []interval{{0, 1}, {1, 2}, {2, 5}, {5, 9}, {9, 10}}
	if fmt.Sprint(l.intervals) != fmt.Sprint(want) || fmt.Sprint(l.nicTx[0]) != "[0 5 5 0 5]" {
		t.Errorf("intervals %v, sent %v; want %v, [0 5 5 0 5]", l.intervals, l.nicTx[0], want)
	}
}

// TestCompareThroughputIdle: compare.html's throughput is built from the same filled-in
// intervals.
func TestCompareThroughputIdle(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{fileLinks: linksHead + "0,2,h0.p0,h0,0,-1,800,100,250000,0,0\n8,10,h0.p0,h0,0,-1,800,100,250000,0,0\n"})
	r, err := loadRun(dir, "gaps")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.links.intervals) != 5 || r.links.totalGbps(1, 4) != 0 {
		t.Errorf("intervals %v, rate over the silence %v", r.links.intervals, r.links.totalGbps(1, 4))
	}
	if _, err := compareThroughput([]*runData{r}); err != nil {
		t.Fatal(err)
	}
}
