package collective

import (
	"bytes"
	"encoding/csv"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestBusFactor pins nccl-tests' factors (doc/PERFORMANCE.md "Summary").
func TestBusFactor(t *testing.T) {
	for _, tc := range []struct {
		op   Collective
		n    int
		want float64
	}{
		{AllReduce, 8, 1.75}, {ReduceScatter, 8, 0.875}, {AllGather, 4, 0.75}, {AllToAll, 16, 0.9375},
		{Broadcast, 8, 1}, {Reduce, 8, 1}, {SendRecv, 2, 1}, {AllReduce, 1, 0},
	} {
		if got := BusFactor(tc.op, tc.n); got != tc.want {
			t.Errorf("BusFactor(%s, %d) = %v, want %v", tc.op, tc.n, got, tc.want)
		}
	}
}

// TestRowAndWriters: a row's numbers, the text table and the CSV.
func TestRowAndWriters(t *testing.T) {
	sp := NewSpec(AllReduce, 8, 1<<30)
	sp.Algo = Ring
	r := NewRow(sp, 10*sim.Millisecond, BFloat16)
	r.Model = 9 * sim.Millisecond
	wantAlg := float64(1<<30) / 0.01 / 1e9 // 107.37 GB/s
	if r.Count != 1<<29 || math.Abs(r.AlgBW-wantAlg) > 1e-9 || math.Abs(r.BusBW-wantAlg*1.75) > 1e-9 || r.Root != -1 {
		t.Errorf("row %+v", r)
	}
	bc := NewRow(Spec{Op: Broadcast, Algo: Ring, Ranks: 4, Bytes: 4096, Root: 2}, sim.Microsecond, Float32)
	rows := []Row{r, bc}
	var tb bytes.Buffer
	if err := WriteTable(&tb, rows); err != nil {
		t.Fatal(err)
	}
	out := tb.String()
	t.Logf("\n%s", out)
	for _, want := range []string{"size(B)", "busbw(GB/s)", "1073741824", "536870912", "bfloat16", "sum", "10000.00", "107.37", "187.90", "9000.00", "broadcast", "Avg bus bandwidth"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, rows); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&cb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("csv %v", recs)
	}
	if got := strings.Join(recs[2], ","); got != "broadcast,4096,1024,float,none,2,broadcast,ring,4,1.00,4.10,4.10,,," {
		t.Errorf("broadcast csv row %q", got)
	}
	// With scale-up domains the last two columns carry the split; the table keeps
	// nccl-tests' columns.
	rows[0].Split = &DomainSplit{ScaleUpMax: 123, FabricMax: 45}
	cb.Reset()
	if err := WriteCSV(&cb, rows); err != nil {
		t.Fatal(err)
	}
	if recs, _ = csv.NewReader(&cb).ReadAll(); strings.Join(recs[1][len(recs[1])-2:], ",") != "123,45" {
		t.Errorf("split columns %v", recs[1])
	}
	tb.Reset()
	if err := WriteTable(&tb, rows); err != nil || strings.Contains(tb.String(), "123") {
		t.Errorf("the table shows the split: %v\n%s", err, tb.String())
	}
}

