// Package toytest_test proves the transport seam (transport.Register): a fixed-window
// go-back-N transport written only here, against package transport's interface, registers
// and runs a permutation end to end through the scenario parser, the runner and the results
// writer, with no edit anywhere else (issue 18). docs/architecture.md, "How to add a
// transport", points here.
package toytest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// kind is the toy's transport.kind.
const kind = "toygbn"

// protoToy is the toy's fabric protocol number: any number no shipped transport uses.
const protoToy fabric.Proto = 200

// config is the toy's block, transport.toygbn.
type config struct {
	Window       int      `yaml:"window"`        // packets in flight per QP (default 16)
	PayloadBytes int      `yaml:"payload_bytes"` // per data packet (default 4096)
	HeaderBytes  int      `yaml:"header_bytes"`  // per packet (default 64)
	RTO          sim.Time `yaml:"rto"`           // go back to the first unacknowledged packet (default 100us)
}

func init() {
	transport.Register(kind, transport.Plugin{
		Name:      "ToyGBN",
		Proto:     protoToy,
		NewConfig: func() any { return &config{} },
		Resolve: func(cfg any, env transport.ResolveEnv) error {
			c := cfg.(*config)
			if c.Window == 0 {
				c.Window = 16
			}
			if c.PayloadBytes == 0 {
				c.PayloadBytes = 4096
			}
			if c.HeaderBytes == 0 {
				c.HeaderBytes = 64
			}
			if c.RTO == 0 {
				c.RTO = 100 * sim.Microsecond
			}
			if c.Window < 1 || c.Window > 1<<16 {
				return fmt.Errorf("%s.window: %d is out of range; allowed 1..65536", env.Path, c.Window)
			}
			return nil
		},
		NewEndpoint: newEndpoint,
	})
}

// qp is one toy connection: a go-back-N sender at src and its receiver at dst.
type qp struct {
	src, dst     int
	plane        int
	bytes        int64
	pkts         uint64 // packets of the transfer
	base, next   uint64 // first unacknowledged, next to send
	expect       uint64 // receiver: next in order
	start, done  sim.Time
	placed, sent int64
	retx         int64
	timer        sim.TimerID
	token        uint64
	msg          bool // a collective message (Delivered on placement)
}

// endpoint is the toy's transport.Endpoint.
type endpoint struct {
	cfg     config
	env     transport.EndpointEnv
	hooks   transport.Hooks
	qps     []*qp
	kStart  sim.Kind
	kTimer  sim.Kind
	running int
	quiet   bool
	baseRTT sim.Time
	fct     *hdrhistogram.Histogram
	fctMax  int64
	errs    []error
	log     transport.LossLog
}

func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	e := &endpoint{cfg: *cfg.(*config), env: env, fct: transport.NewFCTHistogram()}
	e.baseRTT = env.Topology.Params().RoundTrip(env.Topology.Sizing().MaxSwitchHops, e.cfg.PayloadBytes+e.cfg.HeaderBytes, e.cfg.HeaderBytes)
	e.kStart = env.Sim.Register("toygbn.start", func(now sim.Time, obj int32, _ uint64) { e.pump(now, e.qps[obj]) })
	e.kTimer = env.Sim.Register("toygbn.rto", func(now sim.Time, obj int32, _ uint64) {
		q := e.qps[obj]
		if q.base < q.pkts && !e.quiet {
			e.log.Retx(now)
			q.retx += int64(q.next - q.base)
			q.next = q.base // go back N
			e.pump(now, q)
		}
	})
	env.Net.SetReceiver(protoToy, e.onPacket)
	return e, nil
}

