package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// TestTransportCompare runs the transport comparison at TransportsSmall (16 hosts) and checks
// the orderings physics requires, with tolerances (docs/transport-compare.md, "Orderings"):
// bounds every cell must obey, losslessness, spraying and adaptive routing against ECMP on
// the permutation, congestion spreading onto the incast's victim, and what a T0-T1 link
// failure costs each.
func TestTransportCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("the transport suite runs six workloads under six transports")
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
			if c.QPErrors != 0 {
				t.Errorf("%s/%s: %d QP errors", c.Case.Name, c.Col.Name, c.QPErrors)
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
	get := func(kind, col string) transportCell { return at[kind+"/"+col] }

	// Ring all-reduce: with the ranks in topology order only one ring edge leaves each T0, so
	// no two flows share a link and every transport runs at its NIC's rate less its headers:
	// at the largest size each one's time over IB's is its wire bytes per payload byte over
	// IB's, within 2% (the rest: window and round-trip terms).
	last := len(z.Sweep) - 1
	var ib transportCell
	for _, c := range cells[last] {
		if c.Col.Name == "ib" {
			ib = c
		}
	}
	for _, c := range cells[last] {
		wire := func(x transportCell) float64 { return 1 / (1 - x.HeaderPct/100) }
		want := wire(c) / wire(ib)
		if got := c.TimeUs / ib.TimeUs; got < want*0.995 || got > want*1.02 {
			t.Errorf("%s/%s: %.1f us = %.4f x ib's, want %.4f (headers %.2f%% vs %.2f%%) within -0.5%%/+2%%", c.Case.Name, c.Col.Name, c.TimeUs, got, want, c.HeaderPct, ib.HeaderPct)
		}
	}

	// Lossless fabrics: PFC (RoCE, with or without AR) and credits (IB) drop nothing for
	// congestion in any workload; only the trimming transports trim.
	for _, row := range cells {
		for _, c := range row {
			lossless := c.Col.Kind == "roce" || c.Col.Kind == "ib"
			if lossless && (c.Drops != 0 || c.Trims != 0) {
				t.Errorf("%s/%s: %d congestion drops, %d trims on a lossless fabric; want 0", c.Case.Name, c.Col.Name, c.Drops, c.Trims)
			}
		}
	}

	// Permutation: spraying (MRC's source routes, UEC's hashed EVs) and IB's adaptive
	// routing spread every flow over the T1s; one ECMP path per QP collides (RoCE, static
	// IB), so the slowest flow shares an uplink: at least 1.25x the sprayers' JCT.
	perm := func(col string) float64 { return get(tcPerm, col).TimeUs }
	for _, fast := range []string{"mrc", "uec", "ib-ar"} {
		for _, slow := range []string{"roce", "ib"} {
			if perm(fast)*1.25 > perm(slow) {
				t.Errorf("permutation: %s %.1f us is not 1.25x faster than %s %.1f us", fast, perm(fast), slow, perm(slow))
			}
		}
		if ideal := idealUs(z.Perm, 1); perm(fast) > 1.15*ideal {
			t.Errorf("permutation: %s %.1f us, beyond 1.15x the payload at line rate (%.1f us)", fast, perm(fast), ideal)
		}
	}
	// AR reorders a QP's packets: RoCE's go-back-N responder takes every overtaken packet as
	// a loss and resends from it, where IB's out-of-order placement (on with AR) keeps them.
	if ear, iar := get(tcPerm, "ethernet-ar"), get(tcPerm, "ib-ar"); ear.Retx == 0 || iar.Retx != 0 || iar.TimeUs >= ear.TimeUs {
		t.Errorf("permutation with AR: ethernet-ar %d resends %.1f us, ib-ar %d resends %.1f us; want go-back-N resends only under ethernet-ar and ib-ar faster",
			ear.Retx, ear.TimeUs, iar.Retx, iar.TimeUs)
	}

	// Incast with a victim: the receiver's downlink is the bottleneck for every transport
	// (>= 0.9 of line rate into it, except Ethernet-AR's go-back-N); where the fabric holds
	// the excess upstream (PFC pauses, blocked credits), the victim sharing only the T1 ->
	// T0 links is slowed by head-of-line blocking; trimming transports keep queues short and
	// the victim at least twice as fast.
	for _, col := range []string{"mrc", "uec", "roce", "ib", "ib-ar"} {
		if g := get(tcIncast, col).IncastGbps; g < 90 {
			t.Errorf("incast: %s delivers %.1f Gb/s into the receiver, want >= 90", col, g)
		}
	}
	for _, fast := range []string{"mrc", "uec"} {
		for _, slow := range []string{"roce", "ib"} {
			if f, s := get(tcIncast, fast).VictimGbps, get(tcIncast, slow).VictimGbps; f < 2*s {
				t.Errorf("incast victim: %s %.1f Gb/s not 2x %s's %.1f Gb/s", fast, f, slow, s)
			}
		}
	}

	// Link failure mid-permutation: the sprayers and IB's AR (SHIELD-style local reroute)
	// move off the dead link within microseconds and finish within 1.3x their faultless
	// twin; RoCE and static IB keep the QPs hashed onto it blackholed until the routes
	// reconverge (fabric.reconvergence, 1 s) and then wait out their NCCL-default retry
	// timeout (4.3 s, 1.07 s): past 1 s of JCT.
	for _, col := range []string{"mrc", "uec", "ib-ar"} {
		if s := get(tcPermFail, col).Slowdown; s > 1.3 || s < 1 {
			t.Errorf("link failure: %s slowdown %.3fx, want in [1, 1.3]", col, s)
		}
	}
	for _, col := range []string{"roce", "ib"} {
		if c := get(tcPermFail, col); c.TimeUs < float64(sim.Second.Micros()) {
			t.Errorf("link failure: %s JCT %.1f us; a QP hashed onto the dead link cannot finish before the routes reconverge at 1 s", col, c.TimeUs)
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
