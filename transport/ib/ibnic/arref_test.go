package ibnic_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib/ibnic"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// TestActiveReferenceMatchesRouting: the flow-level reference the summary prints beside
// the throughput while all flows were active follows the routing in force. With
// fabric.adaptive_routing it is the max-min with each QP spread over its plane's minimal
// paths (perfect AR; near line rate on a permutation of a non-blocking fat tree), printed as
// the adaptive routing reference with the static ECMP answer beside it; without, the ECMP
// max-min over the hashed QP paths, with no AR figure. Before, an AR run printed the ECMP
// reference alone (0.497 of line on the 2-tier case, where the AR run reached 0.855), as if it were what AR should reach.
// IB and RoCE, 2 and 3 tiers.
func TestActiveReferenceMatchesRouting(t *testing.T) {
	for _, f := range []fabricCase{{2, 1, 8, "1MiB"}, {3, 1, 8, "512KiB"}} {
		for _, tr := range []string{"kind: ib", "kind: roce, roce: {out_of_order: {enabled: true}}"} {
			for _, ar := range []bool{false, true} {
				s := run(t, permYAML(f, tr, ar, 1, "")).Summary.Transport
				var b bytes.Buffer
				p, _ := transport.Lookup(s.Kind)
				p.Print(&b, s, false)
				out := b.String()
				ecmp, arRef := maxMin(s)
				t.Logf("%v %s AR %v: packet %.3f, ECMP max-min %.3f, AR max-min %.3f", f, tr, ar, s.ActiveThroughputMeanOfLine, ecmp, arRef)
				if ecmp <= 0 {
					t.Fatalf("%v %s AR %v: no ECMP max-min figure", f, tr, ar)
				}
				if !ar {
					if arRef != 0 || !strings.Contains(out, "flow-level max-min over the same ECMP-hashed QP paths") || strings.Contains(out, "adaptive routing") {
						t.Errorf("%v %s static: AR figure %v, terminal %q; want the ECMP reference only", f, tr, arRef, out)
					}
					continue
				}
				if arRef < 0.95 || arRef <= ecmp || !strings.Contains(out, "flow-level max-min with adaptive routing") || !strings.Contains(out, "static ECMP hashing of the same QPs") || strings.Contains(out, "over the same ECMP-hashed QP paths") {
					t.Errorf("%v %s AR: AR max-min %.3f (ECMP %.3f), terminal %q; want >= 0.95 above ECMP, printed as the AR reference", f, tr, arRef, ecmp, out)
				}
			}
		}
	}
}

// maxMin returns the ECMP and AR max-min references of an IB or RoCE summary.
func maxMin(s *transport.Summary) (ecmp, ar float64) {
	switch d := s.Detail.(type) {
	case *ibnic.Detail:
		if d.Detail != nil {
			return d.ActiveMaxMinMeanOfLine, d.ActiveMaxMinARMeanOfLine
		}
	case *rocenic.Detail:
		return d.ActiveMaxMinMeanOfLine, d.ActiveMaxMinARMeanOfLine
	}
	return 0, 0
}