func (e *endpoint) open(src, dst int, bytes int64, start sim.Time) (*qp, error) {
	hosts := e.env.Net.NumHosts()
	if src < 0 || src >= hosts || dst < 0 || dst >= hosts || src == dst {
		return nil, fmt.Errorf("toygbn: h%d -> h%d: want two distinct hosts of %d", src, dst, hosts)
	}
	if err := nic.PairRouteError(e.env.Topology, src, dst, false); err != nil {
		return nil, err
	}
	bytes = max(bytes, 1)
	pay := int64(e.cfg.PayloadBytes)
	q := &qp{src: src, dst: dst, bytes: bytes, pkts: uint64((bytes + pay - 1) / pay), start: start,
		plane: len(e.qps) % e.env.Topology.Params().Planes}
	q.timer = e.env.Sim.NewTimer(e.kTimer, int32(len(e.qps)))
	e.qps = append(e.qps, q)
	e.running++
	return q, nil
}

func (e *endpoint) SetHooks(h transport.Hooks) { e.hooks = h }

func (e *endpoint) AddFlow(src, dst int, bytes int64, start sim.Time) error {
	q, err := e.open(src, dst, bytes, start)
	if err != nil {
		return err
	}
	e.env.Sim.At(start, e.kStart, int32(len(e.qps)-1), 0)
	_ = q
	return nil
}

// Send carries a collective message on a QP of its own.
func (e *endpoint) Send(now sim.Time, m collective.Message) error {
	q, err := e.open(m.Src, m.Dst, m.Bytes, now)
	if err != nil {
		return err
	}
	q.msg, q.token = true, m.Token
	e.pump(now, q)
	return nil
}

// pump sends what the window allows and arms the RTO.
func (e *endpoint) pump(now sim.Time, q *qp) {
	if e.quiet {
		return
	}
	for q.next < q.pkts && q.next < q.base+uint64(e.cfg.Window) {
		e.send(now, q, q.next, false)
		q.next++
	}
	if q.base < q.pkts {
		e.env.Sim.Reset(q.timer, now+e.cfg.RTO)
	}
}

func (e *endpoint) payload(q *qp, psn uint64) int64 {
	pay := int64(e.cfg.PayloadBytes)
	if psn == q.pkts-1 {
		return q.bytes - int64(psn)*pay
	}
	return pay
}

func (e *endpoint) send(now sim.Time, q *qp, psn uint64, ack bool) {
	p := e.env.Net.NewPacket()
	p.Proto, p.Flow = protoToy, int32(indexOf(e, q))
	p.SrcPort = uint16(p.Flow) // the ECMP entropy
	host := q.src
	p.Src, p.Dst = int32(q.src), int32(q.dst)
	if ack {
		host = q.dst
		p.Src, p.Dst = int32(q.dst), int32(q.src)
		p.Ack, p.Op, p.Size, p.Class = psn, 1, int32(e.cfg.HeaderBytes), 0
	} else {
		p.Seq, p.Size, p.Class = psn, int32(e.payload(q, psn)+int64(e.cfg.HeaderBytes)), 1
		q.sent += int64(p.Size)
	}
	if err := e.env.Net.Send(now, int32(host), q.plane, p); err != nil {
		e.env.Sim.Stop(err)
	}
}

func indexOf(e *endpoint, q *qp) int {
	for i, x := range e.qps { // the toy is small; a real adapter keeps the index in the QP
		if x == q {
			return i
		}
	}
	return -1
}

func (e *endpoint) onPacket(now sim.Time, p *fabric.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(e.qps) || e.quiet {
		return
	}
	q := e.qps[p.Flow]
	if p.Op == 0 { // data at the receiver: in order or dropped, cumulative ACK either way
		if p.Seq == q.expect {
			q.expect++
			q.placed += e.payload(q, p.Seq)
			if q.expect == q.pkts && q.msg && e.hooks.Delivered != nil {
				defer e.hooks.Delivered(now, q.token)
			}
		}
		e.send(now, q, q.expect, true)
		return
	}
	if p.Ack <= q.base { // a duplicate: the RTO recovers
		return
	}
	q.base = p.Ack
	if q.base == q.pkts {
		e.env.Sim.StopTimer(q.timer)
		q.done = now
		ns := int64((now - q.start) / sim.Nanosecond)
		_ = e.fct.RecordValue(ns)
		e.fctMax = max(e.fctMax, ns)
		e.running--
		if e.running == 0 && e.hooks.OnDone != nil {
			e.hooks.OnDone(now)
		}
		return
	}
	e.pump(now, q)
}

