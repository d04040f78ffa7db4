package runner

import (
	"encoding/csv"
	"io"
	"math"
	"strconv"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// flowLinkFeed feeds a LinkSeries from the flow-level engine, so a flow-level run writes
// links.csv with the packet level's columns: each fabric port (one direction of a topology
// link, 2k from A to B and 2k+1 back, as topo.Topology.LinkPath numbers them) and interval,
// with the bytes the fluid model carried over it. The scale-up (NVLink) links are not in the
// fabric and are not listed, as at packet level.
//
// The series is read without events of its own (the run's events and times stay those of a
// run without it): the flow network calls observe whenever its fluid state is about to move
// forward (flow.Config.OnAdvance), while the link loads in effect since its last update are
// still set, so the bytes at every interval boundary passed since then are exact
// (flow.Net.LinkBytesAt).
// A bundled link (spraying over a Clos: flowroute.go's bundleLinks) carries its bundle's
// bytes in proportion to its capacity, which is how the model loads a bundle's members.
// The fluid model has no queues and drops nothing: queue_max_bytes and drops are 0 (and
// so is any queue-depth column), and a port is listed in an interval when it carried bytes.
type flowLinkFeed struct {
	ls     *LinkSeries
	net    *flow.Net
	layout topo.Topology
	links  []topo.Link
	bundle []int32 // by directed link: its bundle's flow link, -1 none; nil: no bundles
	// wire turns the fluid model's payload bytes into wire bytes (1 / payloadShare): a
	// port's tx_bytes count headers, as at packet level.
	wire float64
	buf  []float64
	// With bundles: each bundle's bytes at the last settle (by flow link) and each member's
	// share of its bundle's bytes so far. A member is credited with its share of what the
	// bundle carried since the last settle at its capacity share now, so a member whose
	// capacity falls (a failed link) keeps what it carried before: its bytes never go down.
	lastB, share []float64
}

// Bounds of a flow-level series. Its intervals: at most maxFlowLinkIntervals (when full they
// merge, so a run that long keeps 128 to 256, enough columns for the report's plots), and
// at most maxLinkCells (port, interval) cells. A fabric with so many ports that fewer than
// minFlowLinkIntervals would fit (more than 32,768 ports: 16,384 links) gets no series and
// no links.csv at flow level: its file would be hundreds of MB and its sampling a cost on
// the run.
const (
	maxFlowLinkIntervals = 256
	minFlowLinkIntervals = 32
)

// newFlowLinkSeries returns the link series of flow network net over layout's fabric (routed
// by r), its intervals 8 x sample as at packet level (newLinkSeries), doubling as it fills.
// Feed it with observe and finish. nil when the fabric has too many ports
// (minFlowLinkIntervals) or sample is not positive.
func newFlowLinkSeries(layout topo.Topology, r *flowRouter, net *flow.Net, sample sim.Time) *flowLinkFeed {
	n := 2 * len(r.links)
	if n == 0 || sample <= 0 || maxLinkCells/n < minFlowLinkIntervals {
		return nil
	}
	f := &flowLinkFeed{net: net, layout: layout, links: r.links, bundle: r.linkBundles(), wire: 1 / payloadShare(r.model)}
	ls := &LinkSeries{ports: n, interval: 8 * sample, lastTx: make([]int64, n), lastDrop: make([]int64, n), fl: f}
	ls.cap = min(maxFlowLinkIntervals, maxLinkCells/n)
	f.ls = ls
	return f
}

// observe closes every interval that ended by now (the series' boundaries up to now),
// reading the bytes at each boundary. The link loads must not have changed since the flow
// network's last update before now (true inside flow.Config.OnAdvance, and after the run).
func (f *flowLinkFeed) observe(now sim.Time) {
	ls := f.ls
	if len(ls.starts) == 0 {
		ls.sample(1) // opens interval 0
	}
	for {
		end := ls.starts[len(ls.starts)-1] + ls.interval
		if end > now {
			return
		}
		ls.sample(end)     // credits the interval with its bytes up to its end
		ls.sample(end + 1) // opens the next (merging when the series is full)
	}
}

// finish closes the series at the run's end now: the intervals up to it, and the open one
// with the bytes up to now.
func (f *flowLinkFeed) finish(now sim.Time) {
	f.observe(now)
	f.ls.finish(now)
}

// settle credits interval k with every port's bytes from the last settle to now.
func (f *flowLinkFeed) settle(now sim.Time, k int) {
	ls := f.ls
	f.buf = f.net.LinkBytesAt(now, f.buf)
	if f.bundle != nil && f.lastB == nil {
		f.lastB, f.share = make([]float64, len(f.buf)), make([]float64, ls.ports)
	}
	base := k * ls.ports
	for i := range ls.ports {
		b := f.buf[i]
		if f.bundle != nil {
			if id := f.bundle[i]; id >= 0 {
				if bc := f.net.Capacity(int(id)); bc > 0 {
					f.share[i] += max(0, f.buf[id]-f.lastB[id]) * f.net.Capacity(i) / bc
				}
				b += f.share[i]
			}
		}
		tx := int64(math.Round(b * f.wire))
		ls.tx[base+i] += max(0, tx-ls.lastTx[i])
		ls.lastTx[i] = max(ls.lastTx[i], tx)
	}
	if f.bundle != nil {
		copy(f.lastB, f.buf)
	}
}

// port returns directed link i's egress port as links.csv names it: the port's and its
// node's names, its plane (a host's NIC port: its port number) and tier (a host: -1).
func (f *flowLinkFeed) port(i int) (name, node string, plane, tier int) {
	lk := f.links[i/2]
	e := lk.A
	if i%2 == 1 {
		e = lk.B
	}
	nd, _ := f.layout.Node(e.Node)
	plane, tier = nd.Plane, nd.Tier
	if nd.Kind == topo.KindHost {
		plane, tier = e.Port, -1
	}
	return f.layout.PortName(e.Node, e.Port), f.layout.NodeName(e.Node), plane, tier
}

// writeCSV writes links.csv (LinksCSVHeader, LinkSeries.WriteCSV) for a flow-level series:
// every port that carried bytes in an interval; a column the fluid model has no value for
// (queue depths, drops) is 0.
func (f *flowLinkFeed) writeCSV(w io.Writer) error {
	ls := f.ls
	cw := csv.NewWriter(w)
	if err := cw.Write(LinksCSVHeader); err != nil {
		return err
	}
	type meta struct {
		name, node, plane, tier string
		rate                    float64
	}
	ports := make([]*meta, ls.ports) // built for the ports that carried bytes
	fl := func(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }
	row := make([]string, len(LinksCSVHeader))
	for k, start := range ls.starts {
		end := start + ls.interval
		for i := range ls.ports {
			tx := ls.tx[k*ls.ports+i]
			if tx == 0 {
				continue
			}
			m := ports[i]
			if m == nil {
				name, node, plane, tier := f.port(i)
				m = &meta{name, node, strconv.Itoa(plane), strconv.Itoa(tier), float64(f.links[i/2].Rate)}
				ports[i] = m
			}
			for c, col := range LinksCSVHeader {
				v := "0"
				switch col {
				case "start_us":
					v = fl(start.Micros())
				case "end_us":
					v = fl(end.Micros())
				case "port":
					v = m.name
				case "node":
					v = m.node
				case "plane":
					v = m.plane
				case "tier":
					v = m.tier
				case "rate_gbps":
					v = fl(m.rate / 1e9)
				case "util_pct":
					v = fl(float64(tx) * 8 / (m.rate * (end - start).Seconds()) * 100)
				case "tx_bytes":
					v = strconv.FormatInt(tx, 10)
				}
				row[c] = v
			}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
