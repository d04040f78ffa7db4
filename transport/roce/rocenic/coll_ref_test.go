package rocenic_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// collYAML is a ring all-reduce over 8 hosts on two planes, run with `lockstep run FILE --out
// DIR` on main at 28e473d (runner/roce.go's adapter, before the move here).
const collYAML = `
name: rocenic-coll
topology:
  clos: {tiers: 2, planes: 2, radix: 8, hosts: 8, host_link: 100G, hop_latency: 500ns}
transport: {kind: roce, roce: {qps_per_peer: 2}}
workload:
  collectives:
    - {name: ar, op: all_reduce, ranks: 8, bytes: 4MiB}
run: {duration: 50ms, sample_interval: 5us, seed: 2}
`

// collWant is that run's summary.json "roce" block; its collectives row had time_us 636.435
// and model_us 337.03, its top level offered_gbps 752.914 and delivered_gbps 738.115.
const collWant = `{"flows":32,"flows_completed":32,"qps":32,"qps_per_peer":2,"qp_errors":0,"base_rtt_us":5.364,"jct_us":636.435,"fct_mean_us":46.654,"fct_p50_us":46.015,"fct_p99_us":48.691,"fct_max_us":48.691,"header_overhead_pct":1.963,"data_packets":14336,"retx_packets":0,"retx_bytes":0,"naks_received":0,"timeouts":0,"ce_packets":0,"cnps_sent":0,"cnps_received":0,"rate_min_gbps_at_end":100,"rate_mean_gbps_at_end":100,"out_of_order_received":0}`

// TestCollectiveMatchesRunner runs collYAML's all-reduce through the endpoint as the runner
// does (runner/collective.go: the executor over the transport, one group, launched at 0,
// drained to run.duration) and checks the summary block, the rates and the model column.
func TestCollectiveMatchesRunner(t *testing.T) {
	sc, err := scenario.Parse([]byte(collYAML))
	if err != nil {
		t.Fatal(err)
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(sc.Run.Seed)
	net := fabric.New(s)
	if err := topo.BuildTopology(net, l, topo.BuildOptions{SwitchQueue: sc.Fabric.SwitchQueue, LastHopQueue: sc.Fabric.LastHopQueue, NICQueue: sc.Fabric.NICQueue}); err != nil {
		t.Fatal(err)
	}
	if err := net.SetPFC(sc.Fabric.PFC.Config()); err != nil {
		t.Fatal(err)
	}
	p, ok := transport.Lookup(rocenic.Kind)
	if !ok {
		t.Fatal("roce not registered")
	}
	cfg := roce.Config{QPsPerPeer: 2}
	if c, ok := sc.Transport.Block().(*roce.Config); ok {
		cfg = *c
	}
	tr, err := p.NewEndpoint(&cfg, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Seed: sc.Run.Seed})
	if err != nil {
		t.Fatal(err)
	}
	wc := &sc.Workload.Collectives[0]
	spec, _, err := wc.CollectiveSpec()
	if err != nil {
		t.Fatal(err)
	}
	var comm collective.Comm
	if len(wc.Hosts) > 0 {
		comm, err = collective.NewComm(wc.Hosts)
	} else {
		comm, err = collective.RangeComm(0, wc.Ranks, 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	running := 1
	ex, err := collective.NewExecutor(s, tr, collective.ExecConfig{Hosts: net.NumHosts(), ReduceBytesPerSec: float64(wc.ReduceRate) / 8,
		OnDone: func(now sim.Time, id int) {
			if running--; running == 0 {
				s.Pause()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetHooks(transport.Hooks{Delivered: ex.Delivered, Group: func(int) int { return 0 }})
	sched, err := collective.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ex.Launch(s.Now(), sched, comm, "ar/4194304B/0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sc.Run.Duration); err != nil {
		t.Fatal(err)
	}
	if running != 0 {
		t.Fatalf("all-reduce not done at %v: %s", s.Now(), ex.Stuck(5))
	}
	end := s.Now()
	tr.Quiesce()
	if err := s.Drain(end + sc.Run.Drain); err != nil {
		t.Fatal(err)
	}
	if err := net.Audit(); err != nil {
		t.Fatal(err)
	}
	r, err := ex.Result(id)
	if err != nil {
		t.Fatal(err)
	}
	if got := transport.Us(r.Time()); got != 636.435 {
		t.Errorf("all-reduce took %v us; runner 636.435", got)
	}
	lat, share := tr.Link()
	c := l.Params()
	nicRate := c.HostLink * sim.Rate(c.Planes)
	model := collective.Model{Latency: lat, Rate: sim.Rate(float64(nicRate) * share)}
	if mt, err := collective.Pipelined(sched.Spec(), model); err != nil || transport.Us(mt) != 337.03 {
		t.Errorf("model %v us (%v); runner 337.03", transport.Us(mt), err)
	}
	got, err := json.Marshal(tr.Summary(end, nil))
	if err != nil {
		t.Fatal(err)
	}
	var gm, wm map[string]any
	_ = json.Unmarshal(got, &gm)
	_ = json.Unmarshal([]byte(collWant), &wm)
	delete(gm, "kind")
	delete(gm, "name")
	if !reflect.DeepEqual(gm, wm) {
		t.Errorf("summary\n got %s\nwant %s", got, collWant)
	}
	sent, placed, posted := tr.Bytes()
	secs := end.Seconds()
	if o, d := transport.Round3(float64(sent)*8/secs/1e9), transport.Round3(float64(placed)*8/secs/1e9); o != 752.914 || d != 738.115 || placed != posted {
		t.Errorf("offered %v delivered %v Gb/s, placed %d of %d; runner 752.914 and 738.115, all placed", o, d, placed, posted)
	}
	if n := len(tr.Flows()); n != 0 {
		t.Errorf("%d flow records under a workload; flows.csv has none", n)
	}
	if _, ok := tr.Run().(*rocenic.Run); !ok {
		t.Errorf("Run() is %T", tr.Run())
	}
}
