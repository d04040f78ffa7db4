package scenario

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/cdf"
)

// Generated flow arrivals: patterns poisson and onoff (docs/traffic.md). Each makes transfers
// whose sizes are drawn from an empirical CDF (traffic/cdf: the published WebSearch and Hadoop
// tables, a fixed size, or a file), between hosts drawn uniformly (a source from arrivals.src,
// a destination from arrivals.dst other than the source), at start times of a random process:
//
//   - poisson: one Poisson process per source host, of rate load x host rate / (8 x mean size)
//     flows/s (the traffic generators of pFabric and HPCC offer load so), or rate flows/s for
//     the whole group; merged, that is a Poisson process of the summed rate with a uniform
//     source.
//   - onoff: each source host alternates ON and OFF periods, exponential with means arrivals.on
//     and arrivals.off (starting in the stationary phase), and sends Poisson arrivals only when
//     ON, at (on + off) / on times the rate above, so the mean load is the same and the traffic
//     is burstier.
//
// Flows arrive from the group's start for arrivals.duration, or until arrivals.count flows have
// arrived. Everything is drawn from sim.Stream(run.seed, the group's path), so the same
// scenario makes the same flows.

// Generated arrival patterns and raw packet processes.
const (
	PatternPoisson = "poisson" // Poisson flow arrivals (see Arrivals)
	PatternOnOff   = "onoff"   // on-off flow arrivals (see Arrivals)
	ProcessPaced   = "paced"   // raw packets at a constant bit rate (Traffic.Process)
	ProcessPoisson = "poisson" // raw packets at exponential gaps (Traffic.Process)
)

// Arrivals are the settings of patterns poisson and onoff (Traffic.Arrivals).
type Arrivals struct {
	// Load is the offered load of each source host as a fraction of its NIC rate (all
	// planes), 0 < load <= 1: flows arrive at load x rate / (8 x mean size) per source host.
	Load float64 `yaml:"load,omitempty"`
	// Rate is the flow arrival rate of the whole group in flows per second (instead of Load).
	Rate float64 `yaml:"rate,omitempty"`
	// Sizes is the flow size distribution: "websearch" (DCTCP's web search, Alizadeh et al.,
	// SIGCOMM 2010), "hadoop" (Facebook's Hadoop, Roy et al., SIGCOMM 2015), "fixed <size>"
	// (every flow that many bytes, e.g. "fixed 64KiB") or "file <path>" (a CDF file of
	// `size cdf` lines, relative to the scenario's folder; traffic/cdf).
	Sizes string `yaml:"sizes"`
	// Src and Dst are the source and destination hosts (default: every host). A flow's
	// destination is drawn from Dst other than its source.
	Src []int `yaml:"src,omitempty"`
	Dst []int `yaml:"dst,omitempty"`
	// Duration is how long flows arrive, from the group's start; Count instead stops after
	// that many flows. Give one.
	Duration sim.Time `yaml:"duration,omitempty"`
	Count    int      `yaml:"count,omitempty"`
	// On and Off are the mean ON and OFF periods of pattern onoff (exponential).
	On  sim.Time `yaml:"on,omitempty"`
	Off sim.Time `yaml:"off,omitempty"`
}

func init() {
	RegisterPattern(PatternPoisson, PatternGenerator{
		Summary: "Poisson flow arrivals at a load, sizes from a CDF (arrivals)",
		Expand:  func(t *Traffic, env TrafficEnv) ([]FlowSpec, error) { return expandArrivals(t, env, false) },
	})
	RegisterPattern(PatternOnOff, PatternGenerator{
		Summary: "on-off flow arrivals at a mean load, sizes from a CDF (arrivals)",
		Expand:  func(t *Traffic, env TrafficEnv) ([]FlowSpec, error) { return expandArrivals(t, env, true) },
	})
}

// usesArrivals reports whether pattern reads Traffic.Arrivals.
func usesArrivals(pattern string) bool { return pattern == PatternPoisson || pattern == PatternOnOff }

// arrivalPlan is a checked Arrivals: what expandArrivals draws from.
type arrivalPlan struct {
	sizes    *cdf.CDF
	src, dst []int
	dstAt    map[int]int // host -> index in dst
	perHost  float64     // flows/s of one source host (on average)
	until    sim.Time    // arrivals before it: start + duration, or run.duration (count mode)
	count    int         // flows to make (count mode), else 0
	on, off  float64     // onoff: mean periods, ps
}