func (e *endpoint) Outstanding() (running, errs int) { return e.running, len(e.errs) }
func (e *endpoint) Errs() []error                    { return e.errs }
func (e *endpoint) Stuck(n int) string {
	var out []string
	for i, q := range e.qps {
		if q.base < q.pkts && len(out) < n {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d): %d of %d packets acknowledged", i, q.src, q.dst, q.base, q.pkts))
		}
	}
	return strings.Join(out, "; ")
}

func (e *endpoint) Quiesce() {
	e.quiet = true
	for _, q := range e.qps {
		e.env.Sim.StopTimer(q.timer)
	}
}

func (e *endpoint) Sample(sim.Time) {}

func (e *endpoint) Bytes() (sent, placed, posted int64) {
	for _, q := range e.qps {
		sent, placed, posted = sent+q.sent, placed+q.placed, posted+q.bytes
	}
	return
}

func (e *endpoint) Log() (lossAt, errAt []sim.Time) { return e.log.LossAt, e.log.ErrAt }

func (e *endpoint) Link() (sim.Time, float64) {
	return e.baseRTT / 2, float64(e.cfg.PayloadBytes) / float64(e.cfg.PayloadBytes+e.cfg.HeaderBytes)
}

func (e *endpoint) ideal(q *qp) sim.Time {
	c := e.env.Topology.Params()
	wire := q.bytes + int64(q.pkts)*int64(e.cfg.HeaderBytes)
	return nic.IdealTransfer(c, c.HostLink, nic.PairHops(e.env.Topology, q.src, q.dst), wire, min(wire, int64(e.cfg.PayloadBytes+e.cfg.HeaderBytes)), e.cfg.HeaderBytes)
}

func (e *endpoint) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	// Under a workload (collective messages) a QP counts as completed when its messages were
	// placed at the receiver: the run ends when the collective does, before the last ACKs
	// return (the rule transport.Summary documents).
	collective := e.hooks.Delivered != nil
	s := &transport.Summary{Kind: kind, Name: "ToyGBN", Flows: len(e.qps), QPErrors: len(e.errs)}
	var acc transport.FCTAcc
	var largest *qp
	for _, q := range e.qps {
		s.RetxPackets += q.retx
		if largest == nil || q.bytes > largest.bytes {
			largest = q
		}
		switch {
		case collective && q.expect == q.pkts:
			s.FlowsCompleted++
		case !collective && q.done > 0:
			s.FlowsCompleted++
			acc.Add(q.start, q.done, e.ideal(q))
		}
	}
	var ideal sim.Time
	if largest != nil {
		ideal = e.ideal(largest)
	}
	s.Fill(e.baseRTT, ideal, &acc, s.FlowsCompleted == s.Flows, e.fct, e.fctMax, collective, end)
	s.SetLossSpan(e.log.LossAt, faults)
	s.Detail = &struct {
		Window int `json:"window"`
	}{e.cfg.Window}
	return s
}

func (e *endpoint) Flows() []transport.FlowRecord {
	out := make([]transport.FlowRecord, len(e.qps))
	for i, q := range e.qps {
		out[i] = transport.FlowRecord{Src: q.src, Dst: q.dst, Plane: q.plane, Bytes: q.bytes, Delivered: q.placed,
			Start: q.start, Done: q.done, Ideal: e.ideal(q), Retx: q.retx, ActiveOfLine: -1}
	}
	return out
}

func (e *endpoint) Files() []transport.File { return nil }
func (e *endpoint) Run() any                { return e }

