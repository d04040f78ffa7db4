package main

import (
	"bytes"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// tcOrder is one ordering physics requires of the suite: on the case of kind Kind, every
// column in Better beats every column in Worse on Metric by Factor (lower is better unless
// HigherBetter).
type tcOrder struct {
	Why           string
	Kind          string
	Metric        func(transportCell) float64
	HigherBetter  bool
	Better, Worse []string
	Factor        float64
}

// tcBound is a range a figure must fall in, on the case of kind Kind (every case when
// empty), for each column in Cols.
type tcBound struct {
	Why    string
	Kind   string
	Cols   []string
	Metric func(transportCell) float64
	Lo, Hi float64
}

// transportOrders are the orderings TestTransportCompare asserts (docs/transport-compare.md,
// "Orderings").
func transportOrders() []tcOrder {
	jct := func(c transportCell) float64 { return c.TimeUs }
	return []tcOrder{
		{"spraying (MRC's source routes, UEC's hashed EVs) and IB's adaptive routing spread every flow over the T1s; one ECMP path per QP collides (RoCE, static IB)",
			tcPerm, jct, false, []string{"mrc", "uec", "ib-ar"}, []string{"roce", "ib"}, 1.25},
		{"AR reorders a QP's packets: RoCE's go-back-N responder takes every overtaken packet as a loss, IB's out-of-order placement (on with AR) keeps them",
			tcPerm, jct, false, []string{"ib-ar"}, []string{"ethernet-ar"}, 1},
		{"the same for RoCE: with NIC-side out-of-order placement (Spectrum-X's pairing) AR beats in-order go-back-N and ECMP",
			tcPerm, jct, false, []string{"eth-ar-ooo"}, []string{"ethernet-ar", "roce"}, 1},
		{"trimming keeps the T1 -> T0 queues short; PFC pauses and blocked credits hold the victim behind the incast (head-of-line blocking)",
			tcIncast, func(c transportCell) float64 { return c.VictimGbps }, true, []string{"mrc", "uec"}, []string{"roce", "ib"}, 2},
		{"the sprayers and IB's AR move off a dead link in microseconds; ECMP keeps hashing QPs onto it until the routes reconverge (1 s) and their retry timer fires",
			tcPermFail, func(c transportCell) float64 { return c.Slowdown }, false, []string{"mrc", "uec", "ib-ar"}, []string{"roce", "ib"}, 100},
	}
}

// transportBounds are the ranges TestTransportCompare asserts at TransportsSmall.
func transportBounds(z transportsSize) []tcBound {
	all := []string{"mrc", "uec", "roce", "ethernet-ar", "eth-ar-ooo", "ib", "ib-ar"}
	lossless := []string{"roce", "ethernet-ar", "eth-ar-ooo", "ib", "ib-ar"}
	return []tcBound{
		{"PFC and credits drop nothing for congestion", "", lossless, func(c transportCell) float64 { return float64(c.Drops) }, 0, 0},
		{"only the trimming transports trim", "", lossless, func(c transportCell) float64 { return float64(c.Trims) }, 0, 0},
		{"the sprayers and IB-AR reach line rate on the permutation (within 1.15x of the payload at line rate)", tcPerm, []string{"mrc", "uec", "ib-ar"},
			func(c transportCell) float64 { return c.TimeUs / idealUs(z.Perm, 1) }, 1, 1.15},
		{"the incast's bottleneck link stays busy (Gb/s of payload into the receiver)", tcIncast, []string{"mrc", "uec", "roce", "ib", "ib-ar"},
			func(c transportCell) float64 { return c.IncastGbps }, 90, 100},
		{"go-back-N resends under AR, none with out-of-order placement", tcPerm, []string{"ib-ar", "eth-ar-ooo"}, func(c transportCell) float64 { return float64(c.Retx) }, 0, 0},
		{"", tcPerm, []string{"ethernet-ar"}, func(c transportCell) float64 { return float64(c.Retx) }, 1, math.Inf(1)},
		{"a failed uplink costs the sprayers and IB-AR at most 30% (a T0 keeps 3 of 4 uplinks)", tcPermFail, []string{"mrc", "uec", "ib-ar"},
			func(c transportCell) float64 { return c.Slowdown }, 1, 1.3},
		{"a QP hashed onto the dead link cannot finish before the routes reconverge at 1 s (JCT, us)", tcPermFail, []string{"roce", "ib"},
			func(c transportCell) float64 { return c.TimeUs }, 1e6, math.Inf(1)},
		{"no QP gives up", "", all, func(c transportCell) float64 { return float64(c.QPErrors) }, 0, 0},
	}
}

// TestTransportCompare runs the transport comparison at TransportsSmall (16 hosts) and checks
// the orderings physics requires, with tolerances (docs/transport-compare.md, "Orderings"):
// the bounds every cell must obey (checkTransportBounds), the ring all-reduce's order by
// header bytes, and the tables transportOrders and transportBounds.
func TestTransportCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("the transport suite runs seven workloads under seven transports")
	}
	z := TransportsSmall
	cols := transportCols()
	cells := runTransportSuite(z, cols, runtime.GOMAXPROCS(0))
	var tab bytes.Buffer
	printTransports(&tab, z, cols, cells)
	t.Logf("transport comparison:\n%s", tab.String())

	at := map[string]transportCell{} // "<case kind>/<column>"
	for _, row := range cells {
		for _, c := range row {
			if c.Err != nil {
				t.Errorf("%s/%s: %v", c.Case.Name, c.Col.Name, c.Err)
				continue
			}
			if c.Case.Kind != tcAllReduce {
				at[c.Case.Kind+"/"+c.Col.Name] = c
			}
			checkTransportBounds(t, z, c)
		}
	}
	if t.Failed() {
		return
	}

	// Ring all-reduce: with the ranks in topology order only one ring edge leaves each T0, so
	// no two flows share a link and every transport runs at its NIC's rate less its headers:
	// at the largest size each one's time over IB's is its wire bytes per payload byte over
	// IB's, within -0.5%/+2% (the rest: window and round-trip terms).
	last := len(z.Sweep) - 1
	var ib transportCell
	for _, c := range cells[last] {
		if c.Col.Name == "ib" {
			ib = c
		}
	}
	wire := func(x transportCell) float64 { return 1 / (1 - x.HeaderPct/100) }
	for _, c := range cells[last] {
		want := wire(c) / wire(ib)
		if got := c.TimeUs / ib.TimeUs; got < want*0.995 || got > want*1.02 {
			t.Errorf("%s/%s: %.1f us = %.4f x ib's, want %.4f (headers %.2f%% vs %.2f%%) within -0.5%%/+2%%", c.Case.Name, c.Col.Name, c.TimeUs, got, want, c.HeaderPct, ib.HeaderPct)
		}
	}

	for _, o := range transportOrders() {
		for _, b := range o.Better {
			for _, w := range o.Worse {
				vb, vw := o.Metric(at[o.Kind+"/"+b]), o.Metric(at[o.Kind+"/"+w])
				ok := vb*o.Factor <= vw
				if o.HigherBetter {
					ok = vb >= o.Factor*vw
				}
				if !ok {
					t.Errorf("%s: %s %.4g vs %s %.4g, want %s better by %gx (%s)", o.Kind, b, vb, w, vw, b, o.Factor, o.Why)
				}
			}
		}
	}
	for _, bd := range transportBounds(z) {
		for _, row := range cells {
			for _, c := range row {
				if bd.Kind != "" && c.Case.Kind != bd.Kind || !slices.Contains(bd.Cols, c.Col.Name) {
					continue
				}
				if v := bd.Metric(c); v < bd.Lo || v > bd.Hi {
					t.Errorf("%s/%s: %.4g outside [%g, %g] (%s)", c.Case.Name, c.Col.Name, v, bd.Lo, bd.Hi, bd.Why)
				}
			}
		}
	}
}

