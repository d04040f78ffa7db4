package fabric

import (
	"math"
	"testing"
)

// newQueue returns a port queue with cfg (defaults filled) and the packets it hands out.
func newQueue(t *testing.T, cfg QueueConfig) *portQueue {
	t.Helper()
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("queue"); err != nil {
		t.Fatal(err)
	}
	q := &portQueue{}
	q.init(cfg)
	return q
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
			if res, _ := tmpl.enqueue(0, &Packet{Size: int32(depth)}, false, false); res != admitted {
				t.Fatal("filler refused")
			}
		}
		// Each probe arrives at a copy of the queue holding exactly depth bytes.
		marked, counted := 0, int64(0)
		for range draws {
			q := *tmpl
			// Deep copy: the class queues and stats are slices shared with tmpl.
			q.classes = append([]fifo(nil), tmpl.classes...)
			q.stats = append([]QueueStats(nil), tmpl.stats...)
			p := &Packet{Size: 64, Flags: ECT}
			if res, _ := q.enqueue(0, p, false, false); res != admitted {
				t.Fatal("probe refused")
			}
			tmpl.rng = q.rng // the copy advanced the port's marking stream
			if p.Flags&CE != 0 {
				marked++
			}
			counted += q.stats[0].CEMarks
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
			q.enqueue(0, &data[i], false, false)
		}
		for i := range hdrs {
			hdrs[i] = Packet{Size: HeaderBytes, Flags: Trimmed}
			q.enqueue(0, &hdrs[i], false, false)
		}
		var hdrBytes, dataBytes, dataPkts int64
		for q.hdr.n > 0 && q.classes[0].n > 0 {
			p := q.dequeue(0)
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
		q.enqueue(0, &Packet{Size: 4096}, false, false)
	}
	if p := q.dequeue(0); p.Size != 4096 {
		t.Fatal("data-only queue did not send data")
	}
	q.enqueue(0, &Packet{Size: HeaderBytes, Flags: Trimmed}, false, false)
	if p := q.dequeue(0); p.Flags&Trimmed == 0 {
		t.Error("data went before the waiting header")
	}
	// 200 headers: 64 per turn (4 KiB, the header quantum), then one data packet.
	for range 200 {
		q.enqueue(0, &Packet{Size: HeaderBytes, Flags: Trimmed}, false, false)
	}
	var order []bool // true = header
	for q.hdr.n > 0 && q.classes[0].n > 0 {
		order = append(order, q.dequeue(0).Flags&Trimmed != 0)
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
	trim.enqueue(0, &Packet{Size: 4096, Class: 1}, false, false) // class 1 full
	p := &Packet{Size: HeaderBytes, Class: 1, Flags: Trimmed}
	if res, _ := trim.enqueue(0, p, true, false); res != admittedTrimmed || trim.hdr.n != 1 {
		t.Errorf("trimming port: %v, header queue %d", res, trim.hdr.n)
	}
	if p.Flags&TrimmedLastHop != 0 || trim.stats[1].Trims != 0 {
		t.Errorf("re-trimmed: flags %b, Trims %d", p.Flags, trim.stats[1].Trims)
	}
	plain := newQueue(t, QueueConfig{})
	if res, _ := plain.enqueue(0, &Packet{Size: HeaderBytes, Class: 1, Flags: Trimmed}, false, false); res != admitted || plain.classes[1].n != 1 {
		t.Errorf("non-trimming port: %v, class 1 holds %d", res, plain.classes[1].n)
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
