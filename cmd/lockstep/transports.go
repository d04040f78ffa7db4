package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// The transport comparison suite (issues 19 and 20, "MRC vs RoCE vs IB vs Ethernet-AR" and
// "MRC vs UEC vs RoCE (and IB)"; docs/transport-compare.md): the same two-tier Clos and the
// same workloads (a ring all-reduce size sweep, an all-to-all, a permutation, a 7 -> 1 incast
// with a victim flow, and the permutation with a T0-T1 link failing mid-run) under every
// transport with its defaults, at packet level. TestTransportCompare runs it at
// TransportsSmall and asserts the orderings physics requires; lockstep bench transports runs
// it at TransportsLarge and prints the markdown table.

// transportCol is one column of the suite: a transport as it comes out of the box.
type transportCol struct {
	// Name labels the column (mrc, uec, roce, ethernet-ar, eth-ar-ooo, ib, ib-ar).
	Name string
	// Kind is transport.kind.
	Kind string
	// AR turns fabric.adaptive_routing on (every switch picks the least-loaded minimal
	// port per packet, with SHIELD-style local fast recovery; fabric/adaptive.go).
	AR bool
	// Block is the transport block's options besides kind ("" none), e.g. RoCE's
	// out-of-order placement.
	Block string
}

// transportCols are the suite's transports: MRC (static source-routed spraying), UEC
// (hashed spraying, REPS, NSCC), RoCE (ECMP, PFC, DCQCN), Ethernet with adaptive routing
// (RoCE's in-order go-back-N NIC on AR switches, out_of_order written off: Spectrum-X's
// switch half alone), Ethernet with adaptive routing and NIC-side out-of-order placement
// (transport.roce.out_of_order, on under adaptive routing by default: Spectrum-X as sold), InfiniBand with static routing (credits) and
// InfiniBand with adaptive routing (credits, AR, out-of-order placement, which IB turns on
// with AR by default).
func transportCols() []transportCol {
	return []transportCol{
		{"mrc", "mrc", false, ""},
		{"uec", "uec", false, ""},
		{"roce", "roce", false, ""},
		{"ethernet-ar", "roce", true, "roce: {out_of_order: {enabled: false}}"},
		{"eth-ar-ooo", "roce", true, "roce: {out_of_order: {enabled: true}}"},
		{"ib", "ib", false, ""},
		{"ib-ar", "ib", true, ""},
	}
}

// Workload kinds of the suite (transportCase.Kind).
const (
	tcAllReduce = "all_reduce"   // ring all-reduce of Bytes (one size per case)
	tcAllToAll  = "all_to_all"   // all-to-all of Bytes per rank (nccl-tests meaning)
	tcPerm      = "permutation"  // every host sends Bytes to one other
	tcIncast    = "incast"       // 7 -> 1 of Bytes each, with a victim flow of Bytes
	tcPermFail  = "perm_failure" // the permutation with p0.t0-0.up0 down at FailAt
)

// transportCase is one row group of the suite: a workload at one size.
type transportCase struct {
	// Name labels the rows (allreduce-1MiB, alltoall, permutation, incast-7to1, perm-linkdown).
	Name string
	// Kind is the workload (tcAllReduce ... tcPermFail).
	Kind string
	// Bytes is the size: the collective's S, or each flow's bytes.
	Bytes string
}

// transportsSize is one scale of the suite: the fabric and the sizes.
type transportsSize struct {
	// Hosts on a 2-tier Clos of Radix-port switches at 100 Gb/s, one plane.
	Hosts, Radix int
	// Sweep are the ring all-reduce sizes.
	Sweep []string
	// AllToAll is the all-to-all's S; Perm each permutation flow; Incast each incast and the
	// victim flow.
	AllToAll, Perm, Incast string
	// FailAt is when the T0-T1 link fails in the failure case.
	FailAt string
}

// The suite's two scales: TransportsSmall for the test (16 hosts, 4 T0s of 4 hosts, 4 T1s),
// TransportsLarge for lockstep bench transports (128 hosts, 16 T0s of 8 hosts, 8 T1s).
var (
	TransportsSmall = transportsSize{Hosts: 16, Radix: 8, Sweep: []string{"1MiB", "4MiB"},
		AllToAll: "4MiB", Perm: "4MiB", Incast: "1MiB", FailAt: "100us"}
	TransportsLarge = transportsSize{Hosts: 128, Radix: 16, Sweep: []string{"1MiB", "16MiB", "128MiB"},
		AllToAll: "16MiB", Perm: "16MiB", Incast: "4MiB", FailAt: "200us"}
)

