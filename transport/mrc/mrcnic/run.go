package mrcnic

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// Run is what an MRC run leaves for tests and tools beyond the summary (Endpoint.Run): the
// engines of every QP and the series sampled at run.sample_interval (Endpoint.Sample).
type Run struct {
	m *Endpoint
	// EVSeries samples EV states summed over all QPs at every Sample.
	EVSeries []EVSample
	// FlowPlaced samples each flow's placed payload bytes at EVSeries' times:
	// FlowPlaced[sample][flow]. Kept for traffic runs (no Hooks.Delivered) of at most
	// MaxFlowSeries flows.
	FlowPlaced [][]int64
}

// MaxFlowSeries bounds the flows whose per-flow progress is sampled (Run.FlowPlaced).
const MaxFlowSeries = 1024

// EVSample is the EV state counts over all QPs at one time.
type EVSample struct {
	At                             sim.Time
	Good, Skip, AssumedBad, Denied int
	// PlacedBytes is the payload placed at receivers so far, all flows: its slope is goodput.
	PlacedBytes int64
}

// Flow returns QP i's sender, receiver, hosts and completion times (zero while not complete):
// done when its last posted byte was acknowledged, placed when its receiver last placed a
// whole transfer. i is 0..Flows()-1 (AddFlow and first Send order).
func (r *Run) Flow(i int) (snd *mrc.Sender, rcv *mrc.Receiver, src, dst int, done, placed sim.Time) {
	f := r.m.flows[i]
	return f.snd, f.rcv, int(f.src), int(f.dst), f.done, f.placed
}

// Flows returns the number of MRC QPs.
func (r *Run) Flows() int { return len(r.m.flows) }

// BaseRTT returns the base RTT the engines were configured with: a full data packet and its
// SACK over the topology's longest minimal path.
func (r *Run) BaseRTT() sim.Time { return r.m.baseRTT }

// Run returns the adapter's typed run, a *Run.
func (m *Endpoint) Run() any { return m.run }

// Sample records the EV state counts over all QPs at now into Run.EVSeries and, for a traffic
// run (no Hooks.Delivered) of at most MaxFlowSeries flows, each flow's placed payload into
// Run.FlowPlaced.
func (m *Endpoint) Sample(now sim.Time) {
	r := m.run
	r.EVSeries = append(r.EVSeries, m.evSample(now))
	if m.delivered == nil && len(m.flows) <= MaxFlowSeries {
		row := make([]int64, len(m.flows))
		for i, f := range m.flows {
			row[i] = f.rcv.Stats.PlacedBytes
		}
		r.FlowPlaced = append(r.FlowPlaced, row)
	}
}

// evSample sums EV state counts over all QPs.
func (m *Endpoint) evSample(now sim.Time) EVSample {
	e := EVSample{At: now}
	for _, f := range m.flows {
		good, skip, bad, denied, _ := f.snd.EVs().Counts()
		e.Good += good
		e.Skip += skip
		e.AssumedBad += bad
		e.Denied += denied
		e.PlacedBytes += f.rcv.Stats.PlacedBytes
	}
	return e
}

// Flows returns one record per QP, in QP order, for flows.csv and the trace: plane -1 (MRC
// sprays over every plane), the payload posted and placed, Done when every transfer posted on
// the QP was acknowledged (0 before), Ideal the transfer alone on an idle fabric, Retx every
// cause, ActiveOfLine the throughput while all flows were active (-1: not measured). Extra is
// nil (no MRC-specific trace arguments).
func (m *Endpoint) Flows() []transport.FlowRecord {
	out := make([]transport.FlowRecord, len(m.flows))
	for i, f := range m.flows {
		r := transport.FlowRecord{
			Src: int(f.src), Dst: int(f.dst), Plane: -1,
			Bytes: f.bytes, Delivered: f.rcv.Stats.PlacedBytes,
			Start: f.start, Ideal: m.idealFCT(f.bytes, f.hops),
			Retx: f.retx(), ActiveOfLine: f.activeOfLine,
		}
		if f.posts > 0 && f.acked == f.posts {
			r.Done = f.done
		}
		out[i] = r
	}
	return out
}

// EVStatesFile is the name of the file Files writes into the results folder.
const EVStatesFile = "ev_states.csv"

// EVStatesCSVHeader is the header of ev_states.csv: the EV state counts summed over every QP
// at each sample time (microseconds), and the payload placed so far (its slope is goodput).
var EVStatesCSVHeader = []string{"time_us", "good", "skip", "assumed_bad", "denied", "placed_bytes"}

// Files returns MRC's own output file: ev_states.csv (WriteEVStatesCSV of the run).
func (m *Endpoint) Files() []transport.File {
	return []transport.File{{Name: EVStatesFile, Write: m.run.WriteEVStatesCSV}}
}

// WriteEVStatesCSV writes ev_states.csv: EVStatesCSVHeader, then one row per EVSeries sample,
// the time in microseconds rounded to 3 decimals. Errors: the writer's.
func (r *Run) WriteEVStatesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(EVStatesCSVHeader); err != nil {
		return err
	}
	for _, e := range r.EVSeries {
		row := []string{strconv.FormatFloat(transport.Round3(e.At.Micros()), 'f', -1, 64), strconv.Itoa(e.Good), strconv.Itoa(e.Skip),
			strconv.Itoa(e.AssumedBad), strconv.Itoa(e.Denied), strconv.FormatInt(e.PlacedBytes, 10)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
