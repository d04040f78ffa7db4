package rocenic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// jsonTags lists the JSON keys of struct type v's fields, in order.
func jsonTags(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := 0; i < rt.NumField(); i++ {
		tag := strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// objectKeys returns the keys of the JSON object b in order.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestSummaryJSON: the summary block is one object, the common keys (transport.Summary's, in
// order) then Detail's, no key twice, for runs with and without losses, errors and active
// figures.
func TestSummaryJSON(t *testing.T) {
	common, detail := jsonTags(transport.Summary{}), jsonTags(Detail{})
	pos := map[string]int{}
	for i, k := range append(append([]string{}, common...), detail...) {
		if _, dup := pos[k]; dup {
			t.Fatalf("key %q both in transport.Summary and Detail", k)
		}
		pos[k] = i
	}
	for _, tc := range []struct {
		name  string
		flows [][3]int64
		cfg   roce.Config
		pfc   bool
	}{
		{"one flow", [][3]int64{{0, 9, 1 << 20}}, roce.Config{}, true},
		{"incast", [][3]int64{{1, 0, 1 << 20}, {2, 0, 1 << 20}, {3, 0, 1 << 20}}, roce.Config{QPsPerPeer: 2}, true},
		{"lossy incast", [][3]int64{{1, 0, 1 << 20}, {2, 0, 1 << 20}, {3, 0, 1 << 20}, {4, 0, 1 << 20}}, roce.Config{RTO: 200 * sim.Microsecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := rigSpec{clos: clos(2, 16), seed: 1, pfc: tc.pfc, ecn: true, cfg: tc.cfg}
			if !tc.pfc {
				sp.limit = 128 << 10
			}
			g := newRig(t, sp)
			g.traffic()
			for _, f := range tc.flows {
				if err := g.ep.AddFlow(int(f[0]), int(f[1]), f[2], 0); err != nil {
					t.Fatal(err)
				}
			}
			end := g.run(t, 100*sim.Millisecond)
			b, err := json.Marshal(g.ep.Summary(end, []sim.Time{sim.Microsecond}))
			if err != nil {
				t.Fatal(err)
			}
			keys := objectKeys(t, b)
			seen, last, inDetail := map[string]bool{}, -1, false
			for _, k := range keys {
				i, ok := pos[k]
				switch {
				case !ok:
					t.Errorf("unknown key %q", k)
				case seen[k]:
					t.Errorf("key %q twice", k)
				case i < last:
					t.Errorf("key %q out of order in %v", k, keys)
				}
				if i >= len(common) {
					inDetail = true
				}
				seen[k], last = true, i
			}
			if !inDetail || !seen["kind"] || !seen["qps"] || !seen["jct_us"] {
				t.Errorf("keys %v; want the common ones, then Detail's", keys)
			}
		})
	}
}
