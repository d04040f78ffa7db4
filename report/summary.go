package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// leaf is one leaf of summary.json: its path ("transport.fct_p99_us", "planes_detail[2].trims")
// and its value as written in the file (numbers keep their digits).
type leaf struct {
	path  string
	value string
	num   bool // value is a JSON number
}

// summaryData is summary.json flattened to its leaves, in file order.
type summaryData struct {
	figs []leaf
	at   map[string]int // path -> index in figs
}

// get returns the leaf at path.
func (s *summaryData) get(path string) (leaf, bool) {
	if s == nil {
		return leaf{}, false
	}
	i, ok := s.at[path]
	if !ok {
		return leaf{}, false
	}
	return s.figs[i], true
}

// number returns the leaf at path as a float64 when it is a number.
func (s *summaryData) number(path string) (float64, bool) {
	f, ok := s.get(path)
	if !ok || !f.num {
		return 0, false
	}
	v, err := strconv.ParseFloat(f.value, 64)
	return v, err == nil
}

// readSummary reads summary.json: one JSON object, flattened to its leaves in file order.
// Errors are *FileError values naming the file and the line and column of the fault.
func readSummary(file string, r io.Reader) (*summaryData, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &FileError{File: file, Err: err}
	}
	if !json.Valid(data) {
		// Unmarshal reports where the syntax breaks: the offset just past the offending byte,
		// or the length of the input when it ends early (then the end is the place).
		off := int64(len(data))
		var se *json.SyntaxError
		if err = json.Unmarshal(data, new(any)); errors.As(err, &se) && se.Offset < off {
			off = se.Offset - 1
		}
		line, col := lineCol(data, off)
		return nil, &FileError{File: file, Line: line, Column: col, Err: err}
	}
	body := bytes.TrimLeft(data, " \t\r\n")
	if len(body) == 0 || body[0] != '{' {
		line, col := lineCol(data, int64(len(data)-len(body)))
		return nil, &FileError{File: file, Line: line, Column: col, Err: errors.New("summary.json must hold one JSON object")}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	s := &summaryData{at: map[string]int{}}
	if _, err := dec.Token(); err != nil { // the '{' seen above
		return nil, &FileError{File: file, Err: err}
	}
	if err := s.object(dec, ""); err != nil {
		line, col := lineCol(data, dec.InputOffset())
		return nil, &FileError{File: file, Line: line, Column: col, Err: err}
	}
	return s, nil
}

// object flattens the members of an object whose '{' was read, then reads its '}'.
func (s *summaryData) object(dec *json.Decoder, path string) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("object key is %v, not a string", tok)
		}
		p := key
		if path != "" {
			p = path + "." + key
		}
		if err := s.value(dec, p); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

// value flattens the next JSON value at path.
func (s *summaryData) value(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return s.object(dec, path)
		}
		for i := 0; dec.More(); i++ {
			if err := s.value(dec, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case json.Number:
		s.add(leaf{path: path, value: v.String(), num: true})
	case string:
		s.add(leaf{path: path, value: v})
	case bool:
		s.add(leaf{path: path, value: strconv.FormatBool(v)})
	case nil:
		s.add(leaf{path: path, value: "null"})
	}
	return nil
}

func (s *summaryData) add(f leaf) {
	if _, dup := s.at[f.path]; dup {
		return // a repeated key: the first one stands, as the table shows one row per path
	}
	s.at[f.path] = len(s.figs)
	s.figs = append(s.figs, f)
}

// lineCol converts a byte offset in data to a 1-based line and byte column.
func lineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// headlinePatterns choose the figures of the headline table, in this order. A pattern is a
// path of summary.json with "[*]" for any array index, a final ".*" for any one key and a
// final "*" after other text for any key starting with it ("latency_*"); the figures a pattern
// matches keep their order in the file.
//
// The run's identity and outcome come first (a failed run's reason, a run stopped early,
// QP errors accepted); then a training run's figures (trainingPatterns); then the
// network's (networkPatterns), which a training run that sent no packets (the flow-level
// engine, the closed forms) leaves out, as they are all zero there.
var headlinePatterns = []string{"scenario", "seed", "variant.name", "variant.values.*", "complete", "interrupted", "interrupted_at_us", "failed", "failure_reason", "stopped_early", "qp_errors_allowed",
	"hosts", "planes", "switches", "links"}

// trainingPatterns are the headline figures of a training workload: summary.json's training
// block (step time and where it went, MFU, tokens/s, power, goodput) and its ocs events.
var trainingPatterns = []string{
	"engine", "training.model", "training.gpu", "training.gpus", "training.tp", "training.cp", "training.pp", "training.dp",
	"training.ep", "training.microbatches", "training.steps", "training.simulated_steps",
	"training.step_time_us", "training.ideal_step_us", "training.compute_us", "training.exposed_comm_us",
	"training.exposed_comm_max_us", "training.tp_exposed_us", "training.pp_wait_us", "training.dp_exposed_us",
	"training.ep_exposed_us", "training.cp_exposed_us", "training.bubble_us", "training.sync_us", "training.slowest_rank",
	"training.slowest_rank_coord", "training.slowest_wait", "training.slowest_wait_us",
	"training.mfu", "training.tokens_per_s",
	"training.power_mean_mw", "training.power_min_mw", "training.power_max_mw", "training.power_swing_mw",
	"training.slew_mw_per_ms", "training.battery_mj", "training.battery_mwh", "training.energy_per_step_mj",
	"training.goodput_frac", "training.goodput_mc_frac", "training.ckpt_interval_s", "training.ckpt_young_s",
	"training.ckpt_daly_s", "training.job_mtbf_s", "training.restarts_per_day", "training.absorbed_failures_per_day",
	"ocs[*].*",
}