// cases are the suite's workloads at size z, in table order.
func (z transportsSize) cases() []transportCase {
	var cs []transportCase
	for _, b := range z.Sweep {
		cs = append(cs, transportCase{"allreduce-" + b, tcAllReduce, b})
	}
	return append(cs,
		transportCase{"alltoall-" + z.AllToAll, tcAllToAll, z.AllToAll},
		transportCase{"permutation-" + z.Perm, tcPerm, z.Perm},
		transportCase{"incast-7to1-" + z.Incast, tcIncast, z.Incast},
		transportCase{"perm-linkdown-" + z.Perm, tcPermFail, z.Perm},
	)
}

// incastHosts are the incast's receiver (host 0), its seven senders (the hosts after
// receiver's T0, hosts/T0 onwards, so every sender crosses the T1s) and the victim: the last
// host (on the last T0) sending to host 1, an idle host on the receiver's T0. The victim
// shares only the T1 -> T0 0 downlinks with the incast: what slows it there is congestion
// spreading (PFC pauses, blocked credits), never its own bottleneck.
func (z transportsSize) incastHosts() (senders []int, victimSrc, victimDst int) {
	perT0 := z.Radix / 2
	for i := range 7 {
		senders = append(senders, perT0+i)
	}
	return senders, z.Hosts - 1, 1
}

