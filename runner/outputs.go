package runner

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
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
	case res.Endpoint != nil && res.Collective == nil:
		kind := res.Summary.Transport.Kind
		for i, fl := range res.Endpoint.Flows() {
			plane := ""
			if fl.Plane >= 0 {
				plane = strconv.Itoa(fl.Plane)
			}
			row := []string{strconv.Itoa(i), kind, i64(int64(fl.Src)), i64(int64(fl.Dst)), plane, i64(fl.Bytes),
				i64(fl.Delivered), t(fl.Start), "", "", t(fl.Ideal), "", "", i64(fl.Retx), ofLine(fl.ActiveOfLine)}
			if fl.Done > 0 {
				fct := fl.Done - fl.Start
				row[8], row[9], row[12] = t(fl.Done), t(fct), gbps(fl.Bytes, fct)
				if fl.Ideal > 0 {
					row[11] = f64(float64(fct) / float64(fl.Ideal))
				}
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ofLine formats a fraction of line rate for flows.csv (transport.RoundFrac: 3 decimals, 3
// significant digits below 0.01): empty when negative (not measured).
func ofLine(x float64) string {
	if x < 0 {
		return ""
	}
	return strconv.FormatFloat(transport.RoundFrac(x), 'f', -1, 64)
}
