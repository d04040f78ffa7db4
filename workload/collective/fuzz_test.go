package collective

import "testing"

// FuzzBuild: no spec makes Build panic (docs/architecture.md, Conventions, "Errors": no panics on
// any input), and whatever it accepts is a well-formed schedule that computes the right thing.
func FuzzBuild(f *testing.F) {
	f.Add(uint8(0), uint8(1), int16(8), int64(1<<16), int64(4096), int16(1), int16(0), int16(0), int16(0))
	f.Add(uint8(0), uint8(6), int16(12), int64(1000), int64(100), int16(2), int16(0), int16(0), int16(3))
	f.Add(uint8(1), uint8(3), int16(6), int64(77), int64(-1), int16(1), int16(0), int16(0), int16(0))
	f.Add(uint8(3), uint8(1), int16(5), int64(500), int64(64), int16(0), int16(7), int16(0), int16(0))
	f.Add(uint8(6), uint8(7), int16(3), int64(900), int64(128), int16(3), int16(2), int16(2), int16(0))
	f.Add(uint8(5), uint8(5), int16(9), int64(0), int64(1), int16(1), int16(0), int16(0), int16(0))
	f.Fuzz(func(t *testing.T, op, algo uint8, n int16, bytes, chunk int64, ch, root, peer, inner int16) {
		sp := Spec{Op: Collective(op % 9), Algo: Algorithm(algo % 10), Ranks: int(n), Bytes: bytes,
			ChunkBytes: chunk, Channels: int(ch), Root: int(root), Peer: int(peer), Inner: int(inner)}
		if inner != 0 {
			sp.Outer = int(n) / int(inner)
		}
		// Keep accepted schedules small enough to check.
		if n > 20 || bytes > 1<<16 || (chunk > 0 && bytes/chunk > 200) || ch > 4 {
			if _, err := sp.Resolve(); err != nil {
				return
			}
			return
		}
		s, err := Build(sp)
		if err != nil {
			return
		}
		if err := structCheck(s); err != nil {
			t.Fatalf("%+v: %v", sp, err)
		}
		if err := symCheck(s, 1); err != nil {
			t.Fatalf("%+v: %v", sp, err)
		}
	})
}