// TestDomainBytes: sends split by scale-up domain (host / domain) as training.SplitTransport
// routes them, per rank and in total, for the algorithms that cross and stay in domains.
func TestDomainBytes(t *testing.T) {
	const S = 1 << 20
	for _, c := range []struct {
		name    string
		algo    Algorithm
		ranks   int
		domain  int
		inner   int
		wantUp  int64 // the most one rank sends inside its domain
		wantFab int64 // ... and across
	}{
		// A flat ring on 16 ranks in domains of 8: each rank sends 2(n-1)/n S to its next
		// neighbour, inside the domain for all but the two boundary ranks.
		{"ring-16-in-8", Ring, 16, 8, 0, 2 * 15 * S / 16, 2 * 15 * S / 16},
		// One domain holds every rank: nothing crosses.
		{"ring-8-in-8", Ring, 8, 8, 0, 2 * 7 * S / 8, 0},
		// Domains of one host: everything crosses.
		{"ring-8-in-1", Ring, 8, 1, 0, 0, 2 * 7 * S / 8},
		// Hierarchical, inner = the domain of 8 over 2 domains: inner phases 2(I-1)/I S in the
		// domain, the outer all-reduce 2(O-1)/O S/I across.
		{"hier-16-in-8", Hierarchical, 16, 8, 8, 2 * 7 * S / 8, 2 * 1 * S / 2 / 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := NewSpec(AllReduce, c.ranks, S)
			sp.Algo, sp.Inner = c.algo, c.inner
			if c.inner > 0 {
				sp.Outer = c.ranks / c.inner
			}
			sch, err := Build(sp)
			if err != nil {
				t.Fatal(err)
			}
			comm, _ := RangeComm(0, c.ranks, 1)
			d, err := sch.DomainBytes(comm, c.domain)
			if err != nil {
				t.Fatal(err)
			}
			if d.ScaleUpMax != c.wantUp || d.FabricMax != c.wantFab {
				t.Errorf("per rank max: scale-up %d, fabric %d; want %d, %d", d.ScaleUpMax, d.FabricMax, c.wantUp, c.wantFab)
			}
			var sent int64
			for r := range c.ranks {
				sent += sch.SentBytes(r)
			}
			if d.ScaleUpTotal+d.FabricTotal != sent {
				t.Errorf("totals %d + %d, schedule sends %d", d.ScaleUpTotal, d.FabricTotal, sent)
			}
		})
	}
	sch, _ := Build(NewSpec(AllReduce, 4, S))
	comm, _ := RangeComm(0, 4, 1)
	if _, err := sch.DomainBytes(comm, 0); err == nil {
		t.Error("domain 0 accepted")
	}
	small, _ := RangeComm(0, 2, 1)
	if _, err := sch.DomainBytes(small, 2); err == nil {
		t.Error("a communicator of 2 for 4 ranks accepted")
	}
}

// TestSizes: the nccl-tests sweep 1 MiB..1 GiB doubling has 11 sizes; bad bounds are errors.
func TestSizes(t *testing.T) {
	s, err := Sizes(1<<20, 1<<30, 2)
	if err != nil || len(s) != 11 || s[0] != 1<<20 || s[10] != 1<<30 {
		t.Errorf("Sizes = %v, %v", s, err)
	}
	if s, _ := Sizes(8, 128, 4); len(s) != 3 || s[2] != 128 {
		t.Errorf("Sizes(8, 128, 4) = %v", s)
	}
	if s, _ := Sizes(8, 100, 4); len(s) != 2 || s[1] != 32 {
		t.Errorf("Sizes(8, 100, 4) = %v", s)
	}
	for _, b := range [][3]int64{{0, 10, 2}, {10, 5, 2}, {1, 10, 1}} {
		if _, err := Sizes(b[0], b[1], int(b[2])); err == nil {
			t.Errorf("Sizes%v accepted", b)
		}
	}
}

// TestSweepIdeal: a ring all-reduce sweep climbs towards the NIC rate in busbw and every row
// matches its pipelined model.
func TestSweepIdeal(t *testing.T) {
	sizes, _ := Sizes(1<<20, 64<<20, 4)
	base := NewSpec(AllReduce, 8, 0)
	base.Algo = Ring
	rows, err := SweepIdeal(base, sizes, refModel, Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	WriteTable(&tb, rows)
	t.Logf("\n%s", tb.String())
	for i, r := range rows {
		if i > 0 && r.BusBW <= rows[i-1].BusBW {
			t.Errorf("busbw fell from %.2f to %.2f at %d B", rows[i-1].BusBW, r.BusBW, r.Bytes)
		}
		if d := r.Time - r.Model; d < -sim.Nanosecond || d > sim.Nanosecond {
			t.Errorf("%d B: %v simulated, model %v", r.Bytes, r.Time, r.Model)
		}
	}
	if last := rows[len(rows)-1].BusBW; last < 45 || last > 50 {
		t.Errorf("busbw at 64 MiB is %.2f GB/s; want close to 50", last)
	}
}

// TestRowCount: nccl-tests prints the per-rank element count for all_gather, reduce_scatter
// and all_to_all (S / type size / n) and the whole buffer's for the others.
func TestRowCount(t *testing.T) {
	for _, c := range []struct {
		op   Collective
		want int64
	}{{AllReduce, 262144}, {AllGather, 16384}, {ReduceScatter, 16384}, {AllToAll, 16384}, {Broadcast, 262144}} {
		sp := NewSpec(c.op, 16, 1<<20)
		if got := NewRow(sp, sim.Millisecond, Float32).Count; got != c.want {
			t.Errorf("%s of 1 MiB float32 on 16 ranks: count %d, want %d", c.op, got, c.want)
		}
	}
}
