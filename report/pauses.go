package report

import (
	"errors"
	"io"
	"strconv"
	"strings"
)

// otherTier groups ports whose node name follows no naming scheme the report knows.
const otherTier = 1 << 30

// pausesData is what the report takes from pauses.csv: per interval, how many ports were
// paused (the sum of their paused fractions, so two ports paused half the interval count as
// one, and a port with two classes paused all along counts twice) in all and per tier, and the
// pauses received.
type pausesData struct {
	rows   int
	ports  int         // distinct ports
	times  []float64   // ascending interval starts (us)
	total  []float64   // [time] sum of paused_frac over every port
	tiers  []int       // tiers seen, ascending (-1 = host NIC ports, otherTier = unknown)
	paused [][]float64 // [tier index][time] sum of paused_frac over the tier's ports
	events []float64   // [time] XOFF frames received over every port
}

// readPauses reads pauses.csv (docs/outputs.md: time_us, port, node, paused_frac,
// pause_events). paused_frac sums a port's classes, so it may exceed 1; it must not be
// negative. Errors are *FileError values naming file, line and column.
func readPauses(file string, r io.Reader) (*pausesData, error) {
	t, err := newCSVTable(file, r, "time_us", "port", "node", "paused_frac", "pause_events")
	if err != nil {
		return nil, err
	}
	type key struct {
		tier int
		time float64
	}
	d := &pausesData{}
	var (
		total  = map[float64]float64{}
		events = map[float64]float64{}
		byTier = map[key]float64{}
		tiers  = map[int]bool{}
		ports  = map[string]bool{}
	)
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		d.rows++
		at, err := t.nonNeg("time_us")
		if err != nil {
			return nil, err
		}
		frac, err := t.nonNeg("paused_frac")
		if err != nil {
			return nil, err
		}
		ev, err := t.nonNeg("pause_events")
		if err != nil {
			return nil, err
		}
		port := t.str("port")
		if port == "" {
			return nil, t.cellErr("port", errors.New("empty port name"))
		}
		ports[port] = true
		tier := nodeTier(t.str("node"))
		tiers[tier] = true
		total[at] += frac
		events[at] += ev
		byTier[key{tier, at}] += frac
	}
	d.ports = len(ports)
	d.times = sortedKeys(total)
	d.tiers = sortedKeys(tiers)
	for _, at := range d.times {
		d.total = append(d.total, total[at])
		d.events = append(d.events, events[at])
	}
	for _, tier := range d.tiers {
		row := make([]float64, len(d.times))
		for i, at := range d.times {
			row[i] = byTier[key{tier, at}]
		}
		d.paused = append(d.paused, row)
	}
	return d, nil
}

// nodeTier is the tier of a node from its name as `lockstep topo` writes it: "h3" is a host
// (-1), "p0.t1-4" is plane 0's T1 switch 4 (1). Other names give otherTier.
func nodeTier(node string) int {
	if rest, ok := strings.CutPrefix(node, "h"); ok {
		if _, err := strconv.Atoi(rest); err == nil {
			return -1
		}
	}
	if _, sw, ok := strings.Cut(node, ".t"); ok && strings.HasPrefix(node, "p") {
		if k, _, ok := strings.Cut(sw, "-"); ok {
			if tier, err := strconv.Atoi(k); err == nil && tier >= 0 {
				return tier
			}
		}
	}
	return otherTier
}

// pauseTierName names a tier of nodeTier for a legend.
func pauseTierName(tier int) string {
	if tier == otherTier {
		return "other ports"
	}
	return tierName(tier)
}
