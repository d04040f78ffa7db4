package ibnic_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestTimeoutWait: a lossy InfiniBand run (credits off, 64 KiB switch queues, an incast of
// 1 MB each) whose QPs lose a packet no NAK recovers ends with those QPs waiting for the
// local ACK timeout; the failure reason names them, the timeout with its field
// (transport.ib.timeout) and what to change, and summary.json's transport.timeout_wait has
// them. A timeout short enough for the run recovers them (no wait left), and neither a
// lossless run cut short by run.duration (packets in flight, none lost) nor a lossless run
// that finishes reports a wait.
func TestTimeoutWait(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\n%s" +
		"transport: {kind: ib%s}\ntraffic: [{pattern: incast, receiver: 0, bytes: 1MB, senders: [%s]}]\nrun: {seed: 1%s}\n"
	const lossy = "fabric: {switch_queue: {limit: 64KiB}}\n"
	for _, c := range []struct {
		name, fab, ib, senders, run string
		failed                      bool
		qps                         int    // timeout_wait.qps; 0: none
		want                        string // in the failure reason
	}{
		{"lossy 12 -> 1", lossy, ", ib: {credits: {enabled: false}}", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12", "", true, 12,
			"12 QP(s) lost a packet no NAK will recover (a lost tail, or a resend lost after its NAK) and were waiting for the transport's retransmission timeout, 1.073741824s (transport.ib.timeout 18: 4.096us x 2^18), when the run stopped (the first: qp 0 (h1->h0 plane 0), PSN "},
		{"lossy 2 -> 1", lossy, ", ib: {credits: {enabled: false}}", "1, 2", ", duration: 50ms", true, 2,
			"raise run.duration past that, or lower transport.ib.timeout (each step down halves the timeout; 14 is 67.108864ms)"},
		{"lossy 2 -> 1, timeout 12", lossy, ", ib: {credits: {enabled: false}, timeout: 12}", "1, 2", ", duration: 50ms", true, 1,
			"retransmission timeout, 16.777216ms (transport.ib.timeout 12: 4.096us x 2^12)"},
		{"lossy 2 -> 1, timeout 10 recovers", lossy, ", ib: {credits: {enabled: false}, timeout: 10}", "1, 2", ", duration: 50ms", false, 0, ""},
		{"lossless, cut short", "", "", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12", ", duration: 200us", true, 0, "not finished when the run stopped"},
		{"lossless", "", "", "1, 2, 3, 4", "", false, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, fmt.Sprintf(y, c.fab, c.ib, c.senders, c.run))
			s := res.Summary
			tw := s.Transport.TimeoutWait
			if s.Failed != c.failed {
				t.Fatalf("failed %v (%s); want %v", s.Failed, s.FailureReason, c.failed)
			}
			switch {
			case c.qps == 0 && tw != nil:
				t.Fatalf("timeout_wait %+v; want none", *tw)
			case c.qps != 0 && (tw == nil || tw.QPs != c.qps):
				t.Fatalf("timeout_wait %+v; want %d QPs", tw, c.qps)
			}
			if !strings.Contains(s.FailureReason, c.want) {
				t.Errorf("failure reason %q; want it to contain %q", s.FailureReason, c.want)
			}
			if c.qps == 0 && strings.Contains(s.FailureReason, "retransmission timeout") {
				t.Errorf("failure reason %q names a timeout wait", s.FailureReason)
			}
			if tw != nil && (tw.ResumeUs <= s.DurationUs || tw.TimeoutUs <= 0 || !strings.HasPrefix(tw.Setting, "transport.ib.timeout ")) {
				t.Errorf("timeout_wait %+v: want a resume after the run's traffic end %.1f us, the timeout and its setting", *tw, s.DurationUs)
			}
		})
	}
}
