package runner

import (
	"encoding/csv"
	"io"
	"sort"
	"strconv"

	"github.com/lockstepsim/lockstep/fabric"
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
	// go-back-N) after the failure: when the transport reacted.
	DetectUs *float64 `json:"detect_us,omitempty"`
	// LastRetxUs is the last loss-driven retransmission before the next failure or the end:
	// when the transport stopped paying for it.
	LastRetxUs *float64 `json:"last_retx_us,omitempty"`
	// RecoverUs is when goodput, averaged over three samples, first came back to 95% of the
	// baseline's (empty: never within the traffic, e.g. capacity lost for good).
	RecoverUs *float64 `json:"recover_us,omitempty"`
	// BaselineGbps is the goodput over the ten samples before the failure; DuringGbps the mean
	// over the failure's span (start to end); DuringFraction its ratio to the baseline's over
	// the span (the faultless twin's goodput then, or BaselineGbps).
	BaselineGbps   float64 `json:"baseline_gbps,omitempty"`
	DuringGbps     float64 `json:"during_gbps"`
	DuringFraction float64 `json:"during_fraction,omitempty"`
	// LostBytes integrates the goodput shortfall below the baseline over the span, bytes (a
	// faultless twin's goodput, or the rate before the failure).
	LostBytes int64 `json:"throughput_lost_bytes"`
	// PacketsDropped counts link_down and loss drops at the failed ports and blackhole drops
	// at the failed switches over the whole run.
	PacketsDropped int64 `json:"packets_dropped"`
	// LossRetxEvents counts loss-driven retransmission events (a QP resending, at one
	// instant) within the span and until the next failure.
	LossRetxEvents int `json:"loss_retx_events"`
	// QPErrors counts QPs that errored from the failure until the next one.
	QPErrors int `json:"qp_errors"`
}