// expandArrivals checks the group's arrivals and draws its flows.
func expandArrivals(t *Traffic, env TrafficEnv, onoff bool) ([]FlowSpec, error) {
	pl, err := planArrivals(t, env, onoff)
	if err != nil {
		return nil, err
	}
	rng := sim.Stream(env.Seed, env.Path)
	var flows []FlowSpec
	add := func(at sim.Time, src int) bool {
		if pl.count > 0 && len(flows) >= pl.count || at >= pl.until {
			return false
		}
		dst := pl.pickDst(rng, src)
		flows = append(flows, FlowSpec{Src: &src, Dst: &dst, Bytes: sim.Size(pl.sizes.Quantile(rng.Float64())), Start: at})
		return len(flows) < MaxGeneratedFlows
	}
	if onoff {
		pl.onOff(rng, t.Start, add)
	} else {
		pl.poisson(rng, t.Start, add)
	}
	if len(flows) >= MaxGeneratedFlows && (pl.count == 0 || pl.count > len(flows)) {
		return nil, Errorf(env.Path+".arrivals", "made %d flows and more were due, the limit per group; shorten arrivals.duration or lower the load", len(flows))
	}
	if pl.count > len(flows) {
		return nil, Errorf(env.Path+".arrivals.count", "%d, but only %d flows arrived before run.duration (%v); lower count or raise the rate", pl.count, len(flows), env.Duration)
	}
	return flows, nil
}

// poisson draws the merged process: exponential gaps at the group's rate, a uniform source.
func (pl *arrivalPlan) poisson(rng *rand.Rand, start sim.Time, add func(sim.Time, int) bool) {
	gap := float64(sim.Second) / (pl.perHost * float64(len(pl.src))) // mean, ps
	at := float64(start)
	for {
		at += rng.ExpFloat64() * gap
		if at >= float64(sim.MaxTime) || !add(sim.Time(at), pl.src[rng.IntN(len(pl.src))]) {
			return
		}
	}
}

// onOff draws each source host's on-off process and merges them in time order (ties to the
// lower index in src).
func (pl *arrivalPlan) onOff(rng *rand.Rand, start sim.Time, add func(sim.Time, int) bool) {
	gap := float64(sim.Second) / pl.perHost * pl.on / (pl.on + pl.off) // mean gap while ON, ps
	hs := make(onOffHeap, len(pl.src))
	for i := range hs {
		h := &hs[i]
		h.i = i
		h.at = float64(start)
		if rng.Float64() < pl.on/(pl.on+pl.off) { // stationary phase; exponential residuals
			h.end = h.at + rng.ExpFloat64()*pl.on
		} else {
			h.at += rng.ExpFloat64() * pl.off
			h.end = h.at + rng.ExpFloat64()*pl.on
		}
		pl.nextOn(rng, h, gap)
	}
	heap.Init(&hs)
	for hs[0].at < float64(sim.MaxTime) {
		h := &hs[0]
		if !add(sim.Time(h.at), pl.src[h.i]) {
			return
		}
		pl.nextOn(rng, h, gap)
		heap.Fix(&hs, 0)
	}
}

// nextOn moves h.at to its next arrival: an exponential gap inside the ON period, or past its
// end through an OFF period into the next ON period (memoryless, so the draw restarts there).
func (pl *arrivalPlan) nextOn(rng *rand.Rand, h *onOffSrc, gap float64) {
	for {
		next := h.at + rng.ExpFloat64()*gap
		if next < h.end {
			h.at = next
			return
		}
		h.at = h.end + rng.ExpFloat64()*pl.off
		h.end = h.at + rng.ExpFloat64()*pl.on
		if h.at >= float64(pl.until) || h.at >= float64(sim.MaxTime) {
			h.at = math.Inf(1)
			return
		}
	}
}

// pickDst draws a destination from dst other than src, uniformly.
func (pl *arrivalPlan) pickDst(rng *rand.Rand, src int) int {
	k, self := pl.dstAt[src]
	if !self {
		return pl.dst[rng.IntN(len(pl.dst))]
	}
	j := rng.IntN(len(pl.dst) - 1)
	if j >= k {
		j++
	}
	return pl.dst[j]
}

