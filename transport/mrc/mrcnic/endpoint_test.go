package mrcnic_test

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
)

// fabricFor builds the Clos c into a fresh kernel of seed with the queues the mrc fabric
// profile gives it (scenario/resolve_profile.go, applyMRCProfile, for a scenario that sets no
// queue): ECN from 0.2 to 0.8 BDP on fabric hops, none on the last hop, trimming above 1 BDP
// (1.5 at the last hop), limits at least 2 trim thresholds, the NIC queue 16 MiB.
func fabricFor(t testing.TB, c topo.Clos, seed uint64, cfg mrc.Config) (*sim.Sim, *fabric.Network, topo.Topology, transport.Queues) {
	t.Helper()
	l, err := c.Topology()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.WithDefaults()
	p := l.Params()
	rtt := p.RoundTrip(l.Sizing().MaxSwitchHops, cfg.WireBytes(cfg.PayloadBytes), cfg.AckBytes)
	bdp := p.FabricLink.BytesIn(rtt)
	mtu := int64(cfg.WireBytes(cfg.PayloadBytes))
	kmin, kmax, trim := max(bdp/5, 3*mtu), max(bdp*4/5, 12*mtu), max(bdp, 12*mtu)
	limit := max(sim.Size(fabric.DefaultQueueLimit), sim.Size(2*trim))
	sw := fabric.QueueConfig{Limit: limit,
		ECN:  fabric.ECNConfig{Enabled: true, Kmin: sim.Size(kmin), Kmax: sim.Size(kmax), Pmax: 1},
		Trim: fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim)}}.WithDefaults()
	lh := fabric.QueueConfig{Limit: limit,
		Trim: fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim * 3 / 2)}}.WithDefaults()
	nq := fabric.QueueConfig{Limit: 16 << 20}.WithDefaults()
	s := sim.New(seed)
	net := fabric.New(s)
	if err := topo.BuildTopology(net, l, topo.BuildOptions{SwitchQueue: sw, LastHopQueue: &lh, NICQueue: nq}); err != nil {
		t.Fatal(err)
	}
	return s, net, l, transport.Queues{Switch: sw, LastHop: lh, NIC: nq, LastHopGiven: true}
}

// pair is one traffic transfer.
type pair struct{ src, dst int }

// permutation is the runner's permutation pattern (runner/expand.go, groupPairs): the first
// derangement drawn from the stream "traffic[0]" of seed, host h sending to p[h].
func permutation(seed uint64, hosts int) []pair {
	rng := sim.Stream(seed, "traffic[0]")
	for {
		p := rng.Perm(hosts)
		ok := true
		for i, v := range p {
			ok = ok && i != v
		}
		if ok {
			out := make([]pair, hosts)
			for h, d := range p {
				out[h] = pair{h, d}
			}
			return out
		}
	}
}

// incast is senders 1..n-1 into host 0.
func incast(hosts int) []pair {
	var out []pair
	for h := 1; h < hosts; h++ {
		out = append(out, pair{h, 0})
	}
	return out
}

// result is one traffic run through the endpoint.
type result struct {
	ep  *mrcnic.Endpoint
	run *mrcnic.Run
	sum *transport.Summary
	end sim.Time
}

