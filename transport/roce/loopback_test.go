package roce

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// loopNet is a two-node test network: a Sender and a Receiver joined by a delay line in each
// direction. The forward line can have a bottleneck (a FIFO served at linkRate that CE-marks
// data packets finding more than markAbove bytes queued ahead of them) and both lines can
// drop packets at random or by rule. Events are ordered by (time, sequence number), and every
// random draw comes from the seed, so a run is a pure function of its inputs.
type loopNet struct {
	t   testing.TB
	cfg loopConfig
	s   *Sender
	r   *Receiver
	rng *rand.Rand

	now       sim.Time
	q         []loopEvent // min-heap by (at, seq)
	seq       uint64
	busyUntil sim.Time // the bottleneck's transmitter is busy until then
	trace     uint64   // FNV-1a over every delivery: the determinism fingerprint

	// Naive reference: the payload lengths and segments the receiver placed, in order.
	placedPSN uint32
	placed    []int64 // bytes per completed transfer, rebuilt from placed packets
	cur       int64
	maxQueue  int64 // most bytes the bottleneck held
	events    int
}

type loopConfig struct {
	cfg       Config
	line      sim.Rate // sender NIC rate
	delay     sim.Time // one-way propagation delay
	linkRate  sim.Rate // forward bottleneck rate (0: none)
	markAbove int64    // CE-mark data finding more than this many bytes queued (0: never)
	dropData  float64  // probability a data packet is lost
	dropBack  float64  // probability an ACK, NAK or CNP is lost
	drop      func(h *Header, n int) bool
	seed      uint64
	limit     sim.Time // stop at this simulated time (0: 10 s)
}

type loopEvent struct {
	at     sim.Time
	seq    uint64
	toRecv bool
	ce     bool
	h      Header
}

