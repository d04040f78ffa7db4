package uecnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// Detail is UEC's own part of summary.json's transport block (transport.Summary.Detail);
// docs/outputs.md describes each key.
type Detail struct {
	Delivery string `json:"delivery"` // rud or rod
	LB       string `json:"lb"`       // reps or oblivious (rod: one EV)
	Paths    int    `json:"paths"`    // EV pool size
	// ACKsSent and NACKsSent: the receivers' answers; TrimsNACKed the trimmed headers
	// received (of which TrimsLastHop at the last hop).
	ACKsSent     int64 `json:"acks_sent"`
	NACKsSent    int64 `json:"nacks_sent"`
	TrimsNACKed  int64 `json:"trims_nacked"`
	TrimsLastHop int64 `json:"trims_last_hop"`
	// Duplicates are whole data packets received twice; OutOfOrderDrops (ROD) those
	// discarded ahead of the next PSN; Spurious packets acknowledged after being deemed lost.
	Duplicates      int64 `json:"duplicates"`
	OutOfOrderDrops int64 `json:"out_of_order_drops"`
	Spurious        int64 `json:"spurious_retx"`
	// EVsRecycled and EVsFresh: data packets sent on a reused (REPS) or a freshly drawn EV;
	// EVsDropped: EVs REPS removed after CE, a trim or a timeout.
	EVsRecycled int64 `json:"evs_recycled"`
	EVsFresh    int64 `json:"evs_fresh"`
	EVsDropped  int64 `json:"evs_dropped"`
	// REPSFreezes: REPS freezing periods begun (lb reps, after a loss without trim);
	// EVsFrozen: packets sent on a cached EV kept for reuse while frozen; EVsSkipped: EVs
	// the bitmap variant passed over for their penalty. Omitted when 0.
	REPSFreezes int64 `json:"reps_freezes,omitempty"`
	EVsFrozen   int64 `json:"evs_frozen,omitempty"`
	EVsSkipped  int64 `json:"evs_skipped,omitempty"`
	// NSCC decisions over all QPs.
	NSCCDecreases   int64 `json:"nscc_decreases"`
	NSCCQuickAdapts int64 `json:"nscc_quick_adapts"`
	// RCCC (cc rccc or nscc+rccc; omitted otherwise): CC names the congestion control;
	// CreditsSent the credit packets the destinations sent (paced grants and answers to
	// requests), CreditRequests the sources' credit requests, CreditGrantedBytes the wire
	// bytes of credit the pacers granted, SpeculativeBytes the wire bytes sent before credit,
	// LastHopTrimsIgnored the last-hop trim NACKs not taken as NSCC congestion.
	CC                  string `json:"cc,omitempty"`
	CreditsSent         int64  `json:"credits_sent,omitempty"`
	CreditRequests      int64  `json:"credit_requests,omitempty"`
	CreditGrantedBytes  int64  `json:"credit_granted_bytes,omitempty"`
	SpeculativeBytes    int64  `json:"speculative_bytes,omitempty"`
	LastHopTrimsIgnored int64  `json:"last_hop_trims_ignored,omitempty"`
	// Ephemeral PDCs (transport.uec.pdc set; omitted otherwise): PDCsOpened and PDCsClosed
	// over the run, PDCPeakOpen the most open at one NIC at once, PDCWaits the messages
	// (or traffic transfers) that waited for a PDC, PDCWaitMeanUs their mean wait.
	PDCsOpened    int64   `json:"pdcs_opened,omitempty"`
	PDCsClosed    int64   `json:"pdcs_closed,omitempty"`
	PDCPeakOpen   int     `json:"pdc_peak_open,omitempty"`
	PDCWaits      int64   `json:"pdc_waits,omitempty"`
	PDCWaitMeanUs float64 `json:"pdc_wait_mean_us,omitempty"`
	// PlanesAvoided (multi-plane fabrics): times a connection began avoiding a plane after
	// a loss on evidence of a dead path there (plane.go). Omitted when 0.
	PlanesAvoided int64 `json:"planes_avoided,omitempty"`
	// RTOUs and ReorderWindowUs are the timers in force (first RTO, RUD reorder window), us.
	RTOUs           float64 `json:"rto_us"`
	ReorderWindowUs float64 `json:"reorder_window_us"`
}

// idealFCT is a transfer of b payload bytes alone over hops switches (nic.IdealTransfer).
func (e *Endpoint) idealFCT(b int64, hops int) sim.Time {
	c := &e.cfg
	pay := int64(c.PayloadBytes)
	full := int64(c.WireBytes(c.PayloadBytes))
	wb := b / pay * full
	if r := b % pay; r > 0 {
		wb += int64(c.WireBytes(int(r)))
	}
	return nic.IdealTransfer(e.layout.Params(), e.nicRate, hops, wb, min(full, wb), c.AckBytes)
}

