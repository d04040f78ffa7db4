package ibnic_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/transport"
)

// TestCreditsLineAlways: the terminal's InfiniBand block always has a credits line at
// packet level, so a user knows credits were on even when no port was blocked: the blocked
// ports when any (an incast), "no port blocked" otherwise (a single transfer), "off" with
// credits.enabled false.
func TestCreditsLineAlways(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: ib%s}\ntraffic: [%s]\n"
	one := "{pattern: flows, flows: [{src: 1, dst: 0, bytes: 64KB}]}"
	incast := "{pattern: incast, receiver: 0, senders: [1, 2, 3, 4, 8, 9], bytes: 256KB}"
	p, _ := transport.Lookup("ib")
	for _, c := range []struct{ name, ib, traffic, want string }{
		{"blocked", "", incast, "ports blocked for credits"},
		{"none blocked", "", one, "InfiniBand credits: on, no port blocked"},
		{"off", ", ib: {credits: {enabled: false}}", one, "InfiniBand credits: off"},
	} {
		r := run(t, fmt.Sprintf(y, c.ib, c.traffic))
		var b bytes.Buffer
		p.Print(&b, r.Summary.Transport, false)
		if n := strings.Count(b.String(), "InfiniBand credits:"); n != 1 || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: %d credits lines in\n%s\nwant one containing %q", c.name, n, b.String(), c.want)
		}
	}
}