func (a *loopEvent) before(b *loopEvent) bool {
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func newLoopNet(t testing.TB, c loopConfig) *loopNet {
	t.Helper()
	if c.line == 0 {
		c.line = 100 * sim.Gbps
	}
	if c.delay == 0 {
		c.delay = sim.Microsecond
	}
	if c.limit == 0 {
		c.limit = 10 * sim.Second
	}
	conn := Conn{QP: 1, LineRate: c.line, SrcPort: UDPSourcePort(c.seed, 1)}
	s, err := NewSender(c.cfg, conn)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(c.cfg, conn)
	if err != nil {
		t.Fatal(err)
	}
	return &loopNet{t: t, cfg: c, s: s, r: r, rng: rand.New(rand.NewPCG(c.seed, 0x10c0)), trace: 14695981039346656037}
}

func (n *loopNet) push(e loopEvent) {
	n.seq++
	e.seq = n.seq
	n.q = append(n.q, e)
	for i := len(n.q) - 1; i > 0; {
		p := (i - 1) / 2
		if !n.q[i].before(&n.q[p]) {
			break
		}
		n.q[i], n.q[p] = n.q[p], n.q[i]
		i = p
	}
}

func (n *loopNet) pop() loopEvent {
	top := n.q[0]
	last := len(n.q) - 1
	n.q[0] = n.q[last]
	n.q = n.q[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && n.q[c+1].before(&n.q[c]) {
			c++
		}
		if !n.q[c].before(&n.q[i]) {
			break
		}
		n.q[i], n.q[c] = n.q[c], n.q[i]
		i = c
	}
	return top
}

// transmit puts the sender's outbox on the forward line.
func (n *loopNet) transmit() {
	out := n.s.Out()
	for i := range out {
		h := &out[i]
		if n.cfg.drop != nil && n.cfg.drop(h, n.events) || n.rng.Float64() < n.cfg.dropData {
			continue
		}
		at, ce := n.now, false
		if n.cfg.linkRate > 0 {
			start := max(n.now, n.busyUntil)
			queued := n.cfg.linkRate.BytesIn(start - n.now)
			n.maxQueue = max(n.maxQueue, queued)
			ce = n.cfg.markAbove > 0 && queued > n.cfg.markAbove
			n.busyUntil = start + n.cfg.linkRate.TxTime(int64(h.Wire))
			at = n.busyUntil
		}
		n.push(loopEvent{at: at + n.cfg.delay, toRecv: true, ce: ce, h: *h})
	}
	n.s.ClearOut()
}

// answer puts the receiver's outbox on the reverse line.
func (n *loopNet) answer() {
	out := n.r.Out()
	for i := range out {
		h := &out[i]
		if n.cfg.drop != nil && n.cfg.drop(h, n.events) || n.rng.Float64() < n.cfg.dropBack {
			continue
		}
		n.push(loopEvent{at: n.now + n.cfg.delay, h: *h})
	}
	n.r.ClearOut()
}

func (n *loopNet) mix(vals ...uint64) {
	for _, v := range vals {
		for i := 0; i < 8; i++ {
			n.trace ^= v & 0xff
			n.trace *= 1099511628211
			v >>= 8
		}
	}
}

// post queues transfers at now.
func (n *loopNet) post(sizes ...int64) {
	for _, b := range sizes {
		if _, err := n.s.Post(n.now, b); err != nil {
			n.t.Fatal(err)
		}
	}
	n.s.Pump(n.now)
	n.transmit()
}

// run processes events until the sender is idle, errors, or the limit passes.
func (n *loopNet) run() {
	for !n.s.Idle() || len(n.q) > 0 {
		if n.s.Err() != nil {
			return
		}
		d := n.s.Deadline()
		if len(n.q) == 0 && d == sim.MaxTime {
			n.t.Fatalf("stalled with nothing scheduled: %s; %s", n.s.Outstanding(), n.r.Outstanding())
		}
		if len(n.q) > 0 && n.q[0].at <= d {
			e := n.pop()
			n.now = e.at
			n.events++
			if e.toRecv {
				n.deliver(&e)
			} else {
				n.mix(uint64(e.at), uint64(e.h.Kind), uint64(e.h.PSN))
				switch e.h.Kind {
				case Ack:
					n.s.OnAck(n.now, &e.h)
				case Nak:
					n.s.OnNak(n.now, &e.h)
				case CNP:
					n.s.OnCNP(n.now, &e.h)
				}
				n.transmit()
			}
		} else {
			n.now = max(n.now, d)
			n.s.OnTimer(n.now)
			n.transmit()
		}
		if n.now > n.cfg.limit {
			n.t.Fatalf("not done by %v: %s; %s", n.cfg.limit, n.s.Outstanding(), n.r.Outstanding())
		}
	}
}

// deliver hands a data packet to the receiver and checks it against the naive reference:
// the receiver places exactly the expected PSN, in order, each once.
func (n *loopNet) deliver(e *loopEvent) {
	n.mix(uint64(e.at), uint64(e.h.PSN), uint64(e.h.Len), b2u(e.ce))
	want := n.r.ExpectedPSN()
	n.r.OnData(n.now, &e.h, e.ce)
	if got := n.r.ExpectedPSN(); got != want {
		if got != want+1 || e.h.PSN != want || want != n.placedPSN {
			n.t.Fatalf("receiver moved from %d to %d on PSN %d (reference %d)", want, got, e.h.PSN, n.placedPSN)
		}
		n.placedPSN++
		n.cur += int64(e.h.Len)
		if e.h.Seg.closes() {
			n.placed = append(n.placed, n.cur)
			n.cur = 0
		}
	}
	n.answer()
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// check verifies both ends completed exactly the posted transfers, in order, with the right
// sizes, and that the sender's counters add up.
func (n *loopNet) check(sizes []int64) {
	n.t.Helper()
	if err := n.s.Err(); err != nil {
		n.t.Fatalf("QP error: %v", err)
	}
	sc, rc := n.s.Completions(), n.r.Completions()
	if len(sc) != len(sizes) || len(rc) != len(sizes) || len(n.placed) != len(sizes) {
		n.t.Fatalf("completions: sender %d, receiver %d, reference %d; want %d", len(sc), len(rc), len(n.placed), len(sizes))
	}
	var total int64
	for i, b := range sizes {
		if sc[i].Msg != uint32(i) || sc[i].Bytes != b || rc[i].Msg != uint32(i) || rc[i].Bytes != b || n.placed[i] != b {
			n.t.Fatalf("transfer %d of %d B: sender %+v, receiver %+v, reference %d B", i, b, sc[i], rc[i], n.placed[i])
		}
		if i > 0 && (sc[i].Done < sc[i-1].Done || rc[i].Done < rc[i-1].Done) {
			n.t.Fatalf("transfer %d completed before transfer %d", i, i-1)
		}
		total += b
	}
	if n.r.Stats.PlacedBytes != total {
		n.t.Fatalf("placed %d B; want %d (each byte once)", n.r.Stats.PlacedBytes, total)
	}
	if s := n.s.Stats; s.DataPackets-s.RetxPackets != int64(n.s.end) {
		n.t.Fatalf("%d packets sent, %d of them resent; want %d distinct PSNs", s.DataPackets, s.RetxPackets, n.s.end)
	}
	if n.s.InFlight() != 0 || n.s.Deadline() != sim.MaxTime {
		n.t.Fatalf("idle sender still has work: %s", n.s.Outstanding())
	}
}

// TestLoopbackLossless: transfers of every shape cross a clean line at line rate.
func TestLoopbackLossless(t *testing.T) {
	sizes := []int64{1 << 20, 0, 1, 4096, 4097, 3 * 4096, 123457}
	n := newLoopNet(t, loopConfig{cfg: Config{RTO: 50 * us}, seed: 1})
	n.post(sizes...)
	n.run()
	n.check(sizes)
	s := n.s.Stats
	if s.RetxPackets != 0 || s.Timeouts != 0 || s.NAKs != 0 || n.r.Stats.CNPs != 0 {
		t.Fatalf("lossless run recovered something: %+v", s)
	}
	// 1 MiB at 100 Gb/s with 2 us of RTT: the first transfer completes within 5% of its
	// serialisation plus one RTT.
	ideal := (100 * sim.Gbps).TxTime(n.s.msgs[0].cumWire+int64(1<<20)+256*82+16) + 2*us
	if got := n.s.Completions()[0].Done; got > ideal*105/100 {
		t.Fatalf("1 MiB done at %v; want about %v", got, ideal)
	}
}

// TestLoopbackLosePSN5: the go-back-N timeline again over the delay line: PSN 5 of 20 is lost
// once; one NAK, one rewind, 15 packets resent, no timeout.
func TestLoopbackLosePSN5(t *testing.T) {
	lost := false
	n := newLoopNet(t, loopConfig{cfg: Config{RTO: 100 * us}, seed: 1, delay: 10 * us, drop: func(h *Header, _ int) bool {
		if h.Kind == Data && h.PSN == 5 && !lost {
			lost = true
			return true
		}
		return false
	}})
	n.post(20 * 4096)
	n.run()
	n.check([]int64{20 * 4096})
	s := n.s.Stats
	// The NAK for 5 comes back 20 us after PSN 6 left; by then the sender had sent up to
	// PSN 19 (all 20 take 6.7 us at 100 Gb/s), so it resends 5-19.
	if s.NAKs != 1 || s.GoBackN != 1 || s.Timeouts != 0 || s.RetxPackets != 15 || n.r.Stats.OutOfOrder != 14 {
		t.Fatalf("stats %+v, receiver %+v; want 1 NAK, 1 go-back-N, 15 resent, 14 dropped out of order", s, n.r.Stats)
	}
}

// TestLoopbackDeterminism: the same inputs give the same run, event for event; another seed
// another run.
func TestLoopbackDeterminism(t *testing.T) {
	run := func(seed uint64) (uint64, SenderStats) {
		c := loopConfig{
			cfg:  Config{RTO: 30 * us, AckEvery: 2},
			seed: seed, dropData: 0.02, dropBack: 0.02,
			linkRate: 50 * sim.Gbps, markAbove: 20_000,
		}
		n := newLoopNet(t, c)
		sizes := []int64{300_000, 70_000, 1_000_000}
		n.post(sizes...)
		n.run()
		n.check(sizes)
		n.mix(uint64(n.s.Stats.DataPackets), uint64(n.s.Stats.CNPs), uint64(n.s.Rate(n.now)))
		return n.trace, n.s.Stats
	}
	a, sa := run(42)
	b, sb := run(42)
	c, _ := run(43)
	if a != b || sa != sb {
		t.Fatalf("same seed, different runs: %x %x\n%+v\n%+v", a, b, sa, sb)
	}
	if a == c {
		t.Fatal("different seeds, same run")
	}
	if sa.CNPs == 0 || sa.RetxPackets == 0 {
		t.Fatalf("the run should exercise CNPs and losses: %+v", sa)
	}
}

// TestLoopbackRandomDrops is the property test: whatever the losses (data and answers, up to
// 5%), ACK coalescing, window and marking, every transfer completes at both ends, in order,
// each byte placed once and in PSN order (checked against the naive reference in deliver).
func TestLoopbackRandomDrops(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		cfg := Config{
			RTO:          sim.Time(10+rng.IntN(50)) * us,
			AckEvery:     1 + rng.IntN(8),
			PayloadBytes: []int{1024, 4096}[rng.IntN(2)],
		}
		if rng.IntN(3) == 0 {
			cfg.Window = sim.Size(int64(2+rng.IntN(20)) * int64(cfg.PayloadBytes+DefaultHeaderBytes+RETHBytes))
		}
		c := loopConfig{
			cfg: cfg, seed: seed,
			dropData: rng.Float64() * 0.05, dropBack: rng.Float64() * 0.05,
			delay: sim.Time(1+rng.IntN(5)) * us,
		}
		if rng.IntN(2) == 0 {
			c.linkRate, c.markAbove = 40*sim.Gbps, 30_000
		}
		var sizes []int64
		for i := 0; i < 1+rng.IntN(6); i++ {
			sizes = append(sizes, int64(rng.IntN(200_000)))
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			n := newLoopNet(t, c)
			n.post(sizes...)
			n.run()
			n.check(sizes)
		})
	}
}