// Summary gathers the UEC figures of the run that ended at end (Detail a *Detail).
func (e *Endpoint) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	c := &e.cfg
	collective := e.hooks.Delivered != nil
	s := &transport.Summary{Kind: Kind, Name: "UEC", Flows: len(e.qps)}
	s.RetxPacketsByCause = make(map[string]int64, uec.NumRetxCauses)
	for k := uec.RetxCause(0); k < uec.NumRetxCauses; k++ {
		s.RetxPacketsByCause[k.String()] = 0
	}
	d := &Detail{Delivery: c.Delivery, LB: c.LB, Paths: c.Paths}
	if c.Delivery == uec.DeliveryROD {
		d.LB = "single"
	}
	s.Detail = d
	s.HeaderOverheadPct = transport.Round3(100 * float64(c.HeaderBytes) / float64(c.WireBytes(c.PayloadBytes)))
	var acc transport.FCTAcc
	var maxBytes int64
	for _, q := range e.qps {
		maxBytes = max(maxBytes, q.bytes)
		st := &q.snd.Stats
		s.DataPackets += st.DataPackets
		for k := uec.RetxCause(0); k < uec.NumRetxCauses; k++ {
			s.RetxPacketsByCause[k.String()] += st.Retx[k]
			s.RetxPackets += st.Retx[k]
		}
		s.RetxBytes += st.RetxBytes
		s.Timeouts += st.Timeouts
		d.Spurious += st.Spurious
		ev := &q.snd.EVs().Stats
		d.EVsRecycled += ev.Recycled
		d.EVsFresh += ev.Fresh
		d.EVsDropped += ev.Dropped
		d.REPSFreezes += ev.Freezes
		d.EVsFrozen += ev.Frozen
		d.EVsSkipped += ev.Skipped
		if n := q.snd.NSCC(); n != nil {
			d.NSCCDecreases += n.Stats.Decreases
			d.NSCCQuickAdapts += n.Stats.QuickAdapts
		}
		rs := &q.rcv.Stats
		d.ACKsSent += rs.ACKs
		d.NACKsSent += rs.NACKs
		d.TrimsNACKed += rs.Trimmed
		d.TrimsLastHop += rs.TrimmedLastHop
		d.Duplicates += rs.Duplicates
		d.OutOfOrderDrops += rs.OutOfOrderDrops
		if err := q.snd.Err(); err != nil {
			s.QPErrors++
			if len(s.QPErrorList) < 5 {
				s.QPErrorList = append(s.QPErrorList, err.Error())
			}
		}
		switch {
		case collective:
			if q.tokHead == len(q.tokens) {
				s.FlowsCompleted++
			}
		case q.posts > 0 && q.acked == q.posts:
			s.FlowsCompleted++
			acc.Add(q.start, q.done, e.idealFCT(q.bytes, q.hops))
		}
	}
	if c.HasRCCC() {
		d.CC = c.CC
		d.CreditsSent, d.CreditRequests = e.creditsSent, e.requestsSent
		for _, sc := range e.sched {
			if sc != nil {
				d.CreditGrantedBytes += sc.Stats.GrantedBytes
			}
		}
		for _, q := range e.qps {
			d.SpeculativeBytes += q.snd.Stats.SpeculativeBytes
			d.LastHopTrimsIgnored += q.snd.Stats.LastHopTrimsIgnored
		}
	}
	if p := e.pdc; p != nil {
		d.PDCsOpened, d.PDCsClosed, d.PDCPeakOpen, d.PDCWaits = p.opened, p.closed, p.peak, p.waits
		if p.waits > 0 {
			d.PDCWaitMeanUs = transport.Round3(p.waited.Micros() / float64(p.waits))
		}
	}
	d.PlanesAvoided = e.planesAvoided
	if len(e.qps) > 0 {
		rto, reorder := e.qps[0].snd.Timers()
		d.RTOUs, d.ReorderWindowUs = transport.Round3(rto.Micros()), transport.Round3(reorder.Micros())
	}
	s.Fill(e.baseRTT, e.idealFCT(maxBytes, e.layout.Sizing().MaxSwitchHops), &acc, s.FlowsCompleted == s.Flows, e.fct, e.fctMax, collective, end)
	s.SetLossSpan(e.log.LossAt, faults)
	return s
}

// Flows returns one record per QP for flows.csv and the trace (Plane -1: UEC sprays).
func (e *Endpoint) Flows() []transport.FlowRecord {
	out := make([]transport.FlowRecord, len(e.qps))
	for i, q := range e.qps {
		var retx int64
		for _, n := range q.snd.Stats.Retx {
			retx += n
		}
		var ideal sim.Time
		if q.posts == 1 {
			ideal = e.idealFCT(q.bytes, q.hops)
		}
		out[i] = transport.FlowRecord{Src: int(q.src), Dst: int(q.dst), Plane: -1, Bytes: q.bytes, Delivered: q.rcv.Stats.PlacedBytes,
			Start: q.start, Done: q.done, Ideal: ideal, Retx: retx, ActiveOfLine: -1}
		if q.acked < q.posts {
			out[i].Done = 0
		}
	}
	return out
}
