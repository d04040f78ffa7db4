package runner

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// walkHop is one local port of a node as hashedWalk reads it: 16 bytes, so a hop of a walk
// reads one small entry instead of the link's topo.Link (80 bytes) and the topology's
// LinkOf and Peer.
type walkHop struct {
	// d is the directed link leaving the node by the port (2k from link k's A end, 2k+1
	// from its B end); -1 when the port is unconnected (LinkOf or Peer not ok).
	d int32
	// peer is the node at the port's far end.
	peer int32
	// lat is what crossing the link adds to a walk's one-way latency: the link's Delay, and
	// for a switch's port also its store and forward (flowRouter.storeForward): a walk
	// leaves a host only by its first link, whose serialisation is the transfer itself.
	lat sim.Time
}

// walkSwitch is one switch's forwarding table and ECMP seed as hashedWalk reads them, in
// one 64-byte cache line. A table whose entries are a regular run of destination host
// ranges, each with a contiguous group of ports at a fixed stride (every table of a Clos or
// fat-tree, topo.Layout.Routes), is held as that run: entry i covers hosts [lo + i*width,
// lo + (i+1)*width), the last cut at hi, with ports base + i*stride .. + size-1, and Up is
// ports upLo .. upLo + upN - 1. Any other table keeps its fabric.RouteTable (table >= 0), looked up as the
// fabric does.
type walkSwitch struct {
	seed               uint64 // the switch's ECMP hash seed (fabric.ECMPSeeds)
	first, ports       int32  // its ports' entries: walkTables.hops[first : first+ports]
	lo, width, hi      int32  // the regular run of entries: hosts [lo, hi), width each
	base, stride, size int32  // entry i's group: ports base + i*stride + [0, size)
	upLo, upN          int32  // the Up group: ports upLo + [0, upN); upN 0: none
	table              int32  // >= 0: the table is irregular, walkTables.tables[table]
	tier, down         int32  // on a layout (walkTables.lay): its tier, its down count
	_                  [4]byte
}

// walkTables is what hashedWalk walks: every node's ports (walkHop), every switch's
// forwarding table (walkSwitch), both built once from the topology (buildWalkTables).
//
// On a Clos or fat-tree whose ports follow layoutRule, lay is set and hops is nil: a hop is
// computed (layoutHop: the layout's LinkOf and Peer, arithmetic on its dimensions, and
// layLat) instead of read from a table of a random 16 bytes per hop (67 MB at 131,072 GPUs
// on 8 planes, one cache miss per hop).
type walkTables struct {
	lay      *topo.Layout
	layLat   [4][2]sim.Time // [tier + 1][0 down, 1 up]: what a hop adds on a layout
	hosts    int
	hostPort []int32             // host h's ports are hops[hostPort[h] : hostPort[h+1]]
	hops     []walkHop           // every node's ports, node by node
	sw       []walkSwitch        // switch n's at sw[n - hosts]
	tables   []fabric.RouteTable // the irregular tables
}

// buildWalkTables builds the walk tables of r's topology: every port of every node (ports
// numbered up to the highest local port a link of Topology.Links uses, each read through
// LinkOf and Peer) and every switch's table (Topology.Routes; a switch whose table is an
// error is left without routes, as hashedWalk stops there). seeds are the nodes' ECMP seeds.
// On a Clos or fat-tree (*topo.Layout) whose ports pass layoutRule no port table is kept
// (walkTables.lay).
func (r *flowRouter) buildWalkTables(seeds []uint64) *walkTables {
	hosts, nodes := r.t.NumHosts(), r.t.NumNodes()
	nports := make([]int32, nodes)
	for _, l := range r.links {
		for _, e := range [2]topo.Endpoint{l.A, l.B} {
			if e.Node >= 0 && e.Node < nodes && e.Port >= 0 {
				nports[e.Node] = max(nports[e.Node], int32(e.Port+1))
			}
		}
	}
	w := &walkTables{hosts: hosts, hostPort: make([]int32, hosts+1), sw: make([]walkSwitch, nodes-hosts)}
	total := 0
	for n := range nodes {
		if n < hosts {
			w.hostPort[n+1] = int32(total) + nports[n]
		} else {
			s := &w.sw[n-hosts]
			s.seed, s.first, s.ports = seeds[n], int32(total), nports[n]
			s.table = -1
			if rt, err := r.t.Routes(n); err != nil {
				s.width = 1 // no entries, no Up: no route
			} else if !s.regular(&rt) {
				s.table = int32(len(w.tables))
				w.tables = append(w.tables, rt)
			}
		}
		total += int(nports[n])
	}
	if l, ok := r.t.(*topo.Layout); ok && r.layoutRule(w, l, nports) {
		return w
	}
	w.hops = make([]walkHop, 0, total)
	for n := range nodes {
		for p := range int(nports[n]) {
			w.hops = append(w.hops, r.portHop(n, p))
		}
	}
	return w
}

