package fabric

import (
	"math"
	"testing"
	"unsafe"
)

// newQueue returns a port queue with cfg (defaults filled) and the packets it hands out.
func newQueue(t *testing.T, cfg QueueConfig) *portQueue {
	t.Helper()
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("queue"); err != nil {
		t.Fatal(err)
	}
	q := &portQueue{}
	q.init(newQueueParams(cfg), make([]queueLine, linesPerPort))
	return q
}

// deq dequeues the next packet to send from q and frees its slot, or returns nil.
func deq(q *portQueue) *Packet {
	k := q.dequeue(0, q.lines, 0)
	if k < 0 {
		return nil
	}
	p := q.s[k].p
	q.release(k)
	return p
}

// TestECNMarkFraction offers ECT packets to a class queue holding a fixed depth and checks
// that the fraction of ECT arrivals marked CE matches ECNConfig.MarkProbability, the RED line
// of RFC 3168 / DCQCN (Zhu et al. §4), within 4.5 standard deviations.
func TestECNMarkFraction(t *testing.T) {
	e := ECNConfig{Enabled: true, Kmin: 20 * 1024, Kmax: 200 * 1024, Pmax: 0.2}
	const draws = 20000
	for _, depth := range []int64{0, 10 * 1024, 20 * 1024, 40 * 1024, 110 * 1024, 199 * 1024, 200 * 1024, 400 * 1024} {
		tmpl := newQueue(t, QueueConfig{Limit: 1 << 20, ECN: e})
		if depth > 0 {
			if res, _ := tmpl.enqueue(0, &Packet{Size: int32(depth)}, false, false, tmpl.lines); res != admitted {
				t.Fatal("filler refused")
			}
		}
		// Each probe arrives at a copy of the queue holding exactly depth bytes.
		marked, counted := 0, int64(0)
		for range draws {
			q := *tmpl
			// Deep copy: the queue lines and statistics are slices shared with tmpl.
			q.lines = append([]queueLine(nil), tmpl.lines...)
			q.s = append([]slot(nil), tmpl.s...)
			q.aux = &queueAux{cold: append([]queueCold(nil), tmpl.aux.cold...)}
			p := &Packet{Size: 64, Flags: ECT}
			if res, _ := q.enqueue(0, p, false, false, q.lines); res != admitted {
				t.Fatal("probe refused")
			}
			tmpl.rng = q.rng // the copy advanced the port's marking stream
			if p.Flags&CE != 0 {
				marked++
			}
			counted += q.lines[0].ceMarks
		}
		want := e.MarkProbability(depth)
		got := float64(marked) / draws
		sd := math.Sqrt(want * (1 - want) / draws)
		if math.Abs(got-want) > 4.5*sd+1e-12 {
			t.Errorf("depth %d: marked %.4f, want %.4f +- %.4f", depth, got, want, 4.5*sd)
		}
		if counted != int64(marked) {
			t.Errorf("depth %d: CEMarks %d, marked %d", depth, counted, marked)
		}
	}
	// The closed form itself.
	for _, tc := range []struct {
		depth int64
		p     float64
	}{{0, 0}, {20*1024 - 1, 0}, {20 * 1024, 0}, {110 * 1024, 0.1}, {200*1024 - 1, 0.2 * (180*1024 - 1) / (180 * 1024)}, {200 * 1024, 1}} {
		if got := e.MarkProbability(tc.depth); math.Abs(got-tc.p) > 1e-12 {
			t.Errorf("MarkProbability(%d) = %v, want %v", tc.depth, got, tc.p)
		}
	}
	if (ECNConfig{Kmax: 1}).MarkProbability(5) != 0 {
		t.Error("disabled ECN has a mark probability")
	}
}