// transportsYAML is case c under column t at size z: a 2-tier Clos of 100 Gb/s links with
// 500 ns hops, the transport with every default, run.seed 1.
func transportsYAML(c transportCase, t transportCol, z transportsSize) (string, error) {
	if _, err := sim.ParseSize(c.Bytes); err != nil {
		return "", fmt.Errorf("transport suite case %s: bytes: %w", c.Name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: tc-%s-%s\n", c.Name, t.Name)
	fmt.Fprintf(&b, "topology:\n  clos: {tiers: 2, planes: 1, radix: %d, hosts: %d, host_link: 100Gbps, hop_latency: 500ns}\n", z.Radix, z.Hosts)
	if t.Block != "" {
		fmt.Fprintf(&b, "transport: {kind: %s, %s}\n", t.Kind, t.Block)
	} else {
		fmt.Fprintf(&b, "transport: {kind: %s}\n", t.Kind)
	}
	if t.AR {
		b.WriteString("fabric: {adaptive_routing: {enabled: true}}\n")
	}
	switch c.Kind {
	case tcAllReduce:
		fmt.Fprintf(&b, "workload:\n  collectives:\n    - {op: all_reduce, algorithm: ring, bytes: %s}\n", c.Bytes)
	case tcAllToAll:
		fmt.Fprintf(&b, "workload:\n  collectives:\n    - {op: all_to_all, bytes: %s}\n", c.Bytes)
	case tcPerm, tcPermFail:
		fmt.Fprintf(&b, "traffic:\n  - {pattern: permutation, bytes: %s}\n", c.Bytes)
		if c.Kind == tcPermFail {
			fmt.Fprintf(&b, "faults:\n  - {at: %s, link: p0.t0-0.up0, action: down}\n", z.FailAt)
		}
	case tcIncast:
		s, vs, vd := z.incastHosts()
		ss := make([]string, len(s))
		for i, h := range s {
			ss[i] = fmt.Sprint(h)
		}
		fmt.Fprintf(&b, "traffic:\n  - {pattern: incast, receiver: 0, senders: [%s], bytes: %s}\n", strings.Join(ss, ", "), c.Bytes)
		fmt.Fprintf(&b, "  - {pattern: flows, flows: [{src: %d, dst: %d, bytes: %s}]}\n", vs, vd, c.Bytes)
	default:
		return "", fmt.Errorf("transport suite case %s: kind %q unknown", c.Name, c.Kind)
	}
	// A blackholed RoCE or IB QP waits its NCCL-default timeout (4.3 s, 1.07 s) after the
	// routes reconverge (fabric.reconvergence, 1 s): the run must outlast it.
	b.WriteString("run: {seed: 1, duration: 30s}\n")
	return b.String(), nil
}

// transportCell is one (case, transport) measurement.
type transportCell struct {
	Case transportCase
	Col  transportCol
	// TimeUs is the collective's time, or the traffic's JCT (the last transfer acknowledged).
	TimeUs float64
	// AlgBW, BusBW are the collective's nccl-tests bandwidths, GB/s (0 for traffic).
	AlgBW, BusBW float64
	// P99FCTUs is the 99th percentile of the transfers' (messages') completion times.
	P99FCTUs float64
	// SlowestGbps is the slowest transfer's payload over its completion time (traffic runs;
	// the incast's victim left out).
	SlowestGbps float64
	// VictimGbps is the victim flow's payload over its completion time (incast only).
	VictimGbps float64
	// IncastGbps is the incast receiver's payload rate: 7 x Bytes over the last incast
	// completion (incast only).
	IncastGbps float64
	// Drops are packets dropped for congestion (queue full, PFC headroom, header overflow);
	// LinkDrops those lost on a failed link (link down, no route, blackhole).
	Drops, LinkDrops int64
	// Trims, Retx are trimmed packets and data packets sent again.
	Trims, Retx int64
	// BaselineUs is the faultless twin's end and Slowdown the failure run's JCT over it
	// (failure case only).
	BaselineUs, Slowdown float64
	// QPErrors is the QPs that gave up.
	QPErrors int
	// HeaderPct is the transport's header share of a full data packet's wire bytes, percent.
	HeaderPct float64
	Err       error
}

// runTransportCell runs case c under column t at size z.
func runTransportCell(c transportCase, t transportCol, z transportsSize) transportCell {
	cell := transportCell{Case: c, Col: t}
	y, err := transportsYAML(c, t, z)
	if err != nil {
		cell.Err = err
		return cell
	}
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		cell.Err = fmt.Errorf("%s/%s: %w", c.Name, t.Name, err)
		return cell
	}
	res, err := runner.Run(sc)
	if err != nil {
		cell.Err = fmt.Errorf("%s/%s: %w", c.Name, t.Name, err)
		return cell
	}
	s := &res.Summary
	if s.Failed {
		cell.Err = fmt.Errorf("%s/%s: run failed: %s", c.Name, t.Name, s.FailureReason)
		return cell
	}
	for reason, n := range s.Drops {
		switch reason {
		case "link_down", "no_route", "blackhole":
			cell.LinkDrops += n
		default:
			cell.Drops += n
		}
	}
	cell.Trims = s.TrimmedPackets
	if tr := s.Transport; tr != nil {
		cell.Retx, cell.P99FCTUs, cell.QPErrors = tr.RetxPackets, tr.FCTP99Us, tr.QPErrors
		cell.TimeUs, cell.HeaderPct = tr.JCTUs, tr.HeaderOverheadPct
	}
	if c.Kind != tcAllReduce && c.Kind != tcAllToAll {
		_, vs, vd := z.incastHosts()
		for _, f := range res.Endpoint.Flows() {
			if f.Done == 0 || c.Kind == tcIncast && f.Src == vs && f.Dst == vd {
				continue
			}
			if g := gbps(f.Delivered, f.Done-f.Start); cell.SlowestGbps == 0 || g < cell.SlowestGbps {
				cell.SlowestGbps = g
			}
		}
	}
	switch c.Kind {
	case tcAllReduce, tcAllToAll:
		if len(s.Collectives) == 0 {
			cell.Err = fmt.Errorf("%s/%s: no collective row", c.Name, t.Name)
			return cell
		}
		r := s.Collectives[0]
		cell.TimeUs, cell.AlgBW, cell.BusBW = r.TimeUs, r.AlgBWGBps, r.BusBWGBps
	case tcIncast:
		_, vs, vd := z.incastHosts()
		var last sim.Time
		var incastBytes int64
		for _, f := range res.Endpoint.Flows() {
			if f.Done == 0 {
				continue
			}
			if f.Src == vs && f.Dst == vd {
				cell.VictimGbps = gbps(f.Delivered, f.Done-f.Start)
				continue
			}
			last = max(last, f.Done)
			incastBytes += f.Delivered
		}
		if last > 0 {
			cell.IncastGbps = gbps(incastBytes, last)
		}
	case tcPermFail:
		cell.BaselineUs = s.FaultBaselineEndUs
		if s.FaultBaselineEndUs > 0 {
			cell.Slowdown = (s.FaultBaselineEndUs + s.FaultSlowdownUs) / s.FaultBaselineEndUs
		}
	}
	if cell.TimeUs <= 0 {
		cell.Err = fmt.Errorf("%s/%s: no completion time (JCT)", c.Name, t.Name)
	}
	return cell
}

// gbps is bytes over d in Gb/s (bits per picosecond x 1,000); 0 when d is not positive.
func gbps(bytes int64, d sim.Time) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / float64(d) * 1e3
}

