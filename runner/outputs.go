package runner

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// FlowsCSVHeader is the header of flows.csv: one row per traffic flow (raw: per flow and
// plane; MRC: per QP; RoCE: per transfer, its stripes summed). Times in microseconds (empty
// when the flow never finished), bytes are payload bytes except for raw traffic (wire bytes,
// raw packets have no payload/header split), rates in Gb/s. docs/outputs.md explains each
// column.
var FlowsCSVHeader = []string{"flow", "transport", "src", "dst", "plane", "bytes", "delivered_bytes",
	"start_us", "done_us", "fct_us", "ideal_us", "fct_over_ideal", "goodput_gbps", "retx_packets", "active_of_line"}

// WriteFlowsCSV writes flows.csv for res: a header and one row per flow, in flow order.
// Errors: the writer's.
func WriteFlowsCSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(FlowsCSVHeader); err != nil {
		return err
	}
	f64 := func(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }
	i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
	t := func(x sim.Time) string { return f64(x.Micros()) }
	gbps := func(bytes int64, d sim.Time) string {
		if d <= 0 {
			return ""
		}
		return f64(float64(bytes) * 8 / d.Seconds() / 1e9)
	}
	end := res.Sim.Now()
	switch {
	case res.Raw != nil:
		for i, f := range res.Raw.Flows {
			st := res.Raw.Stats[i]
			stop := min(f.Stop, end)
			row := []string{strconv.Itoa(i), "raw", i64(int64(f.Src)), i64(int64(f.Dst)), strconv.Itoa(f.Plane),
				i64(st.SentBytes), i64(st.RecvBytes), t(f.Start), "", "", "", "", gbps(st.RecvBytes, stop-f.Start), "0", ""}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	case res.MRC != nil && res.Collective == nil:
		m := res.MRC.m
		for i, fl := range m.flows {
			row := []string{strconv.Itoa(i), "mrc", i64(int64(fl.src)), i64(int64(fl.dst)), "", i64(fl.bytes),
				i64(fl.rcv.Stats.PlacedBytes), t(fl.start), "", "", "", "", "", i64(mrcRetx(fl)), ofLine(fl.activeOfLine)}
			ideal := m.idealFCT(fl.bytes, fl.hops)
			row[10] = t(ideal)
			if fl.posts > 0 && fl.acked == fl.posts {
				fct := fl.done - fl.start
				row[8], row[9], row[11], row[12] = t(fl.done), t(fct), f64(float64(fct)/float64(ideal)), gbps(fl.bytes, fct)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	case res.RoCE != nil && res.Collective == nil:
		r := res.RoCE.r
		for i, fl := range r.flows {
			var placed, retx int64
			for _, q := range fl.qps {
				placed += r.qps[q].rcv.Stats.PlacedBytes
				retx += r.qps[q].snd.Stats.RetxPackets
			}
			ideal := r.idealFCT(fl.bytes, fl.hops)
			row := []string{strconv.Itoa(i), "roce", i64(int64(fl.src)), i64(int64(fl.dst)), "", i64(fl.bytes),
				i64(placed), t(fl.start), "", "", t(ideal), "", "", i64(retx), ofLine(fl.activeOfLine)}
			if fl.done > 0 {
				fct := fl.done - fl.start
				row[8], row[9], row[11], row[12] = t(fl.done), t(fct), f64(float64(fct)/float64(ideal)), gbps(fl.bytes, fct)
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// EVStatesCSVHeader is the header of ev_states.csv (MRC runs): the EV state counts summed over
// every QP at each sample time, and the payload placed so far (its slope is goodput).
var EVStatesCSVHeader = []string{"time_us", "good", "skip", "assumed_bad", "denied", "placed_bytes"}

// WriteEVStatesCSV writes ev_states.csv for an MRC run (nothing but the header otherwise).
// Errors: the writer's.
func WriteEVStatesCSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(EVStatesCSVHeader); err != nil {
		return err
	}
	if res.MRC != nil {
		for _, e := range res.MRC.EVSeries {
			row := []string{strconv.FormatFloat(round3(e.At.Micros()), 'f', -1, 64), strconv.Itoa(e.Good), strconv.Itoa(e.Skip),
				strconv.Itoa(e.AssumedBad), strconv.Itoa(e.Denied), strconv.FormatInt(e.PlacedBytes, 10)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ofLine formats a fraction of line rate for flows.csv: empty when negative (not measured).
func ofLine(x float64) string {
	if x < 0 {
		return ""
	}
	return strconv.FormatFloat(round3(x), 'f', -1, 64)
}

// mrcRetx is a flow's retransmitted packets, every cause.
func mrcRetx(f *mrcFlow) int64 {
	var n int64
	for _, c := range f.snd.Stats.Retx {
		n += c
	}
	return n
}
