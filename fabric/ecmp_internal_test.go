package fabric

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestECMPSeedMatchesBuilt: ECMPSeeds predicts every switch's seed of a built network, own
// and shared, for several run seeds, so ECMPChoice over a topology's route tables gives the
// packets' paths without building the fabric.
func TestECMPSeedMatchesBuilt(t *testing.T) {
	for _, seed := range []uint64{0, 1, 7, 1 << 40} {
		for _, shared := range []bool{false, true} {
			s := sim.New(seed)
			n := New(s)
			for i := range 6 {
				kind := Switch
				if i < 2 {
					kind = Host
				}
				if _, err := n.AddNode(fmt.Sprint("n", i), kind, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			n.SetECMPSharedSeed(shared)
			p := &Packet{Proto: ProtoRoCE, Src: 0, Dst: 1, SrcPort: 0xC123, DstPort: 4791}
			seeds := ECMPSeeds(seed, len(n.Nodes), shared)
			for id := range n.Nodes {
				if got, want := seeds[id], n.Nodes[id].seed; got != want {
					t.Errorf("seed %d shared %v node %d: ECMPSeed %#x, built %#x", seed, shared, id, got, want)
				}
				if a, b := ECMPChoice(n.Nodes[id].seed, p, 8), n.ECMPIndex(NodeID(id), p, 8); a != b {
					t.Errorf("ECMPChoice %d, ECMPIndex %d", a, b)
				}
			}
		}
	}
}
