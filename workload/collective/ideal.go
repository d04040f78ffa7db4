package collective

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// IdealConfig configures the Ideal transport.
type IdealConfig struct {
	Hosts   int      // number of hosts (>= 1)
	Rate    sim.Rate // B: each host NIC's rate, bits per second, in each direction (> 0)
	Latency sim.Time // a: per-message latency, the delay from a message's first byte leaving to it reaching the receiver (>= 0)
}

// Ideal is a packet-free network model for tests and for users without a fabric: every host
// has one full-duplex NIC of rate B and the network between NICs is a non-blocking crossbar
// with latency a and unbounded buffering. Exactly:
//
//   - Transmit: each host serves its posted messages in FIFO order (post order), one at a
//     time at rate B: a message of b bytes that starts at t_s leaves by t_e = t_s + b/B
//     (sim.Rate.TxTime, rounded up to a picosecond).
//   - Propagation: its first byte reaches the receiver's NIC at t_s + a (cut-through).
//   - Receive: each host absorbs arriving messages one at a time in FIFO order of first-byte
//     arrival (ties in a seeded order), at rate B: a message whose turn comes at t_r is
//     delivered at max(t_r + b/B, t_e + a), i.e. no earlier than its last byte can arrive.
//
// An uncontended message of b bytes therefore takes a + b/B from post to delivery; k messages
// sent at once by one host, or to one host (incast), share its NIC in FIFO order, so the last
// of k equal messages is delivered after a + k*b/B. Messages are whole units: sharing is fair
// at message granularity, which chunking keeps fine. Senders are never back-pressured by a
// busy receiver (infinite switch buffers). Cost: one pending event per transmitter with a
// queue behind its current message, per non-empty propagation pipe and per busy receiver,
// not per message (a transmitter with nothing queued just remembers when it frees up).
type Ideal struct {
	s    *sim.Sim
	cfg  IdealConfig
	sink func(now sim.Time, token uint64)
	msgs []idealMsg
	free []int32
	tx   []hostQueue // per sending host: posted, not yet started
	pipe []hostQueue // per sending host: started, first byte not yet at the receiver
	rx   []hostQueue // per receiving host: arrived, not yet absorbed
	kTx  sim.Kind
	kPip sim.Kind
	kRx  sim.Kind

	// Stats.
	Messages  int64 // messages delivered
	Bytes     int64 // payload bytes delivered
	MaxRxWait int   // longest receive queue seen (incast depth)
}

type idealMsg struct {
	src, dst int32
	bytes    int64
	token    uint64
	head     sim.Time // first byte at the receiver
	txEnd    sim.Time // last byte left the sender
}

// hostQueue is a FIFO of message indexes with a busy flag and the message being served. The
// transmitter uses freeAt and busy as "an event is pending at freeAt" instead.
type hostQueue struct {
	q      []int32
	head   int
	busy   bool
	cur    int32
	freeAt sim.Time
}

func (h *hostQueue) push(m int32) { h.q = append(h.q, m) }
func (h *hostQueue) empty() bool  { return h.head == len(h.q) }
func (h *hostQueue) len() int     { return len(h.q) - h.head }
func (h *hostQueue) peek() int32  { return h.q[h.head] }
func (h *hostQueue) pop() int32 {
	m := h.q[h.head]
	h.head++
	if h.head == len(h.q) {
		h.q, h.head = h.q[:0], 0
	}
	return m
}

// NewIdeal returns an Ideal network on s. Call SetSink (usually with Executor.Delivered)
// before the first Send. Errors: Hosts < 1, Rate <= 0, Latency < 0.
func NewIdeal(s *sim.Sim, cfg IdealConfig) (*Ideal, error) {
	if cfg.Hosts < 1 {
		return nil, fieldError("ideal.hosts", cfg.Hosts, "must be >= 1")
	}
	if cfg.Rate <= 0 {
		return nil, fieldError("ideal.rate", cfg.Rate, "must be > 0 bits per second")
	}
	if cfg.Latency < 0 {
		return nil, fieldError("ideal.latency", cfg.Latency, "must be >= 0")
	}
	t := &Ideal{s: s, cfg: cfg,
		tx: make([]hostQueue, cfg.Hosts), pipe: make([]hostQueue, cfg.Hosts), rx: make([]hostQueue, cfg.Hosts)}
	t.kTx = s.Register("ideal.tx_done", t.onTx)
	t.kPip = s.Register("ideal.first_byte", t.onPipe)
	t.kRx = s.Register("ideal.delivered", t.onRx)
	return t, nil
}