// runTransportSuite runs every (case, column) at size z on jobs goroutines (each cell is
// deterministic, so the order of running does not change it) and returns cells[case][col].
func runTransportSuite(z transportsSize, cols []transportCol, jobs int) [][]transportCell {
	cases := z.cases()
	cells := make([][]transportCell, len(cases))
	for i := range cells {
		cells[i] = make([]transportCell, len(cols))
	}
	forEachParallel(len(cases)*len(cols), jobs, func(k int) {
		i, j := k/len(cols), k%len(cols)
		cells[i][j] = runTransportCell(cases[i], cols[j], z)
	})
	return cells
}

// printTransports writes the suite's tables in markdown: the headline (one row per case,
// one column per transport: the collective's time or the JCT, in us) and the detail (one
// row per cell with every figure). Cells that failed show their error. It returns how many
// cells failed.
func printTransports(w io.Writer, z transportsSize, cols []transportCol, cells [][]transportCell) (failed int) {
	fmt.Fprintf(w, "Fabric: 2-tier Clos, 1 plane, %d hosts, radix %d, 100 Gb/s links, 500 ns per hop; every transport with its defaults; run.seed 1.\n\n", z.Hosts, z.Radix)
	fmt.Fprint(w, "Headline: collective time or JCT (perm-linkdown: JCT, and x its faultless twin)\n\n| case |")
	for _, c := range cols {
		fmt.Fprintf(w, " %s |", c.Name)
	}
	fmt.Fprint(w, "\n|---|")
	for range cols {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, row := range cells {
		fmt.Fprintf(w, "| %s |", row[0].Case.Name)
		for _, c := range row {
			switch {
			case c.Err != nil:
				fmt.Fprint(w, " FAILED |")
			case c.Case.Kind == tcPermFail:
				fmt.Fprintf(w, " %s (%.2fx) |", fmtUs(c.TimeUs), c.Slowdown)
			default:
				fmt.Fprintf(w, " %s |", fmtUs(c.TimeUs))
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, "\nDetail\n\n| case | transport | time | algbw GB/s | busbw GB/s | p99 FCT | slowest flow Gb/s | victim Gb/s | incast Gb/s | drops (congestion) | drops (failed link) | trims | retx | QP errors | faultless us | slowdown |\n")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	dash := func(x float64, f string) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf(f, x)
	}
	for _, row := range cells {
		for _, c := range row {
			if c.Err != nil {
				failed++
				fmt.Fprintf(w, "| %s | %s | FAILED: %s |||||||||||||\n", c.Case.Name, c.Col.Name, strings.ReplaceAll(c.Err.Error(), "|", "/"))
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %s | %s |\n",
				c.Case.Name, c.Col.Name, fmtUs(c.TimeUs), dash(c.AlgBW, "%.2f"), dash(c.BusBW, "%.2f"), fmtUs(c.P99FCTUs),
				dash(c.SlowestGbps, "%.1f"), dash(c.VictimGbps, "%.1f"), dash(c.IncastGbps, "%.1f"),
				c.Drops, c.LinkDrops, c.Trims, c.Retx, c.QPErrors, dash(c.BaselineUs, "%.1f"), dash(c.Slowdown, "%.2fx"))
		}
	}
	return failed
}

// benchTransports is lockstep bench transports: the suite at TransportsLarge, its markdown
// tables on w. It measures and does not judge (TestTransportCompare asserts the orderings);
// a cell that fails is shown as FAILED with its error and makes the command fail.
func benchTransports(w io.Writer) error {
	cols := transportCols()
	cells := runTransportSuite(TransportsLarge, cols, runtime.GOMAXPROCS(0))
	if n := printTransports(w, TransportsLarge, cols, cells); n > 0 {
		return runFailed(fmt.Errorf("bench transports: %d cells failed (see the table)", n))
	}
	return nil
}