// TestWDRRShare: with both the header queue and data backlogged, the header queue gets
// HeaderShare of the bytes sent (weighted deficit round robin), and data still flows.
func TestWDRRShare(t *testing.T) {
	for _, tc := range []struct {
		share    float64
		dataSize int32
	}{{0.5, 4096}, {0.25, 4096}, {0.75, 4096}, {0.9, 4096}, {0.5, 1500}, {0.3, 9000}} {
		q := newQueue(t, QueueConfig{Limit: 1 << 30, Trim: TrimConfig{Enabled: true, HeaderLimit: 1 << 30, HeaderShare: tc.share}})
		data, hdrs := make([]Packet, 2000), make([]Packet, 100000)
		for i := range data {
			data[i].Size = tc.dataSize
			q.enqueue(0, &data[i], false, false, q.lines)
		}
		for i := range hdrs {
			hdrs[i] = Packet{Size: HeaderBytes, Flags: Trimmed}
			q.enqueue(0, &hdrs[i], false, false, q.lines)
		}
		var hdrBytes, dataBytes, dataPkts int64
		for q.hdr().n > 0 && q.lines[0].n > 0 {
			p := deq(q)
			if p.Flags&Trimmed != 0 {
				hdrBytes += int64(p.Size)
			} else {
				dataBytes += int64(p.Size)
				dataPkts++
			}
		}
		got := float64(hdrBytes) / float64(hdrBytes+dataBytes)
		if math.Abs(got-tc.share) > 0.01 {
			t.Errorf("share %.2f, %d B data: headers got %.4f of the bytes", tc.share, tc.dataSize, got)
		}
		if dataPkts < 100 {
			t.Errorf("share %.2f: data starved (%d packets)", tc.share, dataPkts)
		}
	}
}

// TestWDRRHeaderFirst: when a header joins a data backlog it is the next packet sent, and a
// continuous header backlog lets one data packet through per round (data is not starved).
func TestWDRRHeaderFirst(t *testing.T) {
	q := newQueue(t, QueueConfig{Trim: TrimConfig{Enabled: true}})
	for range 3 {
		q.enqueue(0, &Packet{Size: 4096}, false, false, q.lines)
	}
	if p := deq(q); p.Size != 4096 {
		t.Fatal("data-only queue did not send data")
	}
	q.enqueue(0, &Packet{Size: HeaderBytes, Flags: Trimmed}, false, false, q.lines)
	if p := deq(q); p.Flags&Trimmed == 0 {
		t.Error("data went before the waiting header")
	}
	// 200 headers: 64 per turn (4 KiB, the header quantum), then one data packet.
	for range 200 {
		q.enqueue(0, &Packet{Size: HeaderBytes, Flags: Trimmed}, false, false, q.lines)
	}
	var order []bool // true = header
	for q.hdr().n > 0 && q.lines[0].n > 0 {
		order = append(order, deq(q).Flags&Trimmed != 0)
	}
	// The lone header opened the header queue's turn, so the first run has 63 more.
	run, want := 0, 63
	for i, hdr := range order {
		if hdr {
			run++
			continue
		}
		if run != want {
			t.Fatalf("data packet at %d after %d headers, want %d", i, run, want)
		}
		run, want = 0, 64
	}
}

// TestTrimmedHeaderQueuing: a header trimmed upstream goes to the header queue of a trimming
// port (not trimmed or counted again), and to its data class at a port that does not trim.
func TestTrimmedHeaderQueuing(t *testing.T) {
	trim := newQueue(t, QueueConfig{Limit: 4096, Trim: TrimConfig{Enabled: true}})
	trim.enqueue(0, &Packet{Size: 4096, Class: 1}, false, false, trim.lines) // class 1 full
	p := &Packet{Size: HeaderBytes, Class: 1, Flags: Trimmed}
	if res, _ := trim.enqueue(0, p, true, false, trim.lines); res != admittedTrimmed || trim.hdr().n != 1 {
		t.Errorf("trimming port: %v, header queue %d", res, trim.hdr().n)
	}
	if p.Flags&TrimmedLastHop != 0 || trim.aux.cold[1].trims != 0 {
		t.Errorf("re-trimmed: flags %b, Trims %d", p.Flags, trim.aux.cold[1].trims)
	}
	plain := newQueue(t, QueueConfig{})
	if res, _ := plain.enqueue(0, &Packet{Size: HeaderBytes, Class: 1, Flags: Trimmed}, false, false, plain.lines); res != admitted || plain.lines[1].n != 1 {
		t.Errorf("non-trimming port: %v, class 1 holds %d", res, plain.lines[1].n)
	}
}

