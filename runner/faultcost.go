package runner

import (
	"encoding/csv"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// FaultCost is what one failure cost the run (one scenario entry's failure, or one cycle of a
// flap or a random process), measured on the run's goodput series (payload delivered per
// queue sample) and the transport's loss-recovery events. Times are relative to the failure
// unless named *_at_us. Empty (omitted) figures could not be measured: no goodput before the
// failure to compare with, no transport reaction, no recovery within the run.
type FaultCost struct {
	Entry  int     `json:"entry"`  // faults[Entry]
	Cycle  int     `json:"cycle"`  // flap cycle or random failure number, 0 otherwise
	Action string  `json:"action"` // the entry's action (down, flap, blackhole, ...)
	Target string  `json:"target"` // the element it named
	AtUs   float64 `json:"at_us"`
	// EndUs is when the failure ended (its restore), or the end of the traffic when it never
	// did within it.
	EndUs float64 `json:"end_us"`
	// DetectUs is the first loss-driven retransmission (MRC: SACK gap or timeout; RoCE:
	// go-back-N) after the failure: when the transport reacted. A failure that dropped no
	// packet counts only those until LosslessReactionWindow past its end. DetectUs, LastRetxUs and
	// RecoverUs are durations from AtUs (faults.csv writes them as absolute times:
	// detect_at_us, last_retx_at_us, recover_at_us).
	DetectUs *float64 `json:"detect_us,omitempty"`
	// LastRetxUs is the last loss-driven retransmission before the next failure or the end:
	// when the transport stopped paying for it.
	LastRetxUs *float64 `json:"last_retx_us,omitempty"`
	// RecoverUs is when the run stopped falling behind its faultless twin: the deficit of
	// delivered bytes reached 99% of its largest value before the next failure (twin baseline
	// only). Absent when the failure was still on when the twin finished its traffic and the
	// deficit reached that 99% only in the last tenth of the time from the failure to then: a
	// permanent failure that costs goodput to the end never recovers.
	RecoverUs *float64 `json:"recover_us,omitempty"`
	// BaselineGbps is the goodput over the ten samples before the failure; DuringGbps the mean
	// over the failure's span (start to end); DuringFraction the run's delivered bytes over the
	// faultless twin's from the failure to the span's end or the twin's last delivery,
	// whichever is first (twin baseline only).
	BaselineGbps   float64 `json:"baseline_gbps,omitempty"`
	DuringGbps     float64 `json:"during_gbps"`
	DuringFraction float64 `json:"during_fraction,omitempty"`
	// LostBytes is how much further behind its faultless twin the run fell, at worst, while
	// the failure lasted (delivered bytes; twin baseline only, else absent).
	LostBytes *int64 `json:"throughput_lost_bytes,omitempty"`
	// PacketsDropped counts the link_down, loss, blackhole and no_route drops anywhere in the
	// fabric while the failure lasted (failures that overlap share them).
	PacketsDropped int64 `json:"packets_dropped"`
	// LossRetxEvents counts loss-driven retransmission events (a QP resending, at one
	// instant) within the span and until the next failure.
	LossRetxEvents int `json:"loss_retx_events"`
	// QPErrors counts QPs that errored from the failure until the next one (the last
	// failure: to the end of the traffic, inclusive).
	QPErrors int `json:"qp_errors"`
	// Note says why RecoverUs is absent although the goodput caught up: QPs errored after the
	// failure, or (the failures on at the end of the traffic, and the last one) transfers
	// never finished. A run that lost transfers did not recover, whatever its goodput says.
	Note string `json:"note,omitempty"`
}

// LosslessReactionWindow is how long after a failure that dropped no packet (no link_down,
// loss, blackhole or no_route drop anywhere from its start to the next failure or the end of
// the traffic) its loss-driven retransmissions are still counted as its reactions (DetectUs,
// LastRetxUs, LossRetxEvents): 100 us past its end, the default out-of-order hole hold of IB
// and RoCE (transport/ib, transport/roce DefaultReorderHold) and above the automatic hold of
// a credit fabric (ib.Config.AutoReorderHold). Nothing was lost, so the only retransmissions
// it can cause are spurious ones, from the reordering adaptive routing did around it, which
// ends once the packets that went around it have arrived. A retransmission after that is
// some other hole (reordering that outlived the hold somewhere else, milliseconds later in
// /tmp/s39/f8/coll3.yaml): counting it made a 20 us outage read "detect 5241.5 us".
// Lockstep's choice; docs/protocols.md, "InfiniBand link fault", has the figures.
const LosslessReactionWindow = 100 * sim.Microsecond

// labels returns each fault entry's target as written (a name or a glob), for the rows.
func labels(sc *scenario.Scenario) []string {
	out := make([]string, len(sc.Faults))
	for i := range sc.Faults {
		_, out[i] = sc.Faults[i].Target()
	}
	return out
}

// faultCosts measures each failure of evs (those the run reached) on the goodput series
// progress, the transport's loss-recovery times lossAt and QP error times errAt, over traffic
// that ended at end. A failure is one entry's failure at one instant over every element it
// names, or one cycle of a flap, or one failure of a random process on one element. With twin
// (the same run with the faults inert, sampled at the same times) the goodput lost and the
// recovery are measured against it; without, they are left out.
func faultCosts(net *fabric.Network, evs []FaultEvent, targets []string, progress, twin []progressSample, lossAt, errAt []sim.Time, end sim.Time, unfinished int) []FaultCost {
	spans := faultSpans(evs)
	endDrops := faultDrops(net)
	twinDone := twinEnd(twin, end)
	var out []FaultCost
	for n, sp := range spans {
		if sp.start >= end {
			continue // after the traffic: nothing left to cost
		}
		stop := end
		if sp.ended && sp.end < end {
			stop = sp.end
		}
		next := end
		if n+1 < len(spans) {
			next = max(spans[n+1].start, sp.start)
		}
		target := sp.ev.Target
		if sp.entry < len(targets) && !sp.ev.Random {
			target = targets[sp.entry] // the name or glob as written: a glob fails every match
		} else if sp.ev.Random {
			target = sp.elem
		}
		c := FaultCost{Entry: sp.entry, Cycle: sp.cycle + sp.n, Action: sp.ev.Cause, Target: target, AtUs: us(sp.start), EndUs: us(stop)}
		if c.Action == "" {
			c.Action = sp.ev.Action
		}
		// Transport reactions, from the failure until the next one; the last failure's up to
		// the end of the traffic included (a run that stops at its last QP error ends then).
		// A failure that dropped nothing, from its start to the next failure or the end,
		// lost nothing, so a loss-driven retransmission long after it ended is not its
		// detection (LosslessReactionWindow).
		limit := max(next, stop)
		last := n+1 == len(spans)
		countReactions(&c, sp.start, limit, lossLimit(spans, n, stop, limit, endDrops), last, lossAt, errAt)
		// What the failure left behind: QPs errored after it, or transfers that never
		// finished (blamed on the last failure and on any still on at the end).
		var left []string
		if c.QPErrors > 0 {
			left = append(left, fmt.Sprintf("%d QP(s) errored after it", c.QPErrors))
		}
		if unfinished > 0 && (last || !sp.ended || sp.end >= end) {
			left = append(left, fmt.Sprintf("%d transfer(s) never finished", unfinished))
		}
		if len(left) > 0 {
			c.Note = "not recovered: " + strings.Join(left, ", ")
		}
		// Drops in the fabric while it lasted.
		if sp.ended {
			c.PacketsDropped = sp.drop
		} else {
			c.PacketsDropped = endDrops - sp.drops0
		}
		// Goodput: the rate before (ten samples), during, and against the twin.
		first := sort.Search(len(progress), func(i int) bool { return progress[i].At > sp.start })
		if nb := min(first-1, 10); nb >= 2 {
			a, b := progress[first-1-nb], progress[first-1]
			c.BaselineGbps = round3(float64(b.Placed-a.Placed) * 8 / (b.At - a.At).Seconds() / 1e9)
		}
		if d := stop - sp.start; d > 0 {
			c.DuringGbps = round3(float64(cumPlaced(progress, stop)-cumPlaced(progress, sp.start)) * 8 / d.Seconds() / 1e9)
		}
		if twin != nil {
			compareTwin(&c, sp, progress, twin, first, stop, limit, twinDone)
		}
		out = append(out, c)
	}
	return out
}

// faultKey names one failure: a scenario entry's cycle (0 unless it flaps), or a random
// process's n-th failure on one element.
type faultKey struct {
	entry, cycle int
	elem         string // random processes: the element
	n            int    // random processes: its failure number
}

// faultSpan is one failure's extent: from its first applied event to the restore that ended
// it (ended false: still on at the end), with the fabric's drops in between.
type faultSpan struct {
	faultKey
	start, end   sim.Time
	ev           FaultEvent // its first event
	ended        bool
	drops0, drop int64 // drops before its first event; while it lasted (ended)
}

// faultSpans groups the applied events of evs into failures (faultKey), each from its
// failing events to its restoring ones, in order of start time, then entry, cycle, element
// and failure number.
func faultSpans(evs []FaultEvent) []*faultSpan {
	spans := map[faultKey]*faultSpan{}
	var order []*faultSpan
	randomN := map[[2]string]int{}   // (entry, element) -> failures so far
	open := map[[2]string]faultKey{} // (entry, element) -> its open random failure
	for _, e := range evs {
		if !e.applied {
			continue
		}
		restore := e.Restore || e.Action == "up" || e.Action == "undegrade" || e.Action == "unblackhole" ||
			(e.Action == "loss" && e.Loss == 0) || (e.Action == "ber" && e.BER == 0)
		k := faultKey{entry: e.Entry, cycle: e.Cycle}
		if e.Random {
			re := [2]string{strconv.Itoa(e.Entry), e.Name}
			if restore {
				k = open[re]
			} else {
				randomN[re]++
				k = faultKey{entry: e.Entry, elem: e.Name, n: randomN[re]}
				open[re] = k
			}
		}
		// One failure's events at one instant (one per element) run in the simulator's
		// tiebreak order, not this list's: its drops count from the first applied (the least
		// dropsBefore) to the last restore applied (the largest).
		sp := spans[k]
		if restore {
			if sp != nil && !sp.ended {
				sp.end, sp.ended = e.At, true
				sp.drop = e.dropsBefore - sp.drops0
			} else if sp != nil && e.At == sp.end {
				sp.drop = max(sp.drop, e.dropsBefore-sp.drops0)
			}
			continue
		}
		if sp == nil {
			sp = &faultSpan{faultKey: k, start: e.At, ev: e, drops0: e.dropsBefore}
			spans[k] = sp
			order = append(order, sp)
		} else if !sp.ended && e.At == sp.start {
			sp.drops0 = min(sp.drops0, e.dropsBefore)
		}
	}
	sort.Slice(order, func(a, b int) bool {
		sa, sb := order[a], order[b]
		if sa.start != sb.start {
			return sa.start < sb.start
		}
		ka, kb := sa.faultKey, sb.faultKey
		if ka.entry != kb.entry {
			return ka.entry < kb.entry
		}
		if ka.cycle != kb.cycle {
			return ka.cycle < kb.cycle
		}
		if ka.elem != kb.elem {
			return ka.elem < kb.elem
		}
		return ka.n < kb.n
	})
	return order
}

// cumPlaced returns the payload delivered by time t on the goodput series ps (its last value
// holds once it ended).
func cumPlaced(ps []progressSample, t sim.Time) int64 {
	i := sort.Search(len(ps), func(i int) bool { return ps[i].At > t })
	if i == 0 {
		return 0
	}
	return ps[i-1].Placed
}

// twinEnd is when the twin delivered its last byte (end without a twin): past it the twin's
// goodput is 0, so spans and deficits are compared up to it (a failure lasting to the end of
// the traffic would otherwise compare equal totals and read as no loss).
func twinEnd(twin []progressSample, end sim.Time) sim.Time {
	if len(twin) == 0 {
		return end
	}
	last := twin[len(twin)-1].Placed
	i := sort.Search(len(twin), func(i int) bool { return twin[i].Placed >= last })
	return twin[i].At
}

// lossLimit is until when failure spans[n], which ended (or was cut off) at stop, is
// credited with loss-driven retransmissions: limit (the next failure, or the end of the
// traffic), or stop + LosslessReactionWindow when that is earlier and nothing was dropped
// from its start to limit (endDrops: the fabric's failure drops at the end).
func lossLimit(spans []*faultSpan, n int, stop, limit sim.Time, endDrops int64) sim.Time {
	dropped := endDrops - spans[n].drops0
	if n+1 < len(spans) {
		dropped = spans[n+1].drops0 - spans[n].drops0
	}
	if dropped <= 0 && stop+LosslessReactionWindow < limit {
		return stop + LosslessReactionWindow
	}
	return limit
}

// countReactions fills c's transport reactions to a failure that started at start: the
// first loss recovery (detect), the loss recoveries and their last, from start until
// lossLimit (at most limit), and the QP errors, from start until limit (each limit included
// when it is limit and last, the run's last failure).
func countReactions(c *FaultCost, start, limit, lossLimit sim.Time, last bool, lossAt, errAt []sim.Time) {
	before := func(t sim.Time) bool { return t < limit || last && t <= limit }
	lossBefore := func(t sim.Time) bool { return t < lossLimit || lossLimit == limit && before(t) }
	i := sort.Search(len(lossAt), func(i int) bool { return lossAt[i] >= start })
	if i < len(lossAt) && lossBefore(lossAt[i]) {
		c.DetectUs = ptr(us(lossAt[i] - start))
	}
	for j := i; j < len(lossAt) && lossBefore(lossAt[j]); j++ {
		c.LossRetxEvents++
		c.LastRetxUs = ptr(us(lossAt[j] - start))
	}
	for _, t := range errAt {
		if t >= start && before(t) {
			c.QPErrors++
		}
	}
}

// compareTwin fills c's goodput figures against the twin for the failure sp, which lasted
// until stop (its next failure, or the end, at limit): the fraction of the twin's goodput
// delivered while it lasted, the goodput lost (the deficit's largest growth) and the recovery
// time. first is the first sample of progress after sp started; twinDone is twinEnd's.
func compareTwin(c *FaultCost, sp *faultSpan, progress, twin []progressSample, first int, stop, limit, twinDone sim.Time) {
	cmp := min(stop, twinDone) // the span compared with the twin: while the twin still sent
	if tw := cumPlaced(twin, cmp) - cumPlaced(twin, sp.start); cmp > sp.start && tw > 0 {
		c.DuringFraction = round3(float64(cumPlaced(progress, cmp)-cumPlaced(progress, sp.start)) / float64(tw))
	}
	// The run's deficit against the twin: how far behind it fell. Goodput lost to this
	// failure is the deficit's largest growth while it lasted (at the end of the traffic the
	// run has caught up in bytes and the cost is its lateness, fault_slowdown_us); it has
	// recovered when the deficit stopped growing, at 99% of its largest value up to the
	// next failure.
	deficit := func(t sim.Time) int64 { return cumPlaced(twin, t) - cumPlaced(progress, t) }
	d0 := deficit(sp.start)
	var lost int64
	for j := first; j < len(progress) && progress[j].At <= stop; j++ {
		lost = max(lost, deficit(progress[j].At)-d0)
	}
	c.LostBytes = &lost
	var peak int64
	var peakAt sim.Time
	for j := first; j < len(progress) && progress[j].At <= limit; j++ {
		if d := deficit(progress[j].At) - d0; d > peak {
			peak, peakAt = d, progress[j].At
		}
	}
	if peak <= 0 {
		c.RecoverUs = ptr(0)
	} else {
		for j := first; j < len(progress) && progress[j].At <= peakAt; j++ {
			if deficit(progress[j].At)-d0 >= peak*99/100 {
				// A failure still on when the twin finished, whose deficit was still
				// growing in the last tenth of that time, never recovered within the
				// traffic: the run only caught up once the twin was idle.
				on := !sp.ended || sp.end >= twinDone
				if at := progress[j].At; !on || 10*(twinDone-at) > twinDone-sp.start {
					c.RecoverUs = ptr(us(at - sp.start))
				}
				break
			}
		}
	}
	if c.Note != "" {
		c.RecoverUs = nil // goodput caught up, but what was lost stayed lost
	}
}

// FaultsCSVHeader is the header of faults.csv: one row per failure (FaultCost). Every time
// column is an absolute simulated time in microseconds, its name ending _us: at_us and
// end_us as in summary.json, detect_at_us, last_retx_at_us and recover_at_us its
// detect_us, last_retx_us and recover_us (durations from at_us) added to at_us, so the file
// lines up with links.csv's and flows.csv's times (docs/outputs.md). Before, the three were
// written relative under summary.json's names, beside absolute at_us and end_us.
var FaultsCSVHeader = []string{"entry", "cycle", "action", "target", "at_us", "end_us", "detect_at_us", "last_retx_at_us",
	"recover_at_us", "baseline_gbps", "during_gbps", "during_fraction", "throughput_lost_bytes", "packets_dropped",
	"loss_retx_events", "qp_errors", "note"}

// optInt formats an optional count: empty when absent.
func optInt(x *int64) string {
	if x == nil {
		return ""
	}
	return strconv.FormatInt(*x, 10)
}

// WriteFaultsCSV writes faults.csv from the summary's fault costs. Errors: the writer's.
func WriteFaultsCSV(w io.Writer, costs []FaultCost) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(FaultsCSVHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	opt := func(x float64) string {
		if x == 0 {
			return ""
		}
		return f(x)
	}
	for _, c := range costs {
		// at is a duration from the failure's start as an absolute time, rounded as the
		// summary rounds (both terms are to the nanosecond already).
		at := func(rel *float64) string {
			if rel == nil {
				return ""
			}
			return f(round3(c.AtUs + *rel))
		}
		row := []string{strconv.Itoa(c.Entry), strconv.Itoa(c.Cycle), c.Action, c.Target, f(c.AtUs), f(c.EndUs),
			at(c.DetectUs), at(c.LastRetxUs), at(c.RecoverUs), opt(c.BaselineGbps), f(c.DuringGbps), opt(c.DuringFraction),
			optInt(c.LostBytes), strconv.FormatInt(c.PacketsDropped, 10), strconv.Itoa(c.LossRetxEvents), strconv.Itoa(c.QPErrors), c.Note}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func ptr(x float64) *float64 { return &x }
