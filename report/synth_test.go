package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synthRun is a small but complete results folder: every file the report reads, in the formats
// of docs/outputs.md, with values made up by formula (2 planes, 4 hosts, 40 intervals of 2 us,
// a link failure from 30 to 50 us).
type synthRun struct {
	intervals int
	flows     int
	ports     int     // switch ports per tier (host NIC ports: 4 per plane)
	scale     float64 // multiplies FCTs and rates, to tell two runs apart
	name      string
	transport string // summary.json's "transport" object; "" for a small MRC-like one
}

func defaultSynth() synthRun {
	return synthRun{intervals: 40, flows: 50, ports: 8, scale: 1, name: "synth"}
}

// files returns the folder's files by name.
func (s synthRun) files() map[string]string {
	f := map[string]string{}
	f[fileSummary] = fmt.Sprintf(`{
  "scenario": %q,
  "seed": 1,
  "hosts": 4,
  "planes": 2,
  "switches": 4,
  "links": 16,
  "flows": %d,
  "duration_us": 80,
  "end_us": %g,
  "offered_gbps": %g,
  "delivered_gbps": %g,
  "drops_packets": {"link_down": 3, "queue_full": 0},
  "queue_depth": {"p50_bytes": 4231, "p99_bytes": 25391, "max_bytes": 46687},
  "planes_detail": [{"plane": 0, "trims": 1}, {"plane": 1, "trims": 2}],
  "transport": %s,
  "pfc": {"pauses": 12, "paused_us_total": 3.5, "ports_paused": 3, "most_paused_port": "p0.t0-0.down1"},
  "fault_slowdown_us": 2.5,
  "collectives": [{"name": "dp", "op": "all_reduce", "busbw_GBps": 55.648}]
}
`, s.name, s.flows, 80*s.scale, 400*s.scale, 380*s.scale, s.transportBlock())

	var b strings.Builder
	b.WriteString("flow,transport,src,dst,plane,bytes,delivered_bytes,start_us,done_us,fct_us,ideal_us,fct_over_ideal,goodput_gbps,retx_packets\n")
	for i := range s.flows {
		fct := (10 + float64(i*i%97)) * s.scale
		if i == s.flows-1 {
			fmt.Fprintf(&b, "%d,mrc,%d,%d,,1048576,524288,0,,,10,,,0\n", i, i%4, (i+1)%4) // never finished
			continue
		}
		fmt.Fprintf(&b, "%d,mrc,%d,%d,,1048576,1048576,0,%g,%g,10,%g,%g,%d\n", i, i%4, (i+1)%4, fct, fct, fct/10, 8*1048576/fct/1e3, i%3)
	}
	f[fileFlows] = b.String()

	b.Reset()
	b.WriteString("start_us,end_us,port,node,plane,tier,rate_gbps,util_pct,tx_bytes,queue_max_bytes,drops\n")
	for k := range s.intervals {
		t0, t1 := float64(2*k), float64(2*k+2)
		for plane := range 2 {
			for h := range 4 {
				tx := int(float64(20000+1000*((k+h)%5)) * s.scale)
				fmt.Fprintf(&b, "%g,%g,h%d.p%d,h%d,%d,-1,100,%g,%d,%d,0\n", t0, t1, h, plane, h, plane, float64(tx)/250, tx, 4230*(h%2))
			}
			for tier := range 2 {
				for p := range s.ports {
					q := ((k*7 + p*13 + tier*5) % 11) * 4096
					if k > 15 && k < 25 && p == 1 {
						q = 0 // a quiet spell
					}
					node := fmt.Sprintf("p%d.t%d-0", plane, tier)
					fmt.Fprintf(&b, "%g,%g,%s.down%d,%s,%d,%d,100,50,%d,%d,%d\n", t0, t1, node, p, node, plane, tier, 12500*p, q, k%2)
				}
			}
		}
	}
	f[fileLinks] = b.String()

	b.Reset()
	b.WriteString("time_us,port,node,paused_frac,pause_events\n")
	for k := 5; k < s.intervals; k += 3 {
		fmt.Fprintf(&b, "%d,p0.t0-0.down1,p0.t0-0,%g,%d\n", 2*k, float64(k%4)/4, k%4)
		fmt.Fprintf(&b, "%d,h2.p0,h2,%g,1\n", 2*k, 0.5)
	}
	f[filePauses] = b.String()

	b.Reset()
	b.WriteString("time_us,good,skip,assumed_bad,denied,placed_bytes\n")
	for k := 1; k <= s.intervals; k++ {
		bad := 0
		if k > 15 && k < 25 {
			bad = 24
		}
		fmt.Fprintf(&b, "%d,%d,%d,%d,%d,%d\n", 2*k, 1024-bad, k%3, bad, bad/2, k*100000)
	}
	f[fileEV] = b.String()

	f[fileFaults] = "entry,cycle,action,target,at_us,end_us,detect_at_us,last_retx_at_us,recover_at_us,baseline_gbps,during_gbps,during_fraction,throughput_lost_bytes,packets_dropped,loss_retx_events,qp_errors\n" +
		"0,0,down,h0.p1,30,50,31.5,40,42,400,300,0.75,10000,3,4,0\n" +
		"1,0,flap,p0.t0-0.down3,60,,,,,400,,,,0,0,0\n"
	b.Reset()
	b.WriteString("name,size_bytes,count,type,redop,root,op,algorithm,ranks,time_us,algbw_GBps,busbw_GBps,model_us\n")
	// A sweep of two concurrent collectives from 256 KiB to 4 MiB: the time a latency plus
	// size over a rate, the model a little faster.
	for k := range 5 {
		size := 262144 << k
		for _, c := range []struct {
			name, op, alg string
			factor, rate  float64
		}{{"dp", "all_reduce", "ring", 1.75, 40}, {"tp", "all_gather", "ring", 0.875, 55}} {
			alg := c.alg
			if k == 0 && c.name == "dp" {
				alg = "halving_doubling"
			}
			tm := (12 + float64(size)/(c.rate*1e3)) * s.scale
			algbw := float64(size) / tm / 1e3
			fmt.Fprintf(&b, "%s,%d,%d,float,sum,-1,%s,%s,8,%.2f,%.2f,%.2f,%.2f\n", c.name, size, size/4, c.op, alg, tm, algbw, algbw*c.factor, tm*0.85)
		}
	}
	f[fileCollectives] = b.String()
	f[fileTopology] = synthTopology()
	return f
}

