package roce

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestHoldGrowsWithFanIn sweeps the sources with data outstanding into one responder NIC port
// (1..64, one or two QPs each) and the cap (none, 15): the hole hold is WithReorder's plus
// WithReorderFanIn's term per source beyond the first (QPs of one source counting once), up to
// the cap; a hole is NAKed at that deadline, not before; the hold falls back as the other
// transfers complete; a receiver that shares no FanIn keeps the fixed hold.
func TestHoldGrowsWithFanIn(t *testing.T) {
	const hold, per = 40 * sim.Microsecond, 30 * sim.Microsecond
	cfg := Config{}.WithReorder(64, hold)
	for _, capN := range []int{0, 15} {
		for _, perSrc := range []int{1, 2} {
			for _, n := range []int{1, 2, 4, 8, 16, 64} {
				t.Run(fmt.Sprintf("cap%d/qps%d/sources%d", capN, perSrc, n), func(t *testing.T) {
					c := cfg.WithReorderFanIn(per, capN)
					var f FanIn
					var rs []*Receiver
					for s := 0; s < n; s++ {
						for k := 0; k < perSrc; k++ {
							r, err := NewReceiver(c, Conn{QP: uint32(len(rs))})
							if err != nil {
								t.Fatal(err)
							}
							r.ShareFanIn(&f, int32(s))
							rs = append(rs, r)
						}
					}
					const msg = 3 * 4096
					for _, r := range rs {
						r.OnData(0, &Header{Kind: Data, PSN: 0, Seg: SegFirst, Len: 4096, MsgBytes: msg}, false)
					}
					if f.Sources() != n {
						t.Fatalf("fan-in %d sources, want %d", f.Sources(), n)
					}
					eff := n
					if capN > 0 {
						eff = min(n, capN)
					}
					want := hold + sim.Time(eff-1)*per
					r := rs[0]
					const at = 5 * sim.Microsecond
					r.OnData(at, &Header{Kind: Data, PSN: 2, Seg: SegLast, Len: 4096}, false) // PSN 1 missing
					if d := r.HoleDeadline(); d != at+want {
						t.Fatalf("deadline %v, want %v", d, at+want)
					}
					r.OnHoleTimer(at + want - 1)
					if r.Stats.HoleNAKs != 0 {
						t.Fatalf("NAKed %v before the hold ran out", want-1)
					}
					// The other sources complete: the hold falls back to the fixed one.
					for _, o := range rs[perSrc:] {
						o.OnData(at, &Header{Kind: Data, PSN: 1, Seg: SegMiddle, Len: 4096}, false)
						o.OnData(at, &Header{Kind: Data, PSN: 2, Seg: SegLast, Len: 4096}, false)
					}
					if f.Sources() != 1 {
						t.Fatalf("after the others completed: %d sources, want 1", f.Sources())
					}
					if d := r.HoleDeadline(); d != at+hold {
						t.Fatalf("deadline after the others completed %v, want %v", d, at+hold)
					}
					r.OnHoleTimer(at + hold)
					if r.Stats.HoleNAKs != 1 {
						t.Fatalf("hole NAKs %d at the fixed hold, want 1", r.Stats.HoleNAKs)
					}
					r.OnData(at+hold, &Header{Kind: Data, PSN: 1, Seg: SegMiddle, Len: 4096}, false)
					for _, o := range rs[1:perSrc] {
						o.OnData(at, &Header{Kind: Data, PSN: 1, Seg: SegMiddle, Len: 4096}, false)
						o.OnData(at, &Header{Kind: Data, PSN: 2, Seg: SegLast, Len: 4096}, false)
					}
					if f.Sources() != 0 {
						t.Errorf("all placed: %d sources, want 0", f.Sources())
					}
				})
			}
		}
	}
	// No FanIn shared: the fixed hold whatever the configuration.
	r, err := NewReceiver(cfg.WithReorderFanIn(per, 0), Conn{QP: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.OnData(0, &Header{Kind: Data, PSN: 1, Seg: SegMiddle, Len: 4096}, false)
	if d := r.HoleDeadline(); d != hold {
		t.Errorf("unshared: deadline %v, want %v", d, hold)
	}
}
