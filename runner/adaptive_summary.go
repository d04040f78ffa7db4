package runner

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// AdaptiveSummary is summary.json's "adaptive_routing" block (packet level, when
// fabric.adaptive_routing is on): the switches' adaptive routing decisions, their SHIELD-style
// fast recovery and the packets lost at failed links, split by where they were
// (fabric.AdaptiveStats; docs/outputs.md). Counts are packets unless named otherwise.
type AdaptiveSummary struct {
	// Decisions counts the packets forwarded by the adaptive choice (no source route); of them
	// Static went where the ECMP hash points, AdaptivelyRerouted elsewhere because of load and
	// FastRecoveryReroutes elsewhere because the hashed port was down or avoided.
	Decisions            int64 `json:"decisions"`
	Static               int64 `json:"static_packets"`
	AdaptivelyRerouted   int64 `json:"adaptively_rerouted_packets"`
	FastRecoveryReroutes int64 `json:"fast_recovery_reroutes"`
	// QueueRescued counts the packets taken off a failed (or, after a fault notification,
	// avoided) egress's queue and forwarded to another minimal port instead of dropped.
	QueueRescued int64 `json:"queue_rescued_packets"`
	// NotificationsSent and NotificationsDelivered count the fault notifications to upstream
	// switches (each takes effect notify_delay after it is sent).
	NotificationsSent      int64 `json:"notifications_sent"`
	NotificationsDelivered int64 `json:"notifications_delivered"`
	// The drops at failed links: LostInFlight were on the wire (or being serialised) when the
	// link failed; LostQueued were queued at the dead egress and could not be rerouted (a
	// source route); NoRoute found every minimal port of their switch dead or avoided (a dead
	// end, awaiting the notification upstream), NoRouteFromQueue of them taken off a dead
	// egress's queue.
	LostInFlight     int64 `json:"lost_in_flight_packets"`
	LostInFlightB    int64 `json:"lost_in_flight_bytes"`
	LostQueued       int64 `json:"lost_queued_packets"`
	NoRoute          int64 `json:"no_route_packets"`
	NoRouteFromQueue int64 `json:"no_route_from_queue_packets"`
	// AtFailedSwitches is, of LostQueued and NoRoute, the packets dropped inside a switch that
	// failed as a whole (a fault of kind switch): its own queues, with every port of it down.
	// Absent when none.
	AtFailedSwitches int64 `json:"at_failed_switches_packets,omitempty"`
	// failedQueued and failedNoRoute split AtFailedSwitches between LostQueued and NoRoute,
	// for the terminal line.
	failedQueued, failedNoRoute int64
	// Detours counts the packets a switch with no usable minimal port sent down to a switch
	// that had one instead of dropping them; EscapeVL those moved to the escape VL there
	// (fabric/adaptive_detour.go).
	Detours  int64 `json:"detour_packets"`
	EscapeVL int64 `json:"escape_vl_packets"`
	// DroppedBySwitches counts every packet a switch discarded in the run, for any reason,
	// not counting the packets lost on a wire (LostInFlight, random loss): with one failed
	// link, 0 means the switches lost nothing and only the failed wire's packets were lost
	// (fabric.Network.SwitchDrops).
	DroppedBySwitches int64 `json:"dropped_by_switches_packets"`
	// LastDeadEndUs is the last time, us, a packet met a switch with no usable minimal port
	// toward its destination (detoured, sent on to the notifying switch or dropped): after
	// it the traffic had moved off the failure. Absent when none did.
	LastDeadEndUs float64 `json:"last_dead_end_us,omitempty"`
	// Note says why adaptive routing did nothing when no packet was forwarded by the adaptive
	// choice (Decisions 0): empty otherwise.
	Note string `json:"note,omitempty"`
}

// noAdaptiveNote is AdaptiveSummary.Note for a run in which no packet met an adaptive choice.
const noAdaptiveNote = "no packet was forwarded by the adaptive choice: every packet carried a source route (MRC's SRv6 entropy values, which switches never reroute) or met only switches with one minimal port toward it, so fabric.adaptive_routing changed nothing in this run"

// adaptiveSummary is the summary's adaptive_routing block: nil when adaptive routing is off or
// no packet fabric ran.
func adaptiveSummary(net *fabric.Network) *AdaptiveSummary {
	if net == nil || !net.AdaptiveOn() {
		return nil
	}
	st := net.AdaptiveStats()
	a := &AdaptiveSummary{
		Decisions: st.Decisions, Static: st.Static, AdaptivelyRerouted: st.Moved, FastRecoveryReroutes: st.Rerouted,
		QueueRescued: st.Rescued, NotificationsSent: st.NotifySent, NotificationsDelivered: st.Notices,
		LostInFlight: st.LostInFlight, LostInFlightB: st.LostInFlightB, LostQueued: st.LostQueued, NoRoute: st.DeadEnds, NoRouteFromQueue: st.QueuedDeadEnds,
		Detours: st.Detours, EscapeVL: st.Turns, DroppedBySwitches: net.SwitchDrops(), AtFailedSwitches: st.FailedDeadEnds + st.FailedLostQueued,
		failedQueued: st.FailedLostQueued, failedNoRoute: st.FailedDeadEnds,
		LastDeadEndUs: float64(st.LastDeadEnd) / float64(sim.Microsecond),
	}
	if a.Decisions == 0 {
		a.Note = noAdaptiveNote
	}
	return a
}

// PrintAdaptive writes the terminal line of an adaptive_routing block (nothing when a is nil):
// the drops inside failed switches are said apart from those at dead links elsewhere.
func PrintAdaptive(w io.Writer, a *AdaptiveSummary) {
	if a == nil {
		return
	}
	fmt.Fprintf(w, "adaptive routing: %d decisions, %d moved by load, %d fast-recovery reroutes, %d rescued from dead queues; %d notifications sent (%d delivered)",
		a.Decisions, a.AdaptivelyRerouted, a.FastRecoveryReroutes, a.QueueRescued, a.NotificationsSent, a.NotificationsDelivered)
	if a.Detours > 0 {
		fmt.Fprintf(w, "; %d detoured on the escape VL", a.Detours)
	}
	if d := a.LostInFlight + a.LostQueued + a.NoRoute; d > 0 || a.DroppedBySwitches > 0 {
		failed := ""
		if a.AtFailedSwitches > 0 {
			failed = fmt.Sprintf("%d in failed switches' own queues; ", a.AtFailedSwitches)
		}
		fmt.Fprintf(w, "; %d dropped by switches (%sat dead links: %d queued, %d no route); %d lost on failed wires (%d B)",
			a.DroppedBySwitches, failed, a.LostQueued-a.failedQueued, a.NoRoute-a.failedNoRoute, a.LostInFlight, a.LostInFlightB)
	}
	fmt.Fprintln(w)
	if a.Note != "" {
		fmt.Fprintf(w, "note: adaptive routing: %s\n", a.Note)
	}
}