// networkPatterns are the headline figures of the traffic: rates, packets, latency, queues,
// the transports, PFC and faults. Collectives are not in the headline: a sweep has six
// figures per size (88 keys for a small one); the busbw plot and the collectives table just
// below it show them.
var networkPatterns = slices.Concat([]string{
	"flows", "duration_us", "end_us", "offered_gbps", "delivered_gbps", "delivered_fraction",
	"sent_packets", "delivered_packets", "trimmed_packets", "dropped_packets", breakdownPatterns[0],
	"in_flight_packets_at_end", "ce_marks",
	"latency_*",
	"queue_depth.p50_bytes", "queue_depth.p99_bytes", "queue_depth.max_bytes",
}, transportPatterns(), []string{
	"pfc.pauses", "pfc.paused_us_total", "pfc.ports_paused", "pfc.most_paused_port",
	"pfc.headroom_exceeded_ports",
	"fault_baseline_end_us", "fault_slowdown_us",
})

// transportKeys are the headline key patterns of the transport block of summary.json
// ("transport"), in headline order: the figures every transport shares, then ones a block may
// or may not have (resends by cause, CNPs, EV states at the end). The report never asks which
// transport ran: a key the block lacks is skipped.
var transportKeys = []string{"kind", "flows", "flows_completed", "jct_us", "fct_p50_us", "fct_p99_us", "fct_max_us", "fct_over_ideal_mean",
	"fct_over_ideal_max", "retx_packets", strings.TrimPrefix(breakdownPatterns[1], "transport."), "timeouts", "cnps_sent", "qp_errors",
	"ev_good_at_end", "ev_assumed_bad_at_end", "ev_denied_at_end"}

// breakdownPatterns are the headline patterns that break a total shown beside them down by
// reason or cause: the headline leaves out their zero entries (zeroBreakdown).
var breakdownPatterns = []string{"drops_packets.*", "transport.retx_packets_by_cause.*"}

// transportPatterns are the headline patterns of the transport block.
func transportPatterns() []string {
	out := make([]string, len(transportKeys))
	for i, k := range transportKeys {
		out[i] = "transport." + k
	}
	return out
}

// pathPattern is path with every array index replaced by "[*]".
func pathPattern(path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(path, '[')
		j := strings.IndexByte(path, ']')
		if i < 0 || j < i {
			b.WriteString(path)
			return b.String()
		}
		b.WriteString(path[:i])
		b.WriteString("[*]")
		path = path[j+1:]
	}
}

// matchHeadline reports whether path matches pattern (see headlinePatterns).
func matchHeadline(pattern, path string) bool {
	p := pathPattern(path)
	if prefix, ok := strings.CutSuffix(pattern, "*"); ok && !strings.HasSuffix(prefix, ".") {
		rest, ok := strings.CutPrefix(p, prefix)
		return ok && rest != "" && !strings.ContainsAny(rest, ".[")
	}
	if parent, ok := strings.CutSuffix(pattern, ".*"); ok {
		rest, ok := strings.CutPrefix(p, parent+".")
		return ok && rest != "" && !strings.ContainsAny(rest, ".[")
	}
	return p == pattern
}

// headline returns the paths of the headline figures present in any of sums, in the order of
// the patterns and, within a pattern, of the first summary that has them. A training run's
// network figures are left out when it sent no packets.
func headline(sums ...*summaryData) []string {
	var out []string
	seen := map[string]bool{}
	add := func(patterns []string, want []bool) {
		for _, pat := range patterns {
			for i, s := range sums {
				if s == nil || !want[i] {
					continue
				}
				for _, f := range s.figs {
					if !seen[f.path] && matchHeadline(pat, f.path) {
						seen[f.path] = true
						out = append(out, f.path)
					}
				}
			}
		}
	}
	all, network := make([]bool, len(sums)), make([]bool, len(sums))
	for i, s := range sums {
		all[i], network[i] = true, !s.isTraining() || s.hasTraffic()
	}
	add(headlinePatterns, all)
	add(trainingPatterns, all)
	add(networkPatterns, network)
	return out
}

// headlineSig is the significant digits a headline shows of a figure that is not an
// integer (the "every figure" table and summary.json keep every digit).
const headlineSig = 4

// headlineValue is how a headline table shows a summary leaf: integers and non-numbers as
// written; other numbers to headlineSig significant digits, in plain decimals from 0.001 up
// ("6451", "12.35", "0.8043") and in exponent form below ("1.993e-06"), so a figure such as
// battery_mwh 0.0000019926932222157823 reads at a glance.
func headlineValue(f leaf) string {
	if !f.num {
		return f.value
	}
	x, err := strconv.ParseFloat(f.value, 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return f.value
	}
	ax := math.Abs(x)
	if ax < 1e-3 || ax >= 1e15 {
		return strconv.FormatFloat(x, 'g', headlineSig, 64)
	}
	decimals := max(headlineSig-1-int(math.Floor(math.Log10(ax))), 0)
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