// runTraffic runs one transfer of bytes per pair, all posted at 0, as the runner does
// (runner/mrc.go runMRC, driveTransport): the OnDone hook pauses the kernel, then the engines
// are stopped and the fabric drained before the summary is taken at the traffic's end. With
// interval > 0 the endpoint is sampled as the runner's sampler does (runner/runner.go,
// sampler.start and onSample: its own kind registered after the endpoint's, its own
// tiebreak keys, stopping at the traffic's end, the sample pending then taken in the drain).
func runTraffic(t testing.TB, c topo.Clos, seed uint64, cfg mrc.Config, pairs []pair, bytes int64, interval sim.Time) result {
	t.Helper()
	s, net, l, q := fabricFor(t, c, seed, cfg)
	p, ok := transport.Lookup(mrcnic.Kind)
	if !ok {
		t.Fatal("mrc is not registered")
	}
	e, err := p.NewEndpoint(&cfg, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: q, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	ep := e.(*mrcnic.Endpoint)
	const duration = 20 * sim.Millisecond
	doneAt, until := sim.MaxTime, duration
	ep.SetHooks(transport.Hooks{
		OnDone: func(now sim.Time) { doneAt, until = now, now; s.Pause() },
		Halt:   func(now sim.Time) { until = now; s.Pause() },
	})
	for _, pr := range pairs {
		if err := ep.AddFlow(pr.src, pr.dst, bytes, 0); err != nil {
			t.Fatal(err)
		}
	}
	if interval > 0 {
		var kind sim.Kind
		kind = s.Register("runner.sample", func(now sim.Time, _ int32, _ uint64) {
			ep.Sample(now)
			if next := now + interval; next <= until {
				s.AtOwnKey(next, kind, 0, 0)
			}
		})
		s.AtOwnKey(interval, kind, 0, 0)
	}
	if err := s.Run(duration); err != nil {
		t.Fatal(err)
	}
	end := s.Now()
	if running, errs := ep.Outstanding(); running != 0 || errs != 0 || doneAt == sim.MaxTime {
		t.Fatalf("at %v: %d transfers outstanding, %d QP errors (%v): %s", end, running, errs, ep.Errs(), ep.Stuck(5))
	}
	ep.Quiesce()
	if err := s.Drain(end + 10*sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if left := net.InFlight(); left > 0 {
		t.Fatalf("%d packets left in the fabric after the drain", left)
	}
	if err := net.Audit(); err != nil {
		t.Fatal(err)
	}
	return result{ep: ep, run: ep.Run().(*mrcnic.Run), sum: ep.Summary(end, nil), end: end}
}

// clos is a 2-tier Clos of hosts hosts on planes planes at 100G, radix 8 up to 32 hosts
// (radix 16 beyond).
func clos(hosts, planes int) topo.Clos {
	radix := 8
	if hosts > 32 {
		radix = 16
	}
	return topo.Clos{Tiers: 2, Planes: planes, Radix: radix, Hosts: hosts, HostLink: 100 * sim.Gbps,
		FabricLink: 100 * sim.Gbps, HopLatency: 500 * sim.Nanosecond}
}

// check verifies what every finished traffic run must show: every transfer done, the
// summary's counts, each flow's FCT at least its ideal, and the endpoint's records agreeing
// with its engines.
func (r result) check(t *testing.T, pairs []pair, bytes int64) {
	t.Helper()
	s := r.sum
	if s.Kind != "mrc" || s.Name != "MRC" || s.Flows != len(pairs) || s.FlowsCompleted != len(pairs) || s.QPErrors != 0 {
		t.Fatalf("summary %s/%s: %d flows, %d completed, %d QP errors; want %d, all completed, none",
			s.Kind, s.Name, s.Flows, s.FlowsCompleted, s.QPErrors, len(pairs))
	}
	if s.JCTUs != transport.Us(r.end) {
		t.Errorf("JCT %v us, want the traffic's end %v", s.JCTUs, transport.Us(r.end))
	}
	if s.FCTOverIdealMax < 1 || s.FCTOverIdealMean < 1 || s.FCTMaxUs < s.FCTP50Us || s.FCTMaxUs > s.JCTUs {
		t.Errorf("FCT figures: over ideal mean %v max %v, p50 %v max %v, JCT %v", s.FCTOverIdealMean, s.FCTOverIdealMax, s.FCTP50Us, s.FCTMaxUs, s.JCTUs)
	}
	var retx int64
	for _, n := range s.RetxPacketsByCause {
		retx += n
	}
	if retx != s.RetxPackets || len(s.RetxPacketsByCause) != int(mrc.NumRetxCauses) {
		t.Errorf("retx_packets %d, by cause %v", s.RetxPackets, s.RetxPacketsByCause)
	}
	sent, placed, posted := r.ep.Bytes()
	if want := int64(len(pairs)) * bytes; placed != want || posted != want || sent < want {
		t.Errorf("bytes: sent %d, placed %d, posted %d; want %d placed and posted", sent, placed, posted, want)
	}
	if r.run.Flows() != len(pairs) {
		t.Fatalf("run has %d flows, want %d", r.run.Flows(), len(pairs))
	}
	recs := r.ep.Flows()
	var pktRetx int64
	for i, rec := range recs {
		snd, rcv, src, dst, done, placedAt := r.run.Flow(i)
		if src != pairs[i].src || dst != pairs[i].dst || rec.Src != src || rec.Dst != dst || rec.Plane != -1 {
			t.Fatalf("flow %d: h%d->h%d (record h%d->h%d plane %d), want h%d->h%d plane -1", i, src, dst, rec.Src, rec.Dst, rec.Plane, pairs[i].src, pairs[i].dst)
		}
		if done == 0 || rec.Done != done || placedAt == 0 || placedAt > done || rcv.Stats.PlacedBytes != bytes || rec.Delivered != bytes || rec.Bytes != bytes {
			t.Errorf("flow %d: done %v (record %v), placed at %v, %d bytes placed (record %d of %d)", i, done, rec.Done, placedAt, rcv.Stats.PlacedBytes, rec.Delivered, rec.Bytes)
		}
		if fct := rec.Done - rec.Start; rec.Ideal <= 0 || fct < rec.Ideal {
			t.Errorf("flow %d: FCT %v below its ideal %v", i, fct, rec.Ideal)
		}
		if rec.Done > r.end {
			t.Errorf("flow %d done at %v, after the traffic's end %v", i, rec.Done, r.end)
		}
		if len(pairs) > 1 && (rec.ActiveOfLine <= 0 || rec.ActiveOfLine > 1) {
			t.Errorf("flow %d: active_of_line %v, want in (0, 1]", i, rec.ActiveOfLine)
		}
		if snd.Err() != nil {
			t.Errorf("flow %d: %v", i, snd.Err())
		}
		pktRetx += rec.Retx
	}
	if pktRetx != s.RetxPackets {
		t.Errorf("flows' retx %d, summary's %d", pktRetx, s.RetxPackets)
	}
	if lossAt, errAt := r.ep.Log(); len(errAt) != 0 || (len(lossAt) > 0) != (s.FirstLossRetxUs > 0) {
		t.Errorf("log: %d loss retransmissions, %d QP errors; summary's first loss retx %v", len(lossAt), len(errAt), s.FirstLossRetxUs)
	}
}

// TestTrafficSweep runs permutations and incasts of 2..64 hosts on 1 and 2 planes through
// the endpoint: every transfer completes and the figures hold together.
func TestTrafficSweep(t *testing.T) {
	const bytes = 256 << 10
	for _, hosts := range []int{2, 3, 5, 8, 16, 24, 33, 64} {
		for _, planes := range []int{1, 2} {
			for _, pat := range []string{"permutation", "incast"} {
				if testing.Short() && hosts > 16 {
					continue
				}
				t.Run(fmt.Sprintf("%s-%dhosts-%dplanes", pat, hosts, planes), func(t *testing.T) {
					pairs := permutation(uint64(hosts), hosts)
					if pat == "incast" {
						pairs = incast(hosts)
					}
					r := runTraffic(t, clos(hosts, planes), uint64(hosts), mrc.Config{}, pairs, bytes, 0)
					r.check(t, pairs, bytes)
				})
			}
		}
	}
}

// TestMatchesRunner: two scenarios run with lockstep before the adapter moved out of the
// runner (runner/mrc.go runMRC: `lockstep run testdata/NAME.yaml --out DIR` at commit
// 28e473d) give the same figures through the endpoint, to the microsecond's thousandth, and
// the same ev_states.csv and flows.csv byte for byte (testdata/NAME_*.csv are those runs'
// files): the adapter is the same model event for event.
func TestMatchesRunner(t *testing.T) {
	type want struct {
		jct, fctMean, p50, p99, fctMax, ideal, overMean, overMax, baseRTT float64
		activeUntil, activeMean, activeMin, tputMean, tputMin             float64
		data, sacks, nacks, trimNACK, retxBytes, cuts                     int64
		maxQPs, evGood                                                    int
	}
	for _, tc := range []struct {
		name  string
		clos  topo.Clos
		seed  uint64
		pairs []pair
		bytes int64
		want  want
	}{
		// testdata/perm16.yaml: topology.clos {tiers: 2, planes: 2, radix: 8, hosts: 16,
		// host_link: 100G}, transport.kind mrc, traffic [{pattern: permutation, bytes: 1MiB}],
		// run {seed: 7, duration: 5ms}; its summary.json "mrc" block.
		{"perm16", clos(16, 2), 7, permutation(7, 16), 1 << 20, want{
			jct: 50.234, fctMean: 49.692, p50: 49.823, p99: 50.233, fctMax: 50.233, ideal: 48.378,
			overMean: 1.031, overMax: 1.038, baseRTT: 5.402,
			activeUntil: 46.904, activeMean: 0.876, activeMin: 0.87, tputMean: 0.844, tputMin: 0.835,
			data: 4096, sacks: 1416, maxQPs: 1, evGood: 3072}},
		// testdata/incast8.yaml: topology.clos {tiers: 2, planes: 1, radix: 8, hosts: 8,
		// host_link: 100G}, transport.kind mrc, traffic [{pattern: incast, senders: [1..7],
		// receiver: 0, bytes: 256KiB}], run {seed: 3, duration: 5ms}; its summary.json "mrc"
		// block (the last hop trims: 68 trim NACKs).
		{"incast8", clos(8, 1), 3, incast(8), 256 << 10, want{
			jct: 157.34, fctMean: 144.018, p50: 153.343, p99: 157.34, fctMax: 157.34, ideal: 26.721,
			overMean: 5.624, overMax: 5.888, baseRTT: 5.402,
			activeUntil: 127.919, activeMean: 0.136, activeMin: 0.113, tputMean: 0.147, tputMin: 0.133,
			data: 516, sacks: 344, nacks: 68, trimNACK: 68, retxBytes: 287640, cuts: 2, maxQPs: 7, evGood: 1344}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTraffic(t, tc.clos, tc.seed, mrc.Config{}, tc.pairs, tc.bytes, sim.Microsecond)
			r.check(t, tc.pairs, tc.bytes)
			s, d := r.sum, r.sum.Detail.(*mrcnic.Detail)
			got := want{
				jct: s.JCTUs, fctMean: s.FCTMeanUs, p50: s.FCTP50Us, p99: s.FCTP99Us, fctMax: s.FCTMaxUs, ideal: s.IdealFCTUs,
				overMean: s.FCTOverIdealMean, overMax: s.FCTOverIdealMax, baseRTT: s.BaseRTTUs,
				activeUntil: s.ActiveUntilUs, activeMean: s.ActiveThroughputMeanOfLine, activeMin: s.ActiveThroughputMinOfLine,
				tputMean: d.ThroughputMeanOfLine, tputMin: d.ThroughputMinOfLine,
				data: s.DataPackets, sacks: d.SACKsSent, nacks: d.NACKsSent, trimNACK: s.RetxPacketsByCause[mrc.RetxTrimNack.String()],
				retxBytes: s.RetxBytes, cuts: d.RxBudgetCuts, maxQPs: d.RxMaxActiveQPs, evGood: d.EVGood,
			}
			if got != tc.want {
				t.Errorf("figures differ from the runner's:\n got %+v\nwant %+v", got, tc.want)
			}
			if s.RetxPackets != tc.want.trimNACK {
				t.Errorf("retx_packets %d, want %d", s.RetxPackets, tc.want.trimNACK)
			}
			// The same run's ev_states.csv and flows.csv (testdata/<name>_*.csv, copied from
			// its results folder), the latter written from the records as the runner's
			// WriteFlowsCSV formats them.
			var ev strings.Builder
			if err := r.ep.Files()[0].Write(&ev); err != nil {
				t.Fatal(err)
			}
			if want := readFile(t, "testdata/"+tc.name+"_ev_states.csv"); ev.String() != want {
				t.Errorf("ev_states.csv differs from the runner's:\n got %.300s\nwant %.300s", ev.String(), want)
			}
			if got, want := flowsCSV(t, r.ep.Flows()), readFile(t, "testdata/"+tc.name+"_flows.csv"); got != want {
				t.Errorf("flows.csv differs from the runner's:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestSample: Sample appends one EV sample per call and, for traffic runs, each flow's
// placed bytes; ev_states.csv has the header and one row per sample.
func TestSample(t *testing.T) {
	for _, hosts := range []int{2, 8, 16} {
		t.Run(fmt.Sprintf("%dhosts", hosts), func(t *testing.T) {
			c := clos(hosts, 2)
			s, net, l, q := fabricFor(t, c, 1, mrc.Config{})
			p, _ := transport.Lookup(mrcnic.Kind)
			e, err := p.NewEndpoint(&mrc.Config{}, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: q, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			e.SetHooks(transport.Hooks{OnDone: func(sim.Time) { s.Pause() }})
			for _, pr := range permutation(1, hosts) {
				if err := e.AddFlow(pr.src, pr.dst, 64<<10, 0); err != nil {
					t.Fatal(err)
				}
			}
			samples := 0
			for at := sim.Microsecond; ; at += sim.Microsecond {
				if err := s.Run(at); err != nil {
					t.Fatal(err)
				}
				e.Sample(s.Now())
				samples++
				if running, _ := e.Outstanding(); running == 0 {
					break
				}
			}
			run := e.Run().(*mrcnic.Run)
			if len(run.EVSeries) != samples || len(run.FlowPlaced) != samples {
				t.Fatalf("%d samples taken, EVSeries %d, FlowPlaced %d", samples, len(run.EVSeries), len(run.FlowPlaced))
			}
			last := run.EVSeries[samples-1]
			_, placed, _ := e.Bytes()
			if last.PlacedBytes != placed || last.Good == 0 {
				t.Errorf("last sample %+v, placed %d", last, placed)
			}
			var sum int64
			for _, b := range run.FlowPlaced[samples-1] {
				sum += b
			}
			if sum != placed || len(run.FlowPlaced[0]) != hosts {
				t.Errorf("flow series: %d flows summing to %d, want %d flows summing to %d", len(run.FlowPlaced[0]), sum, hosts, placed)
			}
			files := e.Files()
			if len(files) != 1 || files[0].Name != "ev_states.csv" {
				t.Fatalf("files %v", files)
			}
			var b strings.Builder
			if err := files[0].Write(&b); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			if lines[0] != strings.Join(mrcnic.EVStatesCSVHeader, ",") || len(lines) != samples+1 {
				t.Errorf("ev_states.csv: %d lines, header %q", len(lines), lines[0])
			}
			if want := fmt.Sprintf("1,%d,%d,%d,%d,%d", run.EVSeries[0].Good, run.EVSeries[0].Skip, run.EVSeries[0].AssumedBad, run.EVSeries[0].Denied, run.EVSeries[0].PlacedBytes); lines[1] != want {
				t.Errorf("first row %q, want %q", lines[1], want)
			}
		})
	}
}

// readFile returns the file's text.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flowsCSV formats the records as the runner's flows.csv (runner/outputs.go, WriteFlowsCSV,
// its MRC rows): times in microseconds, empty when the flow never finished, plane empty.
func flowsCSV(t *testing.T, recs []transport.FlowRecord) string {
	t.Helper()
	var b strings.Builder
	cw := csv.NewWriter(&b)
	_ = cw.Write([]string{"flow", "transport", "src", "dst", "plane", "bytes", "delivered_bytes",
		"start_us", "done_us", "fct_us", "ideal_us", "fct_over_ideal", "goodput_gbps", "retx_packets", "active_of_line"})
	f64 := func(x float64) string { return strconv.FormatFloat(transport.Round3(x), 'f', -1, 64) }
	tm := func(x sim.Time) string { return f64(x.Micros()) }
	i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
	for i, r := range recs {
		plane, active := "", ""
		if r.Plane >= 0 {
			plane = strconv.Itoa(r.Plane)
		}
		if r.ActiveOfLine >= 0 {
			active = f64(r.ActiveOfLine)
		}
		row := []string{strconv.Itoa(i), "mrc", strconv.Itoa(r.Src), strconv.Itoa(r.Dst), plane, i64(r.Bytes), i64(r.Delivered),
			tm(r.Start), "", "", tm(r.Ideal), "", "", i64(r.Retx), active}
		if r.Done > 0 {
			fct := r.Done - r.Start
			row[8], row[9], row[11], row[12] = tm(r.Done), tm(fct), f64(float64(fct)/float64(r.Ideal)), f64(float64(r.Bytes)*8/fct.Seconds()/1e9)
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
