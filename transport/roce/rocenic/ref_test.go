package rocenic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// refCases are scenarios run with `lockstep run FILE --out DIR` on main at 28e473d (the
// runner's own RoCE adapter, runner/roce.go, before the move here): want is the "roce" block
// of their summary.json, offered and delivered its top-level offered_gbps and
// delivered_gbps, done flows.csv's done_us column. The endpoint over the same fabric, seed
// and flows must give every figure exactly.
var refCases = []struct {
	name               string
	yaml               string // the scenario, for the record
	spec               rigSpec
	flows              [][3]int64 // src, dst, bytes; all posted at 0
	want               string
	offered, delivered float64
	done               []float64
}{
	{
		name: "pfc-mixed",
		yaml: `name: rocenic-ref
topology:
  clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}
transport: {kind: roce, roce: {qps_per_peer: 2}}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 9, bytes: 1MiB}, {src: 1, dst: 10, bytes: 1MiB}, {src: 2, dst: 11, bytes: 1MiB}, {src: 3, dst: 12, bytes: 1MiB}, {src: 4, dst: 8, bytes: 2MiB}, {src: 5, dst: 8, bytes: 2MiB}, {src: 6, dst: 8, bytes: 2MiB}, {src: 7, dst: 8, bytes: 512KiB}]}
run: {duration: 50ms, sample_interval: 5us, seed: 3}`,
		spec: rigSpec{
			clos: topo.Clos{Tiers: 2, Planes: 2, Radix: 8, Hosts: 16, HostLink: 100e9, HopLatency: 500 * sim.Nanosecond},
			seed: 3, pfc: true, ecn: true, cfg: roce.Config{QPsPerPeer: 2},
		},
		flows:   [][3]int64{{0, 9, 1 << 20}, {1, 10, 1 << 20}, {2, 11, 1 << 20}, {3, 12, 1 << 20}, {4, 8, 2 << 20}, {5, 8, 2 << 20}, {6, 8, 2 << 20}, {7, 8, 512 << 10}},
		want:    `{"flows":8,"flows_completed":8,"qps":32,"qps_per_peer":2,"qp_errors":0,"base_rtt_us":5.364,"jct_us":283.143,"fct_mean_us":183.11,"fct_p50_us":133.119,"fct_p99_us":283.142,"fct_max_us":283.142,"ideal_fct_us":90.596,"fct_over_ideal_mean":3.128,"fct_over_ideal_max":5.491,"active_until_us":111.995,"active_throughput_mean_of_line":0.301,"active_throughput_min_of_line":0.167,"active_maxmin_mean_of_line":0.345,"active_shares_1_half_third_less":[0,0,5,3],"header_overhead_pct":1.963,"data_packets":2688,"retx_packets":0,"retx_bytes":0,"naks_received":0,"timeouts":0,"ce_packets":2057,"cnps_sent":201,"cnps_received":201,"rate_min_gbps_at_end":10.071,"rate_mean_gbps_at_end":59.345,"out_of_order_received":0}`,
		offered: 317.323, delivered: 311.081,
		done: []float64{125.367, 132.386, 133.054, 111.995, 250.711, 283.143, 283.132, 145.091},
	},
	{
		name: "lossy-incast",
		yaml: `name: rocenic-lossy
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 24, host_link: 100G, hop_latency: 500ns}
fabric:
  pfc: {enabled: false}
  switch_queue: {limit: 256KiB}
transport: {kind: roce, roce: {qps_per_peer: 1, rto: 200us}}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 20, bytes: 1MiB}, {src: 1, dst: 20, bytes: 1MiB}, {src: 2, dst: 20, bytes: 1MiB}, {src: 3, dst: 20, bytes: 1MiB}, {src: 8, dst: 20, bytes: 1MiB}, {src: 9, dst: 20, bytes: 1MiB}, {src: 10, dst: 20, bytes: 1MiB}, {src: 11, dst: 20, bytes: 1MiB}, {src: 12, dst: 20, bytes: 1MiB}, {src: 13, dst: 20, bytes: 1MiB}]}
run: {duration: 100ms, sample_interval: 5us, seed: 5}`,
		spec: rigSpec{
			clos: topo.Clos{Tiers: 2, Planes: 1, Radix: 16, Hosts: 24, HostLink: 100e9, HopLatency: 500 * sim.Nanosecond},
			seed: 5, ecn: true, limit: 256 << 10, cfg: roce.Config{QPsPerPeer: 1, RTO: 200 * sim.Microsecond},
		},
		flows:   [][3]int64{{0, 20, 1 << 20}, {1, 20, 1 << 20}, {2, 20, 1 << 20}, {3, 20, 1 << 20}, {8, 20, 1 << 20}, {9, 20, 1 << 20}, {10, 20, 1 << 20}, {11, 20, 1 << 20}, {12, 20, 1 << 20}, {13, 20, 1 << 20}},
		want:    `{"flows":10,"flows_completed":10,"qps":10,"qps_per_peer":1,"qp_errors":0,"base_rtt_us":5.364,"jct_us":1493.914,"fct_mean_us":1385.79,"fct_p50_us":1413.119,"fct_p99_us":1493.913,"fct_max_us":1493.913,"ideal_fct_us":90.597,"fct_over_ideal_mean":15.296,"fct_over_ideal_max":16.49,"active_until_us":1218.338,"active_throughput_mean_of_line":0.051,"active_throughput_min_of_line":0.039,"active_maxmin_mean_of_line":0.098,"active_shares_1_half_third_less":[0,0,0,10],"header_overhead_pct":1.963,"data_packets":8031,"retx_packets":5471,"retx_bytes":22857838,"naks_received":21,"timeouts":26,"ce_packets":2172,"cnps_sent":354,"cnps_received":354,"rate_min_gbps_at_end":20.257,"rate_mean_gbps_at_end":23.977,"out_of_order_received":1749,"first_loss_retx_us":30.751,"last_loss_retx_us":1442.424}`,
		offered: 179.682, delivered: 56.152,
	},
}

