package scenario

import (
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// Bounds on sizes checked before any arithmetic on them, so no input overflows a sim.Time, a
// byte count or a packet count (README.md, "Bounds"; TestBounds lists the cases).
const (
	// MaxTransferBytes bounds a traffic transfer (traffic[i].bytes, flows[j].bytes) and a
	// collective's size (bytes, max_bytes): 1 PiB. The busiest NIC of the fastest fabric
	// lockstep models (8 planes of 1.6 Tb/s) needs 10 minutes for it, and a sum over a
	// million such transfers still fits an int64 of bytes and a float64's exact integers.
	MaxTransferBytes sim.Size = 1 << 50
	// MaxRunDuration is the longest run.duration at either engine (1 h of simulated time).
	MaxRunDuration = sim.Hour
)

// checkBytes rejects a size above MaxTransferBytes at path, naming the engine that would run
// it.
func checkBytes(path string, b sim.Size, engine string) error {
	if b > MaxTransferBytes {
		return Errorf(path, "%v is beyond %v, the largest transfer or collective size lockstep simulates (run.engine %s); a transfer that large takes longer than the longest run (%v)", b, MaxTransferBytes, engine, MaxRunDuration)
	}
	return nil
}

// satAdd is a + b for non-negative times, saturating at sim.MaxTime.
func satAdd(a, b sim.Time) sim.Time {
	if a > sim.MaxTime-b {
		return sim.MaxTime
	}
	return a + b
}

// satMul is a x k for a non-negative time and k >= 0, saturating at sim.MaxTime.
func satMul(a sim.Time, k int64) sim.Time {
	if k != 0 && a > sim.MaxTime/sim.Time(k) {
		return sim.MaxTime
	}
	return a * sim.Time(k)
}

// fieldLimit is the limit of the field at YAML path p when it is smaller than its type's
// range, as text for an error ("1h, the longest run"), and ok false when the field has none
// of its own. The decoder names it when a value does not even fit the type (a *sim.RangeError:
// "run.duration: 1000000h"), so the error gives the limit the resolver would check rather than
// sim.Time's 106 days.
func fieldLimit(p string) (limit string, ok bool) {
	key := p[strings.LastIndexByte(p, '.')+1:]
	switch {
	case p == "run.duration":
		return MaxRunDuration.String() + ", the longest run", true
	case strings.HasPrefix(p, "topology.") && (key == "hop_latency" || key == "latency"):
		return topo.MaxHopLatency.String() + " (a link plus a switch takes nanoseconds to microseconds)", true
	case (strings.HasPrefix(p, "traffic[") || strings.HasPrefix(p, "workload.")) && (key == "bytes" || key == "max_bytes" || key == "min_bytes"):
		return MaxTransferBytes.String() + ", the largest transfer or collective size lockstep simulates", true
	}
	return "", false
}

// positiveFields are the fields whose zero, written explicitly, is an error rather than
// "left out" (the resolver cannot tell "host_link: 0G" from no host_link).
var positiveFields = map[string]bool{
	"topology.clos.host_link": true,
}