// SetSink sets the function called when a message is delivered (Executor.Delivered).
func (t *Ideal) SetSink(f func(now sim.Time, token uint64)) { t.sink = f }

// Send implements Transport. Errors: a host out of range, Src == Dst, negative bytes, no sink.
func (t *Ideal) Send(now sim.Time, m Message) error {
	if m.Src < 0 || m.Src >= t.cfg.Hosts || m.Dst < 0 || m.Dst >= t.cfg.Hosts {
		return fmt.Errorf("ideal: message %d -> %d: hosts must be in [0, %d)", m.Src, m.Dst, t.cfg.Hosts)
	}
	if m.Src == m.Dst {
		return fmt.Errorf("ideal: message from host %d to itself", m.Src)
	}
	if m.Bytes < 0 {
		return fmt.Errorf("ideal: message %d -> %d of %d bytes", m.Src, m.Dst, m.Bytes)
	}
	if t.sink == nil {
		return fmt.Errorf("ideal: no sink set (call SetSink with Executor.Delivered)")
	}
	var id int32
	if k := len(t.free); k > 0 {
		id = t.free[k-1]
		t.free = t.free[:k-1]
	} else {
		id = int32(len(t.msgs))
		t.msgs = append(t.msgs, idealMsg{})
	}
	t.msgs[id] = idealMsg{src: int32(m.Src), dst: int32(m.Dst), bytes: m.Bytes, token: m.Token}
	q := &t.tx[m.Src]
	q.push(id)
	switch {
	case q.busy: // a tx-done event is pending and will start it
	case now >= q.freeAt:
		t.startTx(now, m.Src)
	default: // the transmitter is sending with nothing queued: wake it when it frees up
		q.busy = true
		t.s.At(q.freeAt, t.kTx, int32(m.Src), 0)
	}
	return nil
}

// startTx puts host h's next posted message on its transmitter.
func (t *Ideal) startTx(now sim.Time, h int) {
	q := &t.tx[h]
	id := q.pop()
	m := &t.msgs[id]
	m.txEnd = now + t.cfg.Rate.TxTime(m.bytes)
	m.head = now + t.cfg.Latency
	q.freeAt = m.txEnd
	p := &t.pipe[h]
	p.push(id)
	if p.len() == 1 {
		t.s.At(m.head, t.kPip, int32(h), 0)
	}
}

// onTx: host h's transmitter is free and has messages queued.
func (t *Ideal) onTx(now sim.Time, h int32, _ uint64) {
	q := &t.tx[h]
	q.busy = false
	if !q.empty() {
		t.startTx(now, int(h))
		if !q.empty() {
			q.busy = true
			t.s.At(q.freeAt, t.kTx, h, 0)
		}
	}
}

// onPipe: the first byte of host h's oldest message in flight reaches its receiver.
func (t *Ideal) onPipe(now sim.Time, h int32, _ uint64) {
	p := &t.pipe[h]
	id := p.pop()
	if !p.empty() {
		t.s.At(t.msgs[p.peek()].head, t.kPip, h, 0)
	}
	d := t.msgs[id].dst
	r := &t.rx[d]
	r.push(id)
	t.MaxRxWait = max(t.MaxRxWait, r.len())
	if !r.busy {
		t.startRx(now, int(d))
	}
}

func (t *Ideal) startRx(now sim.Time, d int) {
	r := &t.rx[d]
	id := r.pop()
	m := &t.msgs[id]
	end := max(now+t.cfg.Rate.TxTime(m.bytes), m.txEnd+t.cfg.Latency)
	r.busy, r.cur = true, id
	t.s.At(end, t.kRx, int32(d), 0)
}

func (t *Ideal) onRx(now sim.Time, d int32, _ uint64) {
	r := &t.rx[d]
	id := r.cur
	r.busy = false
	m := t.msgs[id]
	t.free = append(t.free, id)
	t.Messages++
	t.Bytes += m.bytes
	if !r.empty() {
		t.startRx(now, int(d))
	}
	t.sink(now, m.token)
}
