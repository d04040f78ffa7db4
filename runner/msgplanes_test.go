package runner

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestMsgLoops checks how many chunk messages one logical channel posts to a peer at once
// (package collective's loops) for each algorithm, and the logical channels.
func TestMsgLoops(t *testing.T) {
	const k = 512 << 10 // the default chunk
	for _, c := range []struct {
		name         string
		op           collective.Collective
		algo         collective.Algorithm
		ranks        int
		bytes        int64
		channels     int
		inner, outer int
		chans, loops int
	}{
		{"ring one chunk per step", collective.AllReduce, collective.Ring, 16, 4 << 20, 1, 0, 0, 1, 1},
		{"ring 4 loops", collective.AllReduce, collective.Ring, 16, 32 << 20, 1, 0, 0, 1, 4},
		{"ring 4 channels", collective.AllReduce, collective.Ring, 16, 32 << 20, 4, 0, 0, 4, 1},
		{"ring all-gather", collective.AllGather, collective.Ring, 16, 16 << 20, 1, 0, 0, 1, 2},
		{"broadcast chain", collective.Broadcast, collective.Ring, 16, 4 << 20, 1, 0, 0, 1, 8},
		{"tree: 2 logical channels", collective.AllReduce, collective.Tree, 16, 32 << 20, 1, 0, 0, 2, 32},
		{"halving-doubling", collective.AllReduce, collective.HalvingDoubling, 16, 32 << 20, 1, 0, 0, 1, 4},
		{"halving-doubling 12 ranks (p 8)", collective.AllReduce, collective.HalvingDoubling, 12, 32 << 20, 1, 0, 0, 1, 8},
		{"hierarchical 4x4", collective.AllReduce, collective.Hierarchical, 16, 32 << 20, 1, 4, 4, 1, 16},
		{"pairwise per-peer share", collective.AllToAll, collective.Pairwise, 16, 4 << 20, 1, 0, 0, 1, 1},
		{"small: at least one", collective.AllReduce, collective.Ring, 16, 1024, 1, 0, 0, 1, 1},
	} {
		sp := collective.NewSpec(c.op, c.ranks, c.bytes)
		sp.Algo, sp.ChunkBytes, sp.Channels, sp.Inner, sp.Outer = c.algo, k, c.channels, c.inner, c.outer
		ch, l := msgLoops(sp)
		if ch != c.chans || l != c.loops {
			t.Errorf("%s: %d channels x %d loops; want %d x %d", c.name, ch, l, c.chans, c.loops)
		}
	}
}

// TestMsgPlanes: under RoCE on 4 planes a collective connection's flow keeps the paths of
// the planes its messages use at packet level (min(planes, channels x loops) of them over the
// connections), under MRC every plane; a key no collective registered keeps every plane.
func TestMsgPlanes(t *testing.T) {
	for _, c := range []struct {
		kind   string
		bytes  string
		chans  int
		qps    int // transport.roce.qps_per_peer
		planes int // distinct planes over the channels' paths
		paths  int // paths (QPs) over the channels
	}{
		{"roce", "4MiB", 1, 1, 1, 1},
		{"roce", "32MiB", 1, 1, 4, 4}, // 4 loops
		{"roce", "16MiB", 1, 1, 2, 2}, // 2 loops
		{"roce", "4MiB", 2, 1, 2, 2},  // one loop on each of 2 channels
		{"roce", "4MiB", 1, 2, 1, 1},  // one message: one QP of the 8
		{"roce", "32MiB", 1, 2, 4, 4}, // 4 messages: QPs 0-3, one per plane
		{"mrc", "4MiB", 1, 1, 0, 0},
	} {
		name := fmt.Sprintf("%s %s %d channel(s) %d QP(s) per peer", c.kind, c.bytes, c.chans, c.qps)
		tr := c.kind
		if c.kind == "roce" {
			tr = fmt.Sprintf("roce, roce: {qps_per_peer: %d}", c.qps)
		}
		y := fmt.Sprintf("topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100Gbps}}\ntransport: {kind: %s}\nrun: {engine: flow}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: %s, channels: %d}]}\n", tr, c.bytes, c.chans)
		sc, l := parseDescribe(t, y)
		base, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := newMsgRouter(base)
		if c.kind == "mrc" {
			if r.msgPlanes != nil {
				t.Errorf("%s: MRC sprays every message over every plane; msgPlanes set", name)
			}
			continue
		}
		sp, _, err := sc.Workload.Collectives[0].CollectiveSpec()
		if err != nil {
			t.Fatal(err)
		}
		if sp, err = flowSpec(sp); err != nil {
			t.Fatal(err)
		}
		comm, err := collective.RangeComm(0, 16, 1)
		if err != nil {
			t.Fatal(err)
		}
		r.setMsgPlanes(sp, comm)
		key0 := commKey(comm)
		used := map[int]bool{}
		n := 0
		for ch := range c.chans {
			paths, _, err := r.Paths(0, 15, key0+uint64(ch), nil)
			if err != nil {
				t.Fatal(err)
			}
			n += len(paths)
			for _, p := range paths {
				used[r.planeOf(p.Links[0])] = true
			}
		}
		if len(used) != c.planes || n != c.paths {
			t.Errorf("%s: %d paths on %d planes %v; want %d on %d", name, n, len(used), used, c.paths, c.planes)
		}
		all, _, err := r.Paths(0, 15, key0+99, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range all {
			seen[r.planeOf(p.Links[0])] = true
		}
		if len(seen) != 4 || len(all) != 4*c.qps {
			t.Errorf("%s: an unregistered key's %d paths are on %d planes; want %d on all 4", name, len(all), len(seen), 4*c.qps)
		}
	}
}
