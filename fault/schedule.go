package fault

import (
	"fmt"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// Op is one primitive fabric action: what a schedule's Event does when its time comes.
type Op uint8

// Ops, each with the fabric call that applies it.
const (
	OpDown        Op = iota + 1 // the link fails: fabric.Network.SetLinkDown(now, Port, true), both directions
	OpUp                        // the link is repaired: SetLinkDown(now, Port, false)
	OpDegrade                   // both directions of Port's link run at Rate: Port.Rate = Rate at both ends
	OpUndegrade                 // both directions back to Rate, the link's built rate
	OpLoss                      // SetLoss(Port, Prob), or SetEntropyLoss(Port, Entropy, Prob) when HasEntropy; Prob 0 clears
	OpBER                       // SetBER(Port, Prob); Prob 0 clears
	OpBlackhole                 // SetBlackhole(Node, true)
	OpUnblackhole               // SetBlackhole(Node, false)
	opHeal                      // internal: resolved by Expand into the restores the target needs
)

var opNames = [...]string{"", "down", "up", "degrade", "undegrade", "loss", "ber", "blackhole", "unblackhole", "heal"}

// String returns the op's name: "down", "up", "degrade", "undegrade", "loss", "ber",
// "blackhole" or "unblackhole". The link-state ops are "down" and "up", as routing
// reconvergence expects.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// Event is one primitive action at one instant, with where it came from.
type Event struct {
	At sim.Time // when, ps
	Op Op
	// Port is the port acted on: for link ops (down, up, degrade, undegrade) the named end of
	// the link, for loss and ber the port whose outgoing packets are affected; -1 for switch
	// ops. It is a fabric.PortID.
	Port int32
	// Node is the switch for blackhole and unblackhole, -1 otherwise (a fabric.NodeID).
	Node int32
	// Name is the port's or the switch's name.
	Name string
	// Rate is the link's rate after a degrade or undegrade, bits/s.
	Rate sim.Rate
	// Prob is the loss probability (OpLoss) or the bit error rate (OpBER); 0 clears.
	Prob float64
	// Entropy limits an OpLoss to packets with this entropy value when HasEntropy.
	Entropy    uint32
	HasEntropy bool

	// Entry is the index of the Spec the event comes from (faults[Entry]).
	Entry int
	// Action is that Spec's action ("flap", "heal", "down", ...), Target the element it
	// matched (a port, switch, NIC port or transceiver name).
	Action string
	Target string
	// Cycle is the flap cycle (0 .. Count-1), 0 for other actions.
	Cycle int
	// Restore marks an event that ends a failure the same entry started: the restore after
	// For, a flap cycle's up, a random failure's repair.
	Restore bool
	// Random marks events drawn by the entry's random process.
	Random bool
	// Step is -1 when At counts from the run's start, else the training step (Spec.AtStep)
	// from whose simulated start At counts.
	Step int
}

// String renders the event on one line: "1.5ms down h3.p2 (faults[2] flap h3.p2 cycle 3)".
func (e Event) String() string {
	s := e.At.String() + " " + e.Op.String() + " " + e.Name
	switch e.Op {
	case OpDegrade, OpUndegrade:
		s += " to " + e.Rate.String()
	case OpLoss:
		s += " " + strconv.FormatFloat(e.Prob, 'g', -1, 64)
		if e.HasEntropy {
			s += " entropy " + strconv.FormatUint(uint64(e.Entropy), 10)
		}
	case OpBER:
		s += " " + strconv.FormatFloat(e.Prob, 'g', -1, 64)
	}
	s += fmt.Sprintf(" (faults[%d] %s %s", e.Entry, e.Action, e.Target)
	if e.Action == ActionFlap {
		s += " cycle " + strconv.Itoa(e.Cycle)
	}
	if e.Random {
		s += ", random"
	}
	return s + ")"
}

// Schedule is an expanded, checked fault schedule.
type Schedule struct {
	// Events in time order; simultaneous events in entry order, then in the order the
	// entry's elements appear in the inventory.
	Events []Event
	// Entries has one record per Spec.
	Entries []EntryStats
}

// EntryStats describes what one Spec expanded to.
type EntryStats struct {
	// Elements is how many elements the target matched and the action acts on (links for
	// link actions, even when both ends match; ports for directional loss and ber).
	Elements int
	// Arrivals is how many failures the random process drew over its horizon; Skipped of them
	// were dropped because they overlapped another fault of the same aspect on the same
	// element (a seed never makes a scenario invalid).
	Arrivals, Skipped int
	// Events is how many events the entry contributed (heals: the restores it resolved to).
	Events int
}

// Options configures Expand.
type Options struct {
	// Seed is the scenario seed (run.seed): random processes draw from sim.Stream(Seed,
	// "<Path>[i] <element>").
	Seed uint64
	// Duration is the run's length (run.duration): entries must start inside [0, Duration) and
	// random processes end by it (default Random.Until). 0: no bound, and Random.Until must
	// be set (as in a resolved scenario).
	Duration sim.Time
	// Path prefixes error paths and stream names; default "faults".
	Path string
}