// faultCosts measures each failure of res.Faults on the goodput series progress, the
// transport's loss-recovery times lossAt and QP error times errAt, over traffic that ended at
// end. With twin (the same run without faults, sampled at the same times) the baseline at each
// sample is the twin's goodput then; without, the mean goodput of the ten samples before the
// failure.
func faultCosts(net *fabric.Network, evs []FaultEvent, progress, twin []progressSample, lossAt, errAt []sim.Time, end sim.Time) []FaultCost {
	type key struct{ entry, cycle int }
	type span struct {
		start, end sim.Time
		ev         FaultEvent
		ports      map[fabric.PortID]bool
		nodes      map[fabric.NodeID]bool
		ended      bool
	}
	spans := map[key]*span{}
	var order []key
	for _, e := range evs {
		k := key{e.Entry, e.Cycle}
		sp := spans[k]
		if e.Restore || e.Action == "up" || e.Action == "undegrade" || e.Action == "unblackhole" || (e.Action == "loss" && e.Loss == 0) || (e.Action == "ber" && e.BER == 0) {
			if sp != nil && !sp.ended {
				sp.end, sp.ended = e.At, true
			}
			continue
		}
		if sp == nil {
			sp = &span{start: e.At, ev: e, ports: map[fabric.PortID]bool{}, nodes: map[fabric.NodeID]bool{}}
			spans[k] = sp
			order = append(order, k)
		}
		if e.Port >= 0 {
			sp.ports[e.Port] = true
		}
		if e.Node >= 0 {
			sp.nodes[e.Node] = true
		}
	}
	sort.Slice(order, func(a, b int) bool {
		sa, sb := spans[order[a]], spans[order[b]]
		if sa.start != sb.start {
			return sa.start < sb.start
		}
		return order[a].entry < order[b].entry || order[a].entry == order[b].entry && order[a].cycle < order[b].cycle
	})
	// rate[i] is the goodput over (progress[i-1].At, progress[i].At], bits/s.
	rate := make([]float64, len(progress))
	for i := 1; i < len(progress); i++ {
		if dt := progress[i].At - progress[i-1].At; dt > 0 {
			rate[i] = float64(progress[i].Placed-progress[i-1].Placed) * 8 / dt.Seconds()
		}
	}
	// twinRate[i]: the faultless run's goodput over the same interval as rate[i] (0 once it
	// has ended).
	var twinRate []float64
	if twin != nil {
		twinRate = make([]float64, len(progress))
		for i := 1; i < len(progress) && i < len(twin); i++ {
			if dt := twin[i].At - twin[i-1].At; dt > 0 && twin[i].At == progress[i].At {
				twinRate[i] = float64(twin[i].Placed-twin[i-1].Placed) * 8 / dt.Seconds()
			}
		}
	}
	var out []FaultCost
	for n, k := range order {
		sp := spans[k]
		if sp.start >= end {
			continue // after the traffic: it cost nothing measurable
		}
		stop := end
		if sp.ended && sp.end < end {
			stop = sp.end
		}
		next := end
		if n+1 < len(order) {
			next = max(spans[order[n+1]].start, sp.start)
		}
		c := FaultCost{Entry: k.entry, Cycle: k.cycle, Action: sp.ev.Cause, Target: sp.ev.Target, AtUs: us(sp.start), EndUs: us(stop)}
		if c.Action == "" {
			c.Action = sp.ev.Action
		}
		// Transport reactions.
		i := sort.Search(len(lossAt), func(i int) bool { return lossAt[i] >= sp.start })
		if i < len(lossAt) && lossAt[i] < max(next, stop) {
			c.DetectUs = ptr(us(lossAt[i] - sp.start))
		}
		for j := i; j < len(lossAt) && lossAt[j] < max(next, stop); j++ {
			c.LossRetxEvents++
			c.LastRetxUs = ptr(us(lossAt[j] - sp.start))
		}
		for _, t := range errAt {
			if t >= sp.start && t < max(next, stop) {
				c.QPErrors++
			}
		}
		// Drops at the failed elements.
		for pid := range sp.ports {
			for _, q := range []fabric.PortID{pid, net.Ports[pid].Peer} {
				t := net.Ports[q].Totals()
				c.PacketsDropped += t.Drops[fabric.DropLinkDown] + t.Drops[fabric.DropLoss]
			}
		}
		for nd := range sp.nodes {
			c.PacketsDropped += net.Nodes[nd].Drops[fabric.DropBlackhole]
		}
		// Goodput before, during, and the recovery.
		first := sort.Search(len(progress), func(i int) bool { return progress[i].At > sp.start })
		var base float64
		if nb := min(first-1, 10); nb >= 2 {
			for j := first - nb; j < first; j++ {
				base += rate[j]
			}
			base /= float64(nb)
			c.BaselineGbps = round3(base / 1e9)
		}
		ref := func(j int) float64 { // the baseline goodput at sample j
			if twinRate != nil {
				return twinRate[j]
			}
			return base
		}
		var sum, refSum float64
		var cnt int
		var lost float64
		for j := max(first, 1); j < len(progress) && progress[j].At <= stop; j++ {
			sum += rate[j]
			refSum += ref(j)
			cnt++
			if r := ref(j); r > rate[j] {
				lost += (r - rate[j]) / 8 * (progress[j].At - progress[j-1].At).Seconds()
			}
		}
		if cnt > 0 {
			c.DuringGbps = round3(sum / float64(cnt) / 1e9)
			if refSum > 0 {
				c.DuringFraction = round3(sum / refSum)
			}
		}
		c.LostBytes = int64(lost)
		if base > 0 || twinRate != nil {
			for j := max(first, 1); j+2 < len(progress) && progress[j].At <= end; j++ {
				r := ref(j) + ref(j+1) + ref(j+2)
				if r > 0 && rate[j]+rate[j+1]+rate[j+2] >= 0.95*r {
					c.RecoverUs = ptr(max(us(progress[j-1].At-sp.start), 0))
					break
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// FaultsCSVHeader is the header of faults.csv: one row per failure (FaultCost).
var FaultsCSVHeader = []string{"entry", "cycle", "action", "target", "at_us", "end_us", "detect_us", "last_retx_us",
	"recover_us", "baseline_gbps", "during_gbps", "during_fraction", "throughput_lost_bytes", "packets_dropped",
	"loss_retx_events", "qp_errors"}

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
	optp := func(x *float64) string {
		if x == nil {
			return ""
		}
		return f(*x)
	}
	for _, c := range costs {
		row := []string{strconv.Itoa(c.Entry), strconv.Itoa(c.Cycle), c.Action, c.Target, f(c.AtUs), f(c.EndUs),
			optp(c.DetectUs), optp(c.LastRetxUs), optp(c.RecoverUs), opt(c.BaselineGbps), f(c.DuringGbps), opt(c.DuringFraction),
			strconv.FormatInt(c.LostBytes, 10), strconv.FormatInt(c.PacketsDropped, 10), strconv.Itoa(c.LossRetxEvents), strconv.Itoa(c.QPErrors)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func ptr(x float64) *float64 { return &x }