// TestQueueConfigValidate: each field's bounds, named by YAML path.
func TestQueueConfigValidate(t *testing.T) {
	ok := QueueConfig{}.WithDefaults()
	if ok.Classes != DefaultClasses || ok.Limit != DefaultQueueLimit || ok.Trim.HeaderLimit != DefaultHeaderLimit || ok.Trim.HeaderShare != DefaultHeaderShare {
		t.Errorf("defaults: %+v", ok)
	}
	for _, tc := range []struct {
		name string
		mod  func(c *QueueConfig)
		err  string
	}{
		{"fine", func(c *QueueConfig) {}, ""},
		{"classes 0", func(c *QueueConfig) { c.Classes = 0 }, "sw.classes"},
		{"classes 9", func(c *QueueConfig) { c.Classes = MaxClasses + 1 }, "sw.classes"},
		{"limit", func(c *QueueConfig) { c.Limit = -1 }, "sw.limit"},
		{"kmax <= kmin", func(c *QueueConfig) { c.ECN = ECNConfig{Enabled: true, Kmin: 5, Kmax: 5} }, "sw.ecn"},
		{"pmax", func(c *QueueConfig) { c.ECN = ECNConfig{Enabled: true, Kmax: 5, Pmax: 1.5} }, "sw.ecn.pmax"},
		{"pmax NaN", func(c *QueueConfig) { c.ECN = ECNConfig{Enabled: true, Kmax: 5, Pmax: math.NaN()} }, "sw.ecn.pmax"},
		{"threshold", func(c *QueueConfig) { c.Trim.Enabled, c.Trim.Threshold = true, -1 }, "sw.trim.threshold"},
		{"header limit", func(c *QueueConfig) { c.Trim.Enabled, c.Trim.HeaderLimit = true, 63 }, "sw.trim.header_limit"},
		{"share", func(c *QueueConfig) { c.Trim.Enabled, c.Trim.HeaderShare = true, 1 }, "sw.trim.header_share"},
	} {
		c := ok
		tc.mod(&c)
		err := c.Validate("sw")
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !startsWith(err.Error(), tc.err+":")):
			t.Errorf("%s: error %v, want one starting %q", tc.name, err, tc.err)
		}
	}
}

func startsWith(s, prefix string) bool { return len(s) >= len(prefix) && s[:len(prefix)] == prefix }

// TestPacketLayout pins the packet layout the hot path relies on: 128 bytes (two whole cache
// lines in the allocator's 128-byte size class), with every field a switch touches in the first.
func TestPacketLayout(t *testing.T) {
	var p Packet
	if s := unsafe.Sizeof(p); s != 128 {
		t.Errorf("Packet is %d bytes, want 128", s)
	}
	if off := unsafe.Offsetof(p.Flow) + unsafe.Sizeof(p.Flow); off > 64 {
		t.Errorf("the fabric's fields end at byte %d, want within the first 64", off)
	}
	if off := unsafe.Offsetof(p.ID); off != 64 {
		t.Errorf("ID at byte %d, want 64 (the start of the second line)", off)
	}
}

// TestPortLayout pins the port layout the hot path relies on: 256 bytes, so every port in
// Network.Ports starts a 128-byte pair of cache lines, with the fields a packet event reads
// filling the first pair; and a queue line of exactly one cache line.
func TestPortLayout(t *testing.T) {
	var p Port
	if s := unsafe.Sizeof(p); s != 256 {
		t.Errorf("Port is %d bytes, want 256", s)
	}
	// The hot fields: the port's own up to q, then q's up to aux.
	if end := unsafe.Offsetof(p.q) + unsafe.Offsetof(p.q.aux) + unsafe.Sizeof(p.q.aux); end != 128 {
		t.Errorf("the hot fields end at byte %d, want 128", end)
	}
	if s := unsafe.Sizeof(queueLine{}); s != 64 {
		t.Errorf("queueLine is %d bytes, want 64", s)
	}
}

// TestSlab: a queue's slab grows to its peak occupancy and no further, reuses freed slots
// last-freed-first, and its lists keep FIFO order through growth.
func TestSlab(t *testing.T) {
	q := newQueue(t, QueueConfig{})
	pkts := make([]Packet, 100)
	for round := range 3 {
		for i := range pkts {
			pkts[i] = Packet{Size: int32(100 + i), Class: 1}
			if res, _ := q.enqueue(0, &pkts[i], false, false, q.lines); res != admitted {
				t.Fatal("refused")
			}
		}
		if len(q.s) != 128 {
			t.Fatalf("round %d: slab of %d slots for 100 packets, want 128", round, len(q.s))
		}
		for i := range pkts {
			if p := deq(q); p != &pkts[i] {
				t.Fatalf("round %d: packet %d out of order", round, i)
			}
		}
		if deq(q) != nil || q.bytes != 0 || !q.empty() {
			t.Fatalf("round %d: queue not empty after draining", round)
		}
		free := 0
		for x := q.free; x >= 0; x = q.s[x].next {
			free++
		}
		if free != len(q.s) {
			t.Fatalf("round %d: %d of %d slots free", round, free, len(q.s))
		}
	}
	k := q.alloc(&pkts[0], 1)
	q.release(k)
	if q.alloc(&pkts[1], 1) != k {
		t.Error("the slot freed last is not reused first")
	}
}