// transportBlock is summary.json's "transport" object of the run.
func (s synthRun) transportBlock() string {
	if s.transport != "" {
		return s.transport
	}
	return fmt.Sprintf(`{"kind": "mrc", "jct_us": %g, "fct_p50_us": 40.5, "fct_p99_us": 79, "retx_packets": 7, "qp_errors": 0}`, 80*s.scale)
}

// Transport blocks shaped as lockstep writes them (transport.Summary: the common keys, then
// the transport's own), with keys the headline lists and keys it does not.
const (
	synthMRCTransport = `{"kind": "mrc", "flows": 50, "flows_completed": 49, "qp_errors": 1,
    "qp_error_list": ["h0->h1: retries exhausted"], "data_packets": 1200,
    "retx_packets": 10, "retx_packets_by_cause": {"trim_nack": 5, "sack_gap": 3, "timeout": 1, "out_of_window": 1},
    "retx_bytes": 41800, "timeouts": 1, "base_rtt_us": 5.4, "jct_us": 80, "fct_mean_us": 42,
    "fct_p50_us": 40.5, "fct_p99_us": 79, "fct_max_us": 80, "ideal_fct_us": 10, "fct_over_ideal_mean": 4.2,
    "fct_over_ideal_max": 8, "header_overhead_pct": 1.9, "active_until_us": 12,
    "active_throughput_mean_of_line": 0.4, "active_throughput_min_of_line": 0.2,
    "throughput_mean_of_line": 0.3, "nacks_sent": 6, "trims_nacked": 6, "sacks_sent": 400,
    "ev_good_at_end": 1000, "ev_skip_at_end": 3, "ev_assumed_bad_at_end": 24, "ev_denied_at_end": 12,
    "probes_per_data_pct": 0.8, "rx_budget_cuts": 2}`
	synthRoCETransport = `{"kind": "roce", "flows": 50, "flows_completed": 50, "qp_errors": 0, "data_packets": 1300,
    "retx_packets": 100, "retx_bytes": 418000, "timeouts": 4, "base_rtt_us": 5.4, "jct_us": 90,
    "fct_mean_us": 45, "fct_p50_us": 44, "fct_p99_us": 88, "fct_max_us": 90, "ideal_fct_us": 10,
    "fct_over_ideal_mean": 4.5, "fct_over_ideal_max": 9, "header_overhead_pct": 1.963,
    "active_until_us": 12, "active_throughput_mean_of_line": 0.3, "active_throughput_min_of_line": 0.1,
    "qps": 100, "qps_per_peer": 2, "active_shares_1_half_third_less": [0, 10, 20, 20],
    "naks_received": 9, "ce_packets": 300, "cnps_sent": 30, "cnps_received": 30,
    "rate_min_gbps_at_end": 10, "rate_mean_gbps_at_end": 60, "out_of_order_received": 70}`
)

// writeFiles writes files into dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// synthDir writes s into a new temporary folder and returns it.
func synthDir(t testing.TB, s synthRun) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, s.files())
	return dir
}

// readReport returns dir/report.html.
func readReport(t testing.TB, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// allPlotIDs are the plots of a complete run's page.
var allPlotIDs = []string{idBusbw, idFCT, idUtil, idQueue, idPauses, idEV, idFaults, idTopology}

// readFileString returns the file at path.
func readFileString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
