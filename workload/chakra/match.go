package chakra

import (
	"fmt"
	"sort"

	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Group is a process group of a trace: the ranks whose collectives name it (pg_name), or
// every rank for the collectives that name none, and its collectives in order.
type Group struct {
	Name    string
	Members []int // trace ranks, ascending; member m is rank m of the collectives' communicator
	Colls   []Coll
}

// Coll is one collective of a group: the k-th collective node of the group in every member's
// file, in file order (Nodes[m] is member m's node index).
type Coll struct {
	Op    collective.Collective
	Bytes int64
	Nodes []int32
}

// P2P is one point-to-point message: the k-th send from Src to Dst with Tag in Src's file
// matched with the k-th receive at Dst from Src with Tag in Dst's file.
type P2P struct {
	Src, Dst           int
	Tag                int64
	Bytes              int64
	SendNode, RecvNode int32
}

// Ref says what a communication node belongs to: Group and Seq (its Coll) for a collective,
// P2P for a send or receive; -1 in the fields that do not apply.
type Ref struct {
	Group, Seq, P2P int32
}

// Plan is a trace's communication, matched across ranks: every collective node in a group's
// Coll and every send and receive in a P2P. Refs[r][i] is rank r's node i's.
type Plan struct {
	Groups []Group
	P2Ps   []P2P
	Refs   [][]Ref
}

// Match pairs the trace's communication nodes across ranks. A group's members must each
// have the same number of its collectives, the k-th of each the same operation and
// comm_size; every send must find its receive and the reverse, with the same comm_size.
// Peers must be ranks of the trace other than the node's own. Errors name the files and
// node ids.
func (t *Trace) Match() (*Plan, error) {
	n := len(t.Ranks)
	p := &Plan{Refs: make([][]Ref, n)}
	// Groups: members are the ranks that name them.
	gidx := map[string]int{}
	type seq struct{ nodes []int32 }
	var lists []map[int]*seq // per group: member rank -> its collective nodes in order
	for r, rk := range t.Ranks {
		p.Refs[r] = make([]Ref, len(rk.Nodes))
		for i := range rk.Nodes {
			p.Refs[r][i] = Ref{-1, -1, -1}
			nd := &rk.Nodes[i]
			switch {
			case nd.Type == etpb.NodeType_COMM_COLL_NODE:
				g, ok := gidx[nd.Group]
				if !ok {
					g = len(p.Groups)
					gidx[nd.Group] = g
					p.Groups = append(p.Groups, Group{Name: nd.Group})
					lists = append(lists, map[int]*seq{})
				}
				s := lists[g][r]
				if s == nil {
					s = &seq{}
					lists[g][r] = s
				}
				s.nodes = append(s.nodes, int32(i))
			case nd.IsComm():
				if nd.Peer < 0 || nd.Peer >= n || nd.Peer == r {
					return nil, fmt.Errorf("%s: node id %d (%q): peer rank %d; allowed a rank of the trace in [0, %d) other than %d", rk.File, nd.ID, nd.Name, nd.Peer, n, r)
				}
			}
		}
	}
	// Sort groups by name for a deterministic order whatever the files' order.
	order := make([]int, len(p.Groups))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return p.Groups[order[a]].Name < p.Groups[order[b]].Name })
	groups := make([]Group, len(order))
	for gi, g := range order {
		grp := p.Groups[g]
		if grp.Name == "" {
			for r := 0; r < n; r++ {
				grp.Members = append(grp.Members, r)
			}
		} else {
			for r := range lists[g] {
				grp.Members = append(grp.Members, r)
			}
			sort.Ints(grp.Members)
		}
		count := -1
		first := -1
		for _, r := range grp.Members {
			k := 0
			if s := lists[g][r]; s != nil {
				k = len(s.nodes)
			}
			if count < 0 {
				count, first = k, r
			} else if k != count {
				return nil, fmt.Errorf("chakra: process group %q: %s has %d collectives, %s has %d; every member must run the same collectives", grpLabel(grp.Name), t.Ranks[first].File, count, t.Ranks[r].File, k)
			}
		}
		for k := 0; k < count; k++ {
			c := Coll{Nodes: make([]int32, len(grp.Members))}
			for m, r := range grp.Members {
				i := lists[g][r].nodes[k]
				nd := &t.Ranks[r].Nodes[i]
				if m == 0 {
					c.Op, c.Bytes = nd.Comm, nd.Bytes
				} else if nd.Comm != c.Op || nd.Bytes != c.Bytes {
					r0 := grp.Members[0]
					n0 := &t.Ranks[r0].Nodes[c.Nodes[0]]
					return nil, fmt.Errorf("chakra: process group %q collective %d: %s node id %d is %s of %d bytes, %s node id %d is %s of %d bytes; the k-th collective must match on every member",
						grpLabel(grp.Name), k, t.Ranks[r0].File, n0.ID, c.Op, c.Bytes, t.Ranks[r].File, nd.ID, nd.Comm, nd.Bytes)
				}
				c.Nodes[m] = i
				p.Refs[r][i].Group, p.Refs[r][i].Seq = int32(gi), int32(k)
			}
			grp.Colls = append(grp.Colls, c)
		}
		groups[gi] = grp
	}
	p.Groups = groups
	// Point to point: match the k-th send (src, dst, tag) with the k-th receive.
	type key struct {
		src, dst int
		tag      int64
	}
	sends, recvs := map[key][]int32{}, map[key][]int32{}
	var keys []key
	for r, rk := range t.Ranks {
		for i := range rk.Nodes {
			nd := &rk.Nodes[i]
			switch nd.Type {
			case etpb.NodeType_COMM_SEND_NODE:
				k := key{r, nd.Peer, nd.Tag}
				if _, ok := sends[k]; !ok {
					if _, ok := recvs[k]; !ok {
						keys = append(keys, k)
					}
				}
				sends[k] = append(sends[k], int32(i))
			case etpb.NodeType_COMM_RECV_NODE:
				k := key{nd.Peer, r, nd.Tag}
				if _, ok := sends[k]; !ok {
					if _, ok := recvs[k]; !ok {
						keys = append(keys, k)
					}
				}
				recvs[k] = append(recvs[k], int32(i))
			}
		}
	}
	sort.Slice(keys, func(a, b int) bool {
		x, y := keys[a], keys[b]
		if x.src != y.src {
			return x.src < y.src
		}
		if x.dst != y.dst {
			return x.dst < y.dst
		}
		return x.tag < y.tag
	})
	for _, k := range keys {
		s, rv := sends[k], recvs[k]
		if len(s) != len(rv) {
			return nil, fmt.Errorf("chakra: %d send(s) from rank %d to rank %d with tag %d (%s) but %d receive(s) (%s)%s; every send needs its receive",
				len(s), k.src, k.dst, k.tag, t.Ranks[k.src].File, len(rv), t.Ranks[k.dst].File, unmatched(t, k.src, s, k.dst, rv))
		}
		for j := range s {
			sn, rn := &t.Ranks[k.src].Nodes[s[j]], &t.Ranks[k.dst].Nodes[rv[j]]
			if sn.Bytes != rn.Bytes {
				return nil, fmt.Errorf("chakra: %s node id %d sends %d bytes to rank %d (tag %d) but %s node id %d receives %d", t.Ranks[k.src].File, sn.ID, sn.Bytes, k.dst, k.tag, t.Ranks[k.dst].File, rn.ID, rn.Bytes)
			}
			id := int32(len(p.P2Ps))
			p.P2Ps = append(p.P2Ps, P2P{Src: k.src, Dst: k.dst, Tag: k.tag, Bytes: sn.Bytes, SendNode: s[j], RecvNode: rv[j]})
			p.Refs[k.src][s[j]].P2P = id
			p.Refs[k.dst][rv[j]].P2P = id
		}
	}
	return p, nil
}

// unmatched names the first node left without a partner.
func unmatched(t *Trace, src int, s []int32, dst int, rv []int32) string {
	if len(s) > len(rv) {
		return fmt.Sprintf("; the first unmatched is send node id %d", t.Ranks[src].Nodes[s[len(rv)]].ID)
	}
	return fmt.Sprintf("; the first unmatched is receive node id %d", t.Ranks[dst].Nodes[rv[len(s)]].ID)
}

func grpLabel(name string) string {
	if name == "" {
		return "(all ranks)"
	}
	return name
}