// TestLoopbackBlackhole: a line that drops everything errors the QP after RetryCount retries
// (a failed link before routing reconverges [docs/protocols.md, "RoCEv2: link failures and
// timeouts"]).
func TestLoopbackBlackhole(t *testing.T) {
	n := newLoopNet(t, loopConfig{cfg: Config{RTO: 100 * us}, seed: 1, dropData: 1})
	n.post(1 << 20)
	n.run()
	if n.s.Err() == nil || n.s.Stats.Timeouts != 8 {
		t.Fatalf("Err %v after %d timeouts; want the QP error after 8", n.s.Err(), n.s.Stats.Timeouts)
	}
	if n.now > 900*us {
		t.Fatalf("QP error at %v; want by 8 x RTO after the first send (~800us)", n.now)
	}
}

// TestLoopbackDCQCNBottleneck: a 100 Gb/s sender through a 50 Gb/s bottleneck that marks above
// 50 KB. CNPs cut the rate until the queue stops growing; goodput stays near the bottleneck
// rate and the queue bounded, with no loss (DCQCN's purpose [DCQCN]).
func TestLoopbackDCQCNBottleneck(t *testing.T) {
	n := newLoopNet(t, loopConfig{
		cfg:  Config{RTO: sim.Millisecond},
		seed: 7, linkRate: 50 * sim.Gbps, markAbove: 50_000, delay: 2 * us,
	})
	const size = 64 << 20
	n.post(size)
	n.run()
	n.check([]int64{size})
	done := n.s.Completions()[0].Done
	goodput := float64(size) * 8 / done.Seconds() / 1e9
	t.Logf("64 MiB in %v: goodput %.1f Gb/s, %d CNPs, max queue %d B, final rate %v, alpha %.3f, DCQCN %+v",
		done, goodput, n.s.Stats.CNPs, n.maxQueue, n.s.Rate(n.now), n.s.Alpha(n.now), n.s.DCQCN().Stats)
	if n.s.Stats.CNPs == 0 || goodput < 40 || goodput > 50 {
		t.Fatalf("goodput %.1f Gb/s with %d CNPs; want CNPs and 40-50 Gb/s through a 50 Gb/s bottleneck", goodput, n.s.Stats.CNPs)
	}
	if n.maxQueue > 2_000_000 {
		t.Fatalf("queue reached %d B; DCQCN should hold it near the 50 KB marking threshold", n.maxQueue)
	}
}

// TestLoopbackManyTransfers: 500 transfers posted in waves while earlier ones complete (so the
// sender compacts its transfer table), with losses: transfer numbers stay global and every
// transfer completes in order at both ends.
func TestLoopbackManyTransfers(t *testing.T) {
	n := newLoopNet(t, loopConfig{cfg: Config{RTO: 20 * us, AckEvery: 3}, seed: 5, dropData: 0.01, dropBack: 0.01})
	rng := rand.New(rand.NewPCG(5, 5))
	var sizes []int64
	for wave := 0; wave < 10; wave++ {
		var batch []int64
		for i := 0; i < 50; i++ {
			batch = append(batch, int64(rng.IntN(3*4096)))
		}
		sizes = append(sizes, batch...)
		n.post(batch...)
		n.run()
	}
	n.check(sizes)
	if n.s.msgBase == 0 || len(n.s.msgs) > 100 {
		t.Fatalf("transfer table not compacted: base %d, %d entries", n.s.msgBase, len(n.s.msgs))
	}
}