// onOffSrc is one source host's on-off state: its next arrival and the end of its ON period.
type onOffSrc struct {
	i       int // index in src
	at, end float64
}

// onOffHeap orders sources by next arrival, then index.
type onOffHeap []onOffSrc

func (h onOffHeap) Len() int { return len(h) }
func (h onOffHeap) Less(a, b int) bool {
	return h[a].at < h[b].at || h[a].at == h[b].at && h[a].i < h[b].i
}
func (h onOffHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }

// Push and Pop complete heap.Interface; onOff only calls heap.Init and heap.Fix, which use
// neither: a source stays in the heap (at +Inf once it has no more arrivals).
func (h *onOffHeap) Push(x any) { *h = append(*h, x.(onOffSrc)) }
func (h *onOffHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// planArrivals checks the group's arrivals against the topology and run and works out the
// rates; the number of flows it would make is estimated first and refused past
// MaxGeneratedFlows.
func planArrivals(t *Traffic, env TrafficEnv, onoff bool) (*arrivalPlan, error) {
	p := env.Path + ".arrivals"
	a := t.Arrivals
	if a == nil {
		return nil, Errorf(p, "missing; pattern %s needs arrivals: {load: 0.5, sizes: websearch, duration: 1ms} (or rate flows/s, count)", t.Pattern)
	}
	if t.Bytes != 0 || t.given.bytes {
		return nil, Errorf(env.Path+".bytes", "%v is set, but pattern %s draws each flow's size from arrivals.sizes; for one size use sizes: fixed %v", t.Bytes, t.Pattern, t.Bytes)
	}
	pl := &arrivalPlan{until: sim.MaxTime}
	var err error
	if pl.sizes, err = arrivalSizes(p+".sizes", a.Sizes, env.Dir); err != nil {
		return nil, err
	}
	if err := checkBytes(p+".sizes", sim.Size(pl.sizes.Max()), EnginePacket); err != nil {
		return nil, err
	}
	if pl.src, err = hostSet(p+".src", a.Src, env.Hosts); err != nil {
		return nil, err
	}
	if pl.dst, err = hostSet(p+".dst", a.Dst, env.Hosts); err != nil {
		return nil, err
	}
	pl.dstAt = make(map[int]int, len(pl.dst))
	for i, h := range pl.dst {
		pl.dstAt[h] = i
	}
	if len(pl.dst) == 1 && containsInt(pl.src, pl.dst[0]) {
		return nil, Errorf(p+".dst", "host %d is the only destination and also a source; a flow needs another host", pl.dst[0])
	}
	switch {
	case a.Load != 0 && a.Rate != 0:
		return nil, Errorf(p, "load %v and rate %v both set; give one", a.Load, a.Rate)
	case a.Rate != 0:
		if !(a.Rate > 0) || math.IsInf(a.Rate, 0) {
			return nil, Errorf(p+".rate", "%v is out of range; want flows per second above 0", a.Rate)
		}
		pl.perHost = a.Rate / float64(len(pl.src))
	case a.Load != 0:
		if !(a.Load > 0 && a.Load <= 1) {
			return nil, Errorf(p+".load", "%v is out of range; allowed 0 < load <= 1 (a fraction of each source host's NIC rate)", a.Load)
		}
		pl.perHost = a.Load * float64(env.HostRate) / (8 * pl.sizes.Mean())
	default:
		return nil, Errorf(p+".load", "missing; give load (a fraction of each source host's NIC rate, 0 < load <= 1) or rate (flows per second)")
	}
	if onoff {
		if a.On <= 0 || a.Off <= 0 {
			return nil, Errorf(p+".on", "on %v, off %v; pattern onoff needs both mean periods above 0, e.g. on: 10us, off: 30us", a.On, a.Off)
		}
		pl.on, pl.off = float64(a.On), float64(a.Off)
	} else if a.On != 0 || a.Off != 0 {
		return nil, Errorf(p+".on", "on %v, off %v are set, but pattern poisson has no periods; use pattern onoff", a.On, a.Off)
	}
	rate := pl.perHost * float64(len(pl.src)) // flows/s, the group
	switch {
	case a.Duration != 0 && a.Count != 0:
		return nil, Errorf(p, "duration %v and count %d both set; give one", a.Duration, a.Count)
	case a.Count < 0 || a.Count > MaxGeneratedFlows:
		return nil, Errorf(p+".count", "%d is out of range; allowed 1..%d flows per group", a.Count, MaxGeneratedFlows)
	case a.Count > 0:
		pl.count, pl.until = a.Count, env.Duration
		if span := float64(a.Count) / rate; span > (env.Duration - t.Start).Seconds() {
			return nil, Errorf(p+".count", "%d flows at %.4g flows/s take about %v, past run.duration (%v) from the group's start %v; lower count or raise the rate", a.Count, rate, sim.Time(min(span*float64(sim.Second), float64(sim.MaxTime))), env.Duration, t.Start)
		}
	case a.Duration < 0:
		return nil, Errorf(p+".duration", "%v must be positive", a.Duration)
	case a.Duration > 0:
		if a.Duration > env.Duration-t.Start {
			return nil, Errorf(p+".duration", "%v from the group's start %v ends after run.duration (%v); flows arrive within the run", a.Duration, t.Start, env.Duration)
		}
		pl.until = t.Start + a.Duration
		if est := rate * a.Duration.Seconds(); est > MaxGeneratedFlows {
			return nil, Errorf(p+".duration", "%v at %.4g flows/s is about %.3g flows, beyond the limit of %d per group; shorten it or lower the load", a.Duration, rate, est, MaxGeneratedFlows)
		}
	default:
		return nil, Errorf(p+".duration", "missing; give how long flows arrive (e.g. duration: 1ms) or count (a number of flows)")
	}
	return pl, nil
}

// arrivalSizes reads arrivals.sizes: a built-in table, fixed <size> or file <path>.
func arrivalSizes(p, v, dir string) (*cdf.CDF, error) {
	allowed := fmt.Sprintf("allowed %s, fixed <size>, file <path>", strings.Join(cdf.Names(), ", "))
	kind, arg, _ := strings.Cut(strings.TrimSpace(v), " ")
	arg = strings.TrimSpace(arg)
	if c, ok := cdf.Named(kind); ok && arg == "" {
		return c, nil
	}
	switch kind {
	case "":
		return nil, Errorf(p, "missing; %s", allowed)
	case "fixed":
		b, err := sim.ParseSize(arg)
		if err != nil || b <= 0 || int64(b) > cdf.MaxSize {
			return nil, Errorf(p, "%q: fixed needs a positive size up to %v, e.g. fixed 64KiB", v, sim.Size(cdf.MaxSize))
		}
		return cdf.New(v, []cdf.Point{{Size: int64(b), P: 1}})
	case "file":
		if arg == "" {
			return nil, Errorf(p, "%q: file needs a path, e.g. file sizes.cdf", v)
		}
		path := arg
		if !filepath.IsAbs(path) && dir != "" {
			path = filepath.Join(dir, path)
		}
		if st, err := os.Stat(path); err != nil {
			return nil, Errorf(p, "%q: %v", v, err)
		} else if !st.Mode().IsRegular() {
			return nil, Errorf(p, "%q: %s is not a regular file", v, path)
		}
		f, err := os.Open(path)
		if err != nil {
			return nil, Errorf(p, "%q: %v", v, err)
		}
		defer f.Close()
		c, err := cdf.Parse(path, f)
		if err != nil {
			return nil, Errorf(p, "%v", err)
		}
		return c, nil
	}
	return nil, Errorf(p, "%q is not a size distribution; %s", v, allowed)
}

// hostSet checks a list of host indices (nil: every host): in range, no repeats.
func hostSet(p string, hosts []int, n int) ([]int, error) {
	if hosts == nil {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	if len(hosts) == 0 {
		return nil, Errorf(p, "is empty; list host indices or leave it out for every host")
	}
	seen := make(map[int]bool, len(hosts))
	for i, h := range hosts {
		if h < 0 || h >= n {
			return nil, Errorf(fmt.Sprintf("%s[%d]", p, i), "host %d does not exist; allowed 0..%d", h, n-1)
		}
		if seen[h] {
			return nil, Errorf(fmt.Sprintf("%s[%d]", p, i), "host %d is listed twice", h)
		}
		seen[h] = true
	}
	return hosts, nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