// TestMatchesRunner: the reference scenarios give today's summary figures exactly.
func TestMatchesRunner(t *testing.T) {
	for _, tc := range refCases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, tc.spec)
			g.traffic()
			for _, f := range tc.flows {
				if err := g.ep.AddFlow(int(f[0]), int(f[1]), f[2], 0); err != nil {
					t.Fatal(err)
				}
			}
			end := g.run(t, 100*sim.Millisecond)
			if end != g.doneAt {
				t.Fatalf("ended at %v, OnDone at %v", end, g.doneAt)
			}
			got, err := json.Marshal(g.ep.Summary(end, nil))
			if err != nil {
				t.Fatal(err)
			}
			var gm, wm map[string]any
			if err := json.Unmarshal(got, &gm); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &wm); err != nil {
				t.Fatal(err)
			}
			if gm["kind"] != Kind {
				t.Errorf("kind %v; want %q", gm["kind"], Kind)
			}
			delete(gm, "kind")
			delete(gm, "name")
			if !reflect.DeepEqual(gm, wm) {
				for k, v := range wm {
					if !reflect.DeepEqual(gm[k], v) {
						t.Errorf("%s: got %v, runner %v", k, gm[k], v)
					}
				}
				for k, v := range gm {
					if _, ok := wm[k]; !ok {
						t.Errorf("%s: got %v, not in the runner's block", k, v)
					}
				}
			}
			sent, placed, posted := g.ep.Bytes()
			secs := end.Seconds()
			if o, d := transport.Round3(float64(sent)*8/secs/1e9), transport.Round3(float64(placed)*8/secs/1e9); o != tc.offered || d != tc.delivered || placed != posted {
				t.Errorf("offered %v delivered %v Gb/s, placed %d of %d; runner %v and %v, all placed", o, d, placed, posted, tc.offered, tc.delivered)
			}
			for i, want := range tc.done {
				if got := g.ep.Flows()[i].Done; transport.Us(got) != want {
					t.Errorf("flow %d done at %v us; runner %v", i, transport.Us(got), want)
				}
			}
		})
	}
}