// portHop is the walkHop of local port p of node n, read through the topology.
func (r *flowRouter) portHop(n, p int) walkHop {
	h := walkHop{d: -1}
	k, ok := r.t.LinkOf(n, p)
	peer, ok2 := r.t.Peer(n, p)
	if ok && ok2 {
		h.d = int32(2 * k)
		if r.links[k].A.Node != n {
			h.d++
		}
		h.peer = int32(peer.Node)
		h.lat = r.links[k].Delay
		if n >= r.t.NumHosts() {
			h.lat += r.storeForward(k)
		}
	}
	return h
}

// layoutRule reports whether every port of Clos or fat-tree l (nports[n] of node n) follows
// the rule layoutHop computes its walkHop by, and sets the rule's numbers in w and its
// switches: a switch's ports below its down count lead down (the switch is the link's B
// end), the others up (its A end), a host's every port up; and what a link adds to the
// latency is one value per tier of the node it leaves and direction (the links of a level
// share their rate and delay, as topo.Layout builds them). Every port is compared with
// portHop, so a layout the rule does not fit keeps its port table.
func (r *flowRouter) layoutRule(w *walkTables, l *topo.Layout, nports []int32) (ok bool) {
	hosts := w.hosts
	w.lay = l
	defer func() {
		if !ok {
			w.lay = nil
		}
	}()
	var seen [4][2]bool
	var hops []walkHop // node n's ports, through the topology
	for n := range len(nports) {
		hops = hops[:0]
		for p := range int(nports[n]) {
			hops = append(hops, r.portHop(n, p))
		}
		tier, down := -1, 0
		if n >= hosts {
			_, t, _, found := l.Locate(n)
			if !found {
				return false
			}
			tier = t
			// The down count: the ports up to the last one that leads down.
			for p, h := range hops {
				if h.d >= 0 && h.d%2 == 1 {
					down = p + 1
				}
			}
			w.sw[n-hosts].tier, w.sw[n-hosts].down = int32(tier), int32(down)
		}
		for p, want := range hops {
			if want.d < 0 {
				continue // unconnected: layoutHop asks the layout the same
			}
			up := 0
			if p >= down {
				up = 1
			}
			t := &w.layLat[tier+1][up]
			if !seen[tier+1][up] {
				*t, seen[tier+1][up] = want.lat, true
			}
			if got := w.layoutHop(n, p, tier, down); got != want {
				return false
			}
		}
	}
	return true
}

// layoutHop is the walkHop of local port p of node n, of tier tier (-1: a host) and down
// count down (layoutRule), on the layout w.lay.
func (w *walkTables) layoutHop(n, p, tier, down int) walkHop {
	k, ok := w.lay.LinkOf(n, p)
	peer, ok2 := w.lay.Peer(n, p)
	if !ok || !ok2 {
		return walkHop{d: -1}
	}
	if p < down {
		return walkHop{d: int32(2*k + 1), peer: int32(peer.Node), lat: w.layLat[tier+1][0]}
	}
	return walkHop{d: int32(2 * k), peer: int32(peer.Node), lat: w.layLat[tier+1][1]}
}

// regular sets s's regular run from rt and reports whether rt is one (walkSwitch): its
// entries back to back at one width, each a contiguous group of one size at one stride,
// the last possibly cut short (topo.Layout.Routes cuts the last range at the last host),
// and Up contiguous.
func (s *walkSwitch) regular(rt *fabric.RouteTable) bool {
	contiguous := func(ps []uint16) bool {
		for i := 1; i < len(ps); i++ {
			if int(ps[i]) != int(ps[0])+i {
				return false
			}
		}
		return true
	}
	if !contiguous(rt.Up) {
		return false
	}
	if len(rt.Up) > 0 {
		s.upLo, s.upN = int32(rt.Up[0]), int32(len(rt.Up))
	}
	e := rt.Entries
	s.width = 1
	if len(e) == 0 {
		return true
	}
	s.lo, s.width = e[0].HostLo, e[0].HostHi-e[0].HostLo
	if s.width <= 0 || len(e[0].Ports) == 0 {
		return false
	}
	s.base, s.size = int32(e[0].Ports[0]), int32(len(e[0].Ports))
	if len(e) > 1 && len(e[1].Ports) > 0 {
		s.stride = int32(e[1].Ports[0]) - s.base
	}
	for i, x := range e {
		lo := s.lo + int32(i)*s.width
		if x.HostLo != lo || !contiguous(x.Ports) || int32(len(x.Ports)) != s.size || int32(x.Ports[0]) != s.base+int32(i)*s.stride {
			return false
		}
		if x.HostHi != lo+s.width && (i != len(e)-1 || x.HostHi < lo+1 || x.HostHi > lo+s.width) {
			return false
		}
	}
	s.hi = e[len(e)-1].HostHi
	return true
}