// idealUs is bytes (a size string) times n at 100 Gb/s, payload only, in microseconds.
func idealUs(size string, n int) float64 {
	b, _ := sim.ParseSize(size)
	return float64(b) * float64(n) * 8 / 100e3
}

// checkTransportBounds checks what every cell must obey whatever the transport: nothing
// finishes faster than its payload at line rate (one NIC sends, one receives), no bandwidth
// beyond the NIC's, and the faultless twin is never slower than the failure run.
func checkTransportBounds(t *testing.T, z transportsSize, c transportCell) {
	t.Helper()
	name := c.Case.Name + "/" + c.Col.Name
	const nicGBps = 12.5 // 100 Gb/s
	switch c.Case.Kind {
	case tcAllReduce:
		// busbw counts 2 (n-1)/n S per rank: at most the NIC's rate.
		if c.BusBW > nicGBps {
			t.Errorf("%s: busbw %.2f GB/s beyond the NIC's %.1f", name, c.BusBW, nicGBps)
		}
	case tcAllToAll:
		if c.BusBW > nicGBps {
			t.Errorf("%s: busbw %.2f GB/s beyond the NIC's %.1f", name, c.BusBW, nicGBps)
		}
	case tcPerm, tcPermFail:
		if ideal := idealUs(z.Perm, 1); c.TimeUs < ideal {
			t.Errorf("%s: JCT %.1f us below the payload at line rate %.1f us", name, c.TimeUs, ideal)
		}
	case tcIncast:
		if ideal := idealUs(z.Incast, 7); c.TimeUs < ideal || c.IncastGbps > 100 || c.VictimGbps > 100 {
			t.Errorf("%s: incast %.1f us (ideal %.1f), %.1f Gb/s into the receiver, victim %.1f Gb/s: beyond line rate", name, c.TimeUs, ideal, c.IncastGbps, c.VictimGbps)
		}
	}
	if c.Case.Kind == tcPermFail && (c.BaselineUs <= 0 || c.Slowdown < 1) {
		t.Errorf("%s: faultless twin %.1f us, slowdown %.3f: the failure run cannot be faster", name, c.BaselineUs, c.Slowdown)
	}
}

// TestTransportsYAML: every case under every column loads, and the incast's hosts sit where
// the suite says (senders off the receiver's T0, the victim's destination on it).
func TestTransportsYAML(t *testing.T) {
	for _, z := range []transportsSize{TransportsSmall, TransportsLarge} {
		s, vs, vd := z.incastHosts()
		perT0 := z.Radix / 2
		if len(s) != 7 || s[0]/perT0 == 0 || vs/perT0 == 0 || vd/perT0 != 0 || vs >= z.Hosts {
			t.Errorf("%d hosts: incast senders %v, victim %d -> %d", z.Hosts, s, vs, vd)
		}
		for _, c := range z.cases() {
			for _, col := range transportCols() {
				y, err := transportsYAML(c, col, z)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := scenario.Parse([]byte(y)); err != nil {
					t.Errorf("%s/%s: %v\n%s", c.Name, col.Name, err, y)
				}
				if col.AR != strings.Contains(y, "adaptive_routing") {
					t.Errorf("%s/%s: adaptive routing %v not in the YAML", c.Name, col.Name, col.AR)
				}
			}
		}
	}
	if _, err := transportsYAML(transportCase{"x", "nope", "1MiB"}, transportCols()[0], TransportsSmall); err == nil {
		t.Error("an unknown case kind loaded")
	}
}
