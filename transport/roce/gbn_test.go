package roce

import (
	"errors"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// gbnPair is a Sender and Receiver driven by hand: the test decides when each packet arrives,
// or that it never does.
type gbnPair struct {
	t *testing.T
	s *Sender
	r *Receiver
}

// gbnConfig: DCQCN off (the timelines are about recovery), RTO 100 us, an ACK per packet.
func gbnConfig() Config {
	return Config{RTO: 100 * us, DCQCN: DCQCNConfig{Disabled: true}}
}

func newGBNPair(t *testing.T, cfg Config) *gbnPair {
	t.Helper()
	c := Conn{QP: 7, LineRate: 100 * sim.Gbps}
	s, err := NewSender(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReceiver(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	return &gbnPair{t: t, s: s, r: r}
}

// sendAll runs the sender's timer until it has nothing more to send (or until limit), and
// returns what it emitted with the send times.
func (p *gbnPair) sendAll(limit sim.Time) ([]Header, []sim.Time) {
	var hs []Header
	var at []sim.Time
	for {
		d := p.s.Deadline()
		if d > limit || !p.s.canSend() {
			return hs, at
		}
		p.s.OnTimer(d)
		for _, h := range p.s.Out() {
			hs = append(hs, h)
			at = append(at, d)
		}
		p.s.ClearOut()
	}
}

// deliver hands data packets to the receiver at now (skipping PSNs in drop) and returns its
// answers.
func (p *gbnPair) deliver(now sim.Time, hs []Header, drop ...uint32) []Header {
	var out []Header
next:
	for i := range hs {
		for _, d := range drop {
			if hs[i].PSN == d {
				continue next
			}
		}
		p.r.OnData(now, &hs[i], false)
		out = append(out, p.r.Out()...)
		p.r.ClearOut()
	}
	return out
}

// answer hands the receiver's answers to the sender at now.
func (p *gbnPair) answer(now sim.Time, as []Header) {
	for i := range as {
		switch as[i].Kind {
		case Ack:
			p.s.OnAck(now, &as[i])
		case Nak:
			p.s.OnNak(now, &as[i])
		case CNP:
			p.s.OnCNP(now, &as[i])
		}
	}
}

func psns(hs []Header) []uint32 {
	out := make([]uint32, len(hs))
	for i := range hs {
		out[i] = hs[i].PSN
	}
	return out
}

func kinds(hs []Header) string {
	var b strings.Builder
	for i, h := range hs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h.Kind.String())
		if h.Kind != CNP {
			b.WriteByte('(')
			b.WriteString(itoa(h.PSN))
			b.WriteByte(')')
		}
	}
	return b.String()
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var buf [10]byte
	i := len(buf)
	for v > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return string(buf[i:])
}

func seq(lo, hi uint32) []uint32 {
	var s []uint32
	for p := lo; p < hi; p++ {
		s = append(s, p)
	}
	return s
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGoBackNTimeline: 20 packets, PSN 5 lost. The responder places 0-4, NAKs PSN 5 once when
// PSN 6 arrives, and drops 6-19 [IBTA §9.7, responder: out-of-sequence requests]; the requester, on the NAK, resends
// everything from 5 [IBTA §9.7, requester: NAK-sequence error; docs/protocols.md, "RoCEv2:
// go-back-N"], and the transfer completes.
func TestGoBackNTimeline(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	if _, err := p.s.Post(0, 20*4096); err != nil {
		t.Fatal(err)
	}
	first, at := p.sendAll(sim.MaxTime)
	if !equalU32(psns(first), seq(0, 20)) {
		t.Fatalf("first pass sent %v; want PSNs 0-19", psns(first))
	}
	// Paced at line rate: 4194 B (first, with RETH) then 4178 B per packet at 100 Gb/s.
	if at[1]-at[0] != (100*sim.Gbps).TxTime(4194) || at[2]-at[1] != (100*sim.Gbps).TxTime(4178) {
		t.Fatalf("send gaps %v, %v; want the serialisation of 4194 B and 4178 B at 100 Gb/s", at[1]-at[0], at[2]-at[1])
	}
	if first[0].Seg != SegFirst || first[0].MsgBytes != 20*4096 || first[0].Wire != 4194 ||
		first[1].Seg != SegMiddle || first[1].Wire != 4178 || first[1].AckReq ||
		first[19].Seg != SegLast || !first[19].AckReq {
		t.Fatalf("segments: %+v, %+v, %+v", first[0], first[1], first[19])
	}

	answers := p.deliver(10*us, first, 5)
	if got, want := kinds(answers), "ack(1) ack(2) ack(3) ack(4) ack(5) nak(5)"; got != want {
		t.Fatalf("responder answered %q; want %q (one NAK for the gap, nothing for 7-19)", got, want)
	}
	if r := p.r.Stats; r.OutOfOrder != 14 || r.NAKs != 1 || r.ACKs != 5 || r.PlacedBytes != 5*4096 {
		t.Fatalf("responder stats %+v; want 14 out of order, 1 NAK, 5 ACKs, 5 packets placed", r)
	}

	p.answer(20*us, answers)
	// The NAK acknowledged 0-4 and rewound to 5, which the pacer let go at once.
	if p.s.una != 5 || p.s.next != 6 || p.s.Stats.GoBackN != 1 || p.s.InFlight() != 4178 || !equalU32(psns(p.s.Out()), []uint32{5}) {
		t.Fatalf("after the NAK: una %d next %d go-back-N %d in flight %d, sent %v; want 5, 6, 1, 4178, PSN 5",
			p.s.una, p.s.next, p.s.Stats.GoBackN, p.s.InFlight(), psns(p.s.Out()))
	}
	again := append([]Header(nil), p.s.Out()...)
	p.s.ClearOut()
	rest, _ := p.sendAll(sim.MaxTime)
	again = append(again, rest...)
	if !equalU32(psns(again), seq(5, 20)) {
		t.Fatalf("resent %v; want everything from PSN 5: 5-19", psns(again))
	}
	if again[0].Seg != SegMiddle || again[0].MsgBytes != 0 || again[0].Wire != 4178 {
		t.Fatalf("a resend mid-transfer is a Middle packet without RETH: %+v", again[0])
	}
	if s := p.s.Stats; s.RetxPackets != 15 || s.RetxBytes != 15*4178 || s.DataPackets != 35 {
		t.Fatalf("sender stats %+v; want 15 packets resent of 35", s)
	}

	answers = p.deliver(30*us, again)
	if len(answers) != 15 || answers[14].Kind != Ack || answers[14].PSN != 20 {
		t.Fatalf("responder answered %q; want 15 ACKs up to 20", kinds(answers))
	}
	if c := p.r.Completions(); len(c) != 1 || c[0].Bytes != 20*4096 || c[0].Done != 30*us || c[0].Posted != 10*us {
		t.Fatalf("responder completions %+v; want one of 81920 B placed at 30us", c)
	}
	p.answer(40*us, answers)
	if c := p.s.Completions(); len(c) != 1 || c[0].Bytes != 20*4096 || c[0].Done != 40*us || c[0].Msg != 0 {
		t.Fatalf("sender completions %+v; want transfer 0 done at 40us", c)
	}
	if !p.s.Idle() || p.s.Deadline() != sim.MaxTime || p.s.Err() != nil || p.s.retries != 0 {
		t.Fatalf("sender not idle after completion: %s", p.s.Outstanding())
	}
}

// TestTimeoutTimeline: the last packet is lost, so no later packet makes the responder NAK;
// the local ACK timeout, RTO after the last progress, resends it [IBTA §9.7, requester: transport timer].
func TestTimeoutTimeline(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	p.s.Post(0, 20*4096)
	first, _ := p.sendAll(sim.MaxTime)
	answers := p.deliver(10*us, first, 19)
	if len(answers) != 19 || answers[18].PSN != 19 {
		t.Fatalf("responder answered %q; want ACKs up to 19", kinds(answers))
	}
	p.answer(20*us, answers)
	if d := p.s.Deadline(); d != 20*us+100*us {
		t.Fatalf("deadline %v; want the RTO 100us after the last ACK at 20us", d)
	}
	p.s.OnTimer(119 * us) // early: nothing
	if len(p.s.Out()) != 0 || p.s.Stats.Timeouts != 0 {
		t.Fatalf("timer fired early: %q", kinds(p.s.Out()))
	}
	p.s.OnTimer(120 * us)
	if got := psns(p.s.Out()); !equalU32(got, []uint32{19}) || p.s.Stats.Timeouts != 1 || p.s.Stats.RetxPackets != 1 {
		t.Fatalf("on timeout sent %v (stats %+v); want PSN 19 again", got, p.s.Stats)
	}
	resent := append([]Header(nil), p.s.Out()...)
	p.s.ClearOut()
	p.answer(130*us, p.deliver(125*us, resent))
	if c := p.s.Completions(); len(c) != 1 || c[0].Done != 130*us || !p.s.Idle() {
		t.Fatalf("completions %+v after the resend; want the transfer done at 130us", c)
	}
}

// TestRetriesExhausted: a peer that never answers. The requester resends on each timeout,
// RetryCount (7) times, and errors on the 8th [IBTA §9.7: retry count]: Err is set, nothing
// more is sent, no deadline remains. Never a silent stall.
func TestRetriesExhausted(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	p.s.Post(0, 3*4096)
	sent := 0
	var last sim.Time
	for i := 0; i < 100 && p.s.Err() == nil; i++ {
		last = p.s.Deadline()
		p.s.OnTimer(last)
		sent += len(p.s.Out())
		p.s.ClearOut()
	}
	err := p.s.Err()
	if err == nil || !errors.Is(err, ErrRetryExceeded) {
		t.Fatalf("Err() = %v; want ErrRetryExceeded", err)
	}
	if last != 8*100*us || p.s.Stats.Timeouts != 8 || sent != 3*8 {
		t.Fatalf("error at %v after %d timeouts and %d packets; want 800us, 8 timeouts, 24 packets (1 + 7 retries x 3)", last, p.s.Stats.Timeouts, sent)
	}
	if !strings.Contains(err.Error(), "qp 7") || !strings.Contains(err.Error(), "7 retries") {
		t.Fatalf("error %q should name the QP and the retries", err)
	}
	if p.s.Deadline() != sim.MaxTime {
		t.Fatalf("deadline %v after the QP error; want none", p.s.Deadline())
	}
	p.s.OnTimer(sim.Second)
	p.s.OnAck(sim.Second, &Header{Kind: Ack, PSN: 3})
	if len(p.s.Out()) != 0 || len(p.s.Completions()) != 0 {
		t.Fatal("an errored QP sent or completed something")
	}
	if _, err := p.s.Post(sim.Second, 1); !errors.Is(err, ErrRetryExceeded) {
		t.Fatalf("Post on an errored QP: %v; want the QP error", err)
	}
	if !strings.Contains(p.s.Outstanding(), "(error)") {
		t.Fatalf("Outstanding() = %q; want it to show the error state", p.s.Outstanding())
	}
}

// TestNakWithoutProgressCountsAsRetry: sequence NAKs that acknowledge nothing new use up the
// retry count like timeouts (IBTA counts both against retry_cnt).
func TestNakWithoutProgressCountsAsRetry(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	p.s.Post(0, 4*4096)
	p.sendAll(sim.MaxTime)
	for i := 1; i <= 8; i++ {
		p.s.OnNak(sim.Time(i)*us, &Header{Kind: Nak, PSN: 0})
		p.s.ClearOut()
		if (p.s.Err() != nil) != (i == 8) {
			t.Fatalf("NAK %d: Err() = %v; want the error on the 8th", i, p.s.Err())
		}
	}
	// A NAK that acknowledges something is progress.
	q := newGBNPair(t, gbnConfig())
	q.s.Post(0, 40*4096)
	q.sendAll(sim.MaxTime)
	for i := 1; i <= 20; i++ {
		q.s.OnNak(sim.Time(i)*us, &Header{Kind: Nak, PSN: uint32(i)})
		q.s.ClearOut()
	}
	if q.s.Err() != nil || q.s.retries != 0 {
		t.Fatalf("NAKs with progress errored the QP: %v (retries %d)", q.s.Err(), q.s.retries)
	}
}

// TestStaleAnswers: ACKs and NAKs for PSNs already acknowledged or never sent change nothing.
func TestStaleAnswers(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	p.s.Post(0, 10*4096)
	p.sendAll(sim.MaxTime)
	p.s.OnAck(1*us, &Header{Kind: Ack, PSN: 4})
	p.s.OnAck(2*us, &Header{Kind: Ack, PSN: 3})  // older
	p.s.OnAck(3*us, &Header{Kind: Ack, PSN: 99}) // never sent
	p.s.OnNak(4*us, &Header{Kind: Nak, PSN: 2})  // already acknowledged
	p.s.OnNak(5*us, &Header{Kind: Nak, PSN: 11}) // beyond what was sent
	if p.s.una != 4 || p.s.next != 10 || p.s.Stats.DupACKs != 2 || p.s.Stats.StaleNAKs != 2 || p.s.Stats.GoBackN != 0 {
		t.Fatalf("una %d next %d stats %+v; want una 4, nothing resent, 2 dup ACKs, 2 stale NAKs", p.s.una, p.s.next, p.s.Stats)
	}
}

// TestResponderNakOncePerGap: one NAK per gap episode; a new gap after the expected PSN
// arrived gets a new NAK; duplicates are re-ACKed at once [IBTA §9.7, responder: duplicate and out-of-sequence requests].
func TestResponderNakOncePerGap(t *testing.T) {
	r, err := NewReceiver(Config{}, Conn{QP: 1})
	if err != nil {
		t.Fatal(err)
	}
	data := func(psn uint32, seg Seg) *Header {
		h := &Header{Kind: Data, QP: 1, PSN: psn, Seg: seg, Len: 4096}
		if seg.opens() {
			h.MsgBytes = 10 * 4096
		}
		return h
	}
	steps := []struct {
		h    *Header
		want string
	}{
		{data(0, SegFirst), "ack(1)"},
		{data(2, SegMiddle), "nak(1)"},
		{data(3, SegMiddle), ""},
		{data(4, SegMiddle), ""},
		{data(1, SegMiddle), "ack(2)"},
		{data(3, SegMiddle), "nak(2)"}, // 2 was dropped: a new gap, a new NAK
		{data(0, SegFirst), "ack(2)"},  // duplicate: re-ACK with the expected PSN
		{data(1, SegMiddle), "ack(2)"},
		{data(2, SegMiddle), "ack(3)"},
	}
	for i, st := range steps {
		r.OnData(sim.Time(i)*us, st.h, false)
		if got := kinds(r.Out()); got != st.want {
			t.Fatalf("step %d (PSN %d): answered %q, want %q", i, st.h.PSN, got, st.want)
		}
		r.ClearOut()
	}
	if s := r.Stats; s.NAKs != 2 || s.Duplicates != 2 || s.OutOfOrder != 4 || s.PlacedBytes != 3*4096 {
		t.Fatalf("stats %+v", s)
	}
}

// TestResponderAckCoalescing: with ack_every 4 the responder answers every 4th in-order packet
// and at once on AckReq (the transfer's last packet).
func TestResponderAckCoalescing(t *testing.T) {
	r, _ := NewReceiver(Config{AckEvery: 4}, Conn{QP: 1})
	var got []string
	for psn := uint32(0); psn < 10; psn++ {
		h := &Header{Kind: Data, PSN: psn, Seg: SegMiddle, Len: 4096}
		switch psn {
		case 0:
			h.Seg, h.MsgBytes = SegFirst, 10*4096
		case 9:
			h.Seg, h.AckReq = SegLast, true
		}
		r.OnData(0, h, false)
		if len(r.Out()) > 0 {
			got = append(got, kinds(r.Out()))
		}
		r.ClearOut()
	}
	if strings.Join(got, " ") != "ack(4) ack(8) ack(10)" {
		t.Fatalf("answers %v; want ack(4) ack(8) ack(10)", got)
	}
}

// TestResponderMalformed: packets out of place in the transfer are dropped and counted, never
// placed or completed.
func TestResponderMalformed(t *testing.T) {
	r, _ := NewReceiver(Config{}, Conn{QP: 1})
	r.OnData(0, &Header{Kind: Data, PSN: 0, Seg: SegMiddle, Len: 10}, false) // no transfer open
	r.OnData(0, &Header{Kind: Ack, PSN: 0}, false)                           // not data
	r.OnData(0, &Header{Kind: Data, PSN: 0, Seg: SegOnly, Len: 5000}, false) // longer than the MTU
	r.OnData(0, &Header{Kind: Data, PSN: 0, Seg: SegFirst, Len: 4096, MsgBytes: 8192}, false)
	r.OnData(0, &Header{Kind: Data, PSN: 1, Seg: SegOnly, Len: 1}, false) // opens while open
	if r.Stats.Malformed != 4 || r.ExpectedPSN() != 1 || len(r.Completions()) != 0 {
		t.Fatalf("stats %+v, expected PSN %d; want 4 malformed, only PSN 0 placed", r.Stats, r.ExpectedPSN())
	}
}

// TestResponderCNPRateLimit: CE-marked packets every microsecond for 200 us give CNPs at 0, 50,
// 100, 150 and 200 us only: at most one per 50 us per QP [DCQCN §3.1; docs/protocols.md, "RoCEv2:
// DCQCN"]. Marks on duplicates and out-of-order packets count too: the notification point does not
// care about order.
func TestResponderCNPRateLimit(t *testing.T) {
	r, _ := NewReceiver(Config{DCQCN: DCQCNConfig{Profile: DCQCNProfilePaper}}, Conn{QP: 3}) // the paper's 50 us CNP interval
	var cnps []sim.Time
	for i := 0; i <= 200; i++ {
		now := sim.Time(i) * us
		psn := uint32(i)
		if i%7 == 3 {
			psn += 1000 // out of order
		}
		h := &Header{Kind: Data, QP: 3, PSN: psn, Seg: SegMiddle, Len: 64}
		if i == 0 {
			h.Seg, h.MsgBytes = SegFirst, 1<<20
		}
		r.OnData(now, h, true)
		for _, a := range r.Out() {
			if a.Kind == CNP {
				if a.QP != 3 || a.Wire != 98 {
					t.Fatalf("CNP %+v; want QP 3, 98 B", a)
				}
				cnps = append(cnps, now)
			}
		}
		r.ClearOut()
	}
	want := []sim.Time{0, 50 * us, 100 * us, 150 * us, 200 * us}
	if len(cnps) != len(want) {
		t.Fatalf("CNPs at %v; want %v", cnps, want)
	}
	for i := range want {
		if cnps[i] != want[i] {
			t.Fatalf("CNPs at %v; want %v", cnps, want)
		}
	}
	if r.Stats.CNPs != 5 || r.Stats.CNPsSuppressed != 196 || r.Stats.CEPackets != 201 {
		t.Fatalf("stats %+v; want 5 CNPs, 196 suppressed, 201 CE packets", r.Stats)
	}
}

// TestSenderPacesAtDCQCNRate: after a CNP the sender's packets leave no faster than the cut
// rate, and a rate increase due during a long gap brings the next packet forward (the
// deadline includes DCQCN's timer).
func TestSenderPacesAtDCQCNRate(t *testing.T) {
	cfg := Config{RTO: sim.Second, DCQCN: DCQCNConfig{Profile: DCQCNProfilePaper}}
	line := 100 * sim.Gbps
	s, err := NewSender(cfg, Conn{QP: 1, LineRate: line})
	if err != nil {
		t.Fatal(err)
	}
	s.Post(0, 100*4096)
	s.Pump(0)
	s.OnCNP(0, &Header{Kind: CNP}) // 100G -> 50G
	s.ClearOut()
	prev := sim.Time(0)
	prevWire := int64(4194)
	for i := 0; i < 20; i++ {
		d := s.Deadline()
		if want := prev + (50 * sim.Gbps).TxTime(prevWire); d != want {
			t.Fatalf("packet %d due at %v; want %v (the previous packet's serialisation at 50 Gb/s)", i+1, d, want)
		}
		s.OnTimer(d)
		if len(s.Out()) != 1 {
			t.Fatalf("packet %d: sent %d packets at once; want 1", i+1, len(s.Out()))
		}
		prev, prevWire = d, int64(s.Out()[0].Wire)
		s.ClearOut()
	}

	// At the 100 Mb/s floor a 4178 B packet takes 334 us, longer than T = 55 us: the deadline
	// is the increase, which shortens the gap in progress.
	lo, err := NewSender(Config{RTO: sim.Second, DCQCN: DCQCNConfig{Profile: DCQCNProfilePaper, MinRate: 100 * sim.Mbps}}, Conn{QP: 2, LineRate: 200 * sim.Mbps})
	if err != nil {
		t.Fatal(err)
	}
	lo.Post(0, 10*4096)
	lo.Pump(0) // first packet at 0, 4194 B
	lo.ClearOut()
	lo.OnCNP(0, &Header{Kind: CNP}) // 200M -> 100M (the floor)
	if d := lo.Deadline(); d != 55*us {
		t.Fatalf("deadline %v; want the rate increase at 55us, before the send at %v", d, lo.NextSendAt())
	}
	lo.OnTimer(55 * us) // fast recovery: 150 Mb/s; the gap becomes 4194 x 8 / 150M = 223.68 us
	if len(lo.Out()) != 0 || lo.Rate(55*us) != 150*sim.Mbps {
		t.Fatalf("at 55us: sent %d, rate %v; want nothing sent, 150Mbps", len(lo.Out()), lo.Rate(55*us))
	}
	if d := lo.Deadline(); d != 110*us {
		t.Fatalf("deadline %v; want the next increase at 110us (send at %v)", d, lo.NextSendAt())
	}
	lo.OnTimer(110 * us) // 175 Mb/s: gap 191.73 us
	lo.OnTimer(lo.Deadline())
	if lo.Rate(165*us) != 187500*sim.Kbps {
		t.Fatalf("rate %v at 165us; want 187.5Mbps", lo.Rate(165*us))
	}
	d := lo.Deadline()
	if want := (187500 * sim.Kbps).TxTime(4194); d != want {
		t.Fatalf("deadline %v; want the send at %v (4194 B at 187.5 Mb/s)", d, want)
	}
}

// TestWindowWithCoalescedAcks: with a window of 3 packets and ACKs coalesced every 8, the
// sender asks for an ACK when the window fills, so the transfer flows without timeouts.
func TestWindowWithCoalescedAcks(t *testing.T) {
	cfg := gbnConfig()
	cfg.AckEvery = 8
	cfg.Window = 3 * 4194
	p := newGBNPair(t, cfg)
	p.s.Post(0, 50*4096)
	now := sim.Time(0)
	for round := 0; round < 100 && !p.s.Idle(); round++ {
		hs, _ := p.sendAll(sim.MaxTime)
		if len(hs) > 3 {
			t.Fatalf("round %d: %d packets in flight; window allows 3", round, len(hs))
		}
		now += 2 * us
		p.answer(now, p.deliver(now, hs))
	}
	if !p.s.Idle() || p.s.Stats.Timeouts != 0 || p.s.Stats.RetxPackets != 0 {
		t.Fatalf("not done without timeouts: %s, stats %+v", p.s.Outstanding(), p.s.Stats)
	}
}

// TestZeroLengthAndTinyTransfers: a zero-length write is one empty Only packet; transfers
// shorter than a packet are Only packets with RETH; all complete in order at both ends.
func TestZeroLengthAndTinyTransfers(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	sizes := []int64{0, 1, 4096, 4097, 0}
	for _, n := range sizes {
		p.s.Post(0, n)
	}
	hs, _ := p.sendAll(sim.MaxTime)
	if len(hs) != 6 || hs[0].Seg != SegOnly || hs[0].Len != 0 || hs[0].Wire != 98 ||
		hs[3].Seg != SegFirst || hs[4].Seg != SegLast || hs[4].Len != 1 {
		t.Fatalf("packets %+v", hs)
	}
	p.answer(1*us, p.deliver(1*us, hs))
	sc, rc := p.s.Completions(), p.r.Completions()
	if len(sc) != len(sizes) || len(rc) != len(sizes) {
		t.Fatalf("completions: sender %d, receiver %d; want %d", len(sc), len(rc), len(sizes))
	}
	for i, n := range sizes {
		if sc[i].Msg != uint32(i) || sc[i].Bytes != n || rc[i].Msg != uint32(i) || rc[i].Bytes != n {
			t.Fatalf("transfer %d: sender %+v receiver %+v; want %d B", i, sc[i], rc[i], n)
		}
	}
	if _, err := p.s.Post(0, -1); err == nil {
		t.Fatal("Post(-1) succeeded")
	}
	if _, err := p.s.Post(0, MaxMsgBytes); err == nil || !strings.Contains(err.Error(), "post it in parts") {
		t.Fatalf("Post beyond the PSN space: %v; want an error", err)
	}
}

func TestNewSenderErrors(t *testing.T) {
	if _, err := NewSender(Config{}, Conn{QP: 1}); err == nil || !strings.Contains(err.Error(), "line rate") {
		t.Fatalf("zero line rate: %v", err)
	}
	if _, err := NewSender(Config{RTO: 5}, Conn{QP: 1, LineRate: sim.Gbps}); err == nil || !strings.HasPrefix(err.Error(), "transport.roce.rto:") {
		t.Fatalf("bad rto: %v", err)
	}
	if _, err := NewSender(Config{}, Conn{QP: 1, LineRate: 50 * sim.Mbps}); err == nil || !strings.Contains(err.Error(), "transport.roce.dcqcn.min_rate") {
		t.Fatalf("min rate above line: %v", err)
	}
	if _, err := NewReceiver(Config{AckEvery: -1}, Conn{QP: 1}); err == nil || !strings.HasPrefix(err.Error(), "transport.roce.ack_every:") {
		t.Fatalf("bad ack_every: %v", err)
	}
	s, _ := NewSender(Config{}, Conn{QP: 9, LineRate: sim.Gbps, SrcPort: 50000})
	r, _ := NewReceiver(Config{}, Conn{QP: 9, SrcPort: 50000})
	if s.SrcPort() != 50000 || r.SrcPort() != 50000 || s.QP() != 9 || r.QP() != 9 {
		t.Fatal("explicit source port or QP not kept")
	}
	d, _ := NewSender(Config{}, Conn{QP: 9, LineRate: sim.Gbps})
	if d.SrcPort() != UDPSourcePort(0, 9) {
		t.Fatalf("default source port %d; want UDPSourcePort(0, 9) = %d", d.SrcPort(), UDPSourcePort(0, 9))
	}
}

// TestNakAcknowledgingEverything: a NAK whose PSN is one past the highest sent acknowledges
// everything and leaves no timer behind; the next packet arms a fresh RTO.
func TestNakAcknowledgingEverything(t *testing.T) {
	p := newGBNPair(t, gbnConfig())
	p.s.Post(0, 3*4096)
	p.sendAll(sim.MaxTime)
	p.s.OnNak(10*us, &Header{Kind: Nak, PSN: 3})
	if !p.s.Idle() || p.s.Deadline() != sim.MaxTime || p.s.Stats.GoBackN != 0 {
		t.Fatalf("after NAK(3) of 0-2: %s, deadline %v", p.s.Outstanding(), p.s.Deadline())
	}
	p.s.Post(500*us, 4096)
	p.s.Pump(500 * us)
	if d := p.s.Deadline(); d != 600*us {
		t.Fatalf("deadline %v after a send at 500us; want the RTO at 600us", d)
	}
}