// routeTable is flowRouter's route cache: an open-addressing hash table of routeKey to
// routeVal, linear probing, at most half full. A lookup reads one 32-byte slot (two per
// cache line) where a Go map reads its directory, its table's control word and the slot
// (the cache's lookups were 4.5 s of a 131,072-GPU RoCE step, train-405b-131k-roce,
// mostly misses: the 2.6 million one-shot routes of the gradient collectives). A nil table
// holds nothing, as does a zero one.
type routeTable struct {
	slots []routeSlot // len a power of two
	n     int         // routes held
}

// routeSlot is one slot of a routeTable: empty while paths is 0 (a route has at least one
// path).
type routeSlot struct {
	key      uint64
	src, dst int32
	v        routeVal
}

// routeHash is the slot index of k's probe sequence's start in a table of mask + 1 slots.
func routeHash(k routeKey, mask int) int {
	return int(mix(k.key*0x9e3779b97f4a7c15^uint64(uint32(k.src))<<32^uint64(uint32(k.dst))) & uint64(mask))
}

// get returns the route stored under k.
func (t *routeTable) get(k routeKey) (routeVal, bool) {
	if t == nil || len(t.slots) == 0 {
		return routeVal{}, false
	}
	mask := len(t.slots) - 1
	for i := routeHash(k, mask); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v.paths == 0 {
			return routeVal{}, false
		}
		if s.key == k.key && s.src == k.src && s.dst == k.dst {
			return s.v, true
		}
	}
}

// put stores v (v.paths > 0) under k, replacing what was there.
func (t *routeTable) put(k routeKey, v routeVal) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]routeSlot, max(1024, 2*len(old)))
		t.n = 0
		for i := range old {
			if old[i].v.paths != 0 {
				t.put(routeKey{old[i].src, old[i].dst, old[i].key}, old[i].v)
			}
		}
	}
	mask := len(t.slots) - 1
	for i := routeHash(k, mask); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v.paths == 0 {
			*s = routeSlot{key: k.key, src: k.src, dst: k.dst, v: v}
			t.n++
			return
		}
		if s.key == k.key && s.src == k.src && s.dst == k.dst {
			s.v = v
			return
		}
	}
}

// u64Table is a map of uint64 to uint64 in one open-addressing array of 16-byte slots,
// linear probing, at most half full (key 0 held apart, a slot's 0 key marking it empty):
// the router's per-key records (flowRouter.owners) and the training backend's groups
// (trainFlowBackend.groups), looked up on every route and launch, where a Go map's lookup
// reads its directory, its table's control word and the slot. The zero table is empty.
type u64Table struct {
	slots   []u64Slot // len a power of two (or 0)
	n       int       // keys held in slots
	zero    uint64    // the value of key 0
	hasZero bool
}

// u64Slot is one slot of a u64Table.
type u64Slot struct{ k, v uint64 }

// get returns the value of key k.
func (t *u64Table) get(k uint64) (uint64, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := mix(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.k == k {
			return s.v, true
		}
		if s.k == 0 {
			return 0, false
		}
	}
}

// put sets key k's value to v.
func (t *u64Table) put(k, v uint64) {
	if k == 0 {
		t.zero, t.hasZero = v, true
		return
	}
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]u64Slot, max(64, 2*len(old)))
		t.n = 0
		for _, s := range old {
			if s.k != 0 {
				t.put(s.k, s.v)
			}
		}
	}
	mask := uint64(len(t.slots) - 1)
	for i := mix(k) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.k == k {
			s.v = v
			return
		}
		if s.k == 0 {
			*s = u64Slot{k, v}
			t.n++
			return
		}
	}
}

// len returns the number of keys held.
func (t *u64Table) len() int {
	if t.hasZero {
		return t.n + 1
	}
	return t.n
}