// TestToyTransportEndToEnd runs a 16-host permutation on the toy transport through the whole
// stack and reads back summary.json's common transport block.
func TestToyTransportEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
		bytes  string
	}{{"window 1", 1, "64KiB"}, {"window 16", 16, "256KiB"}, {"window 64", 64, "1MiB"}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			yaml := fmt.Sprintf(`name: toy
topology: {clos: {tiers: 2, radix: 8, planes: 2, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: toygbn, toygbn: {window: %d}}
traffic: [{pattern: permutation, bytes: %s}]
run: {out: %q}
`, tc.window, tc.bytes, dir)
			sc, err := scenario.Parse([]byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			res, err := runner.Run(sc)
			if err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(res.Summary, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := runner.WriteResults(sc, js, res); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Failed    bool `json:"failed"`
				Transport struct {
					Kind           string  `json:"kind"`
					Flows          int     `json:"flows"`
					FlowsCompleted int     `json:"flows_completed"`
					JCTUs          float64 `json:"jct_us"`
					IdealFCTUs     float64 `json:"ideal_fct_us"`
					Window         int     `json:"window"`
				} `json:"transport"`
			}
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			tr := got.Transport
			if got.Failed || tr.Kind != kind || tr.Flows != 16 || tr.FlowsCompleted != 16 || tr.Window != tc.window {
				t.Fatalf("summary.json transport block: %+v (failed %v); want kind %s, 16 of 16 flows done, window %d", tr, got.Failed, kind, tc.window)
			}
			if tr.JCTUs < tr.IdealFCTUs || tr.IdealFCTUs <= 0 {
				t.Fatalf("JCT %.3f us below the ideal FCT %.3f us", tr.JCTUs, tr.IdealFCTUs)
			}
			if _, err := os.Stat(filepath.Join(dir, "flows.csv")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestToyTransportWindowMovesJCT checks the results move with the toy's input: a window of
// one packet per round trip is far slower than a window covering the BDP.
func TestToyTransportWindowMovesJCT(t *testing.T) {
	jct := map[int]float64{}
	for _, w := range []int{1, 4, 64} {
		sc, err := scenario.Parse([]byte(fmt.Sprintf(`topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: toygbn, toygbn: {window: %d}}
traffic: [{pattern: permutation, bytes: 512KiB}]
`, w)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := runner.Run(sc)
		if err != nil {
			t.Fatal(err)
		}
		jct[w] = res.Summary.Transport.JCTUs
	}
	if !(jct[1] > 2*jct[4] && jct[4] > jct[64]) {
		t.Fatalf("JCT by window %v: want it to fall as the window grows", jct)
	}
}

// TestToyTransportBadBlock checks the toy's own validation reaches the user with the path.
func TestToyTransportBadBlock(t *testing.T) {
	_, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G}}\ntransport: {kind: toygbn, toygbn: {window: -1}}\ntraffic: [{pattern: permutation, bytes: 1KiB}]\n"))
	if err == nil || !strings.Contains(err.Error(), "transport.toygbn.window") {
		t.Fatalf("err = %v; want one naming transport.toygbn.window", err)
	}
}

// TestToyTransportCollective runs an all-reduce on the toy transport: the collective finishes,
// its time moves with the size, and the run is not marked failed.
func TestToyTransportCollective(t *testing.T) {
	times := map[string]float64{}
	for _, size := range []string{"64KiB", "1MiB"} {
		sc, err := scenario.Parse([]byte(fmt.Sprintf(`topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: toygbn, toygbn: {window: 32}}
workload: {collectives: [{op: all_reduce, ranks: 8, bytes: %s}]}
`, size)))
		if err != nil {
			t.Fatal(err)
		}
		res, err := runner.Run(sc)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Summary
		if s.Failed || len(s.Collectives) != 1 || s.Transport == nil || s.Transport.Kind != kind {
			t.Fatalf("%s: failed %v (%s), %d collective rows, transport %+v", size, s.Failed, s.FailureReason, len(s.Collectives), s.Transport)
		}
		times[size] = s.Collectives[0].TimeUs
	}
	if times["1MiB"] < 4*times["64KiB"] {
		t.Fatalf("all_reduce time by size %v: want it to grow with the bytes", times)
	}
}
