package runner

import (
	"bytes"
	"fmt"
	"github.com/lockstepsim/lockstep/scenario"
	"math"
	"strconv"
	"strings"
	"testing"
)

// links.csv at flow level, across transports (MRC bundled, RoCE per-path) and sample
// intervals: the header is the packet level's; the bytes the hosts' NIC ports sent sum to the
// bytes the fabric's flows carried (no NVLink traffic crosses a NIC here: TP 8 fills each
// domain); no port carries more than its line rate in an interval; queue and drop columns are
// 0; and the run itself (steps, events) does not depend on the series' interval.
func TestFlowLinksCSV(t *testing.T) {
	for _, tr := range []string{"{kind: mrc}", "{kind: roce}"} {
		var base string
		for _, si := range []string{"2us", "10us", "50us"} {
			t.Run(tr+" "+si, func(t *testing.T) {
				c := tfCase{radix: 32, hosts: 32, transport: tr, steps: 2}
				y := strings.Replace(c.yaml(), "run: {engine: flow}", "run: {engine: flow, sample_interval: "+si+"}", 1)
				res := mustRun(t, y)
				if res.Links == nil || res.Links.Intervals() < 2 {
					t.Fatal("no link series at flow level, or one interval")
				}
				head, rows := readCSV(t, func(w *bytes.Buffer) error { return res.Links.WriteCSV(w) })
				if strings.Join(head, ",") != strings.Join(LinksCSVHeader, ",") {
					t.Fatalf("header %v", head)
				}
				col := map[string]int{}
				for i, h := range head {
					col[h] = i
				}
				var nic float64
				for _, r := range rows {
					tx, _ := strconv.ParseFloat(r[col["tx_bytes"]], 64)
					util, _ := strconv.ParseFloat(r[col["util_pct"]], 64)
					if util > 100.01 || tx <= 0 {
						t.Fatalf("row %v: util %v%%, tx %v", r, util, tx)
					}
					if r[col["queue_max_bytes"]] != "0" || r[col["drops"]] != "0" {
						t.Fatalf("row %v: a queue or drops at flow level", r)
					}
					if r[col["tier"]] == "-1" {
						nic += tx
					}
				}
				// links.csv counts wire bytes: the flows' payload over the payload share.
				sc, err := scenario.Parse([]byte(y))
				if err != nil {
					t.Fatal(err)
				}
				l, _ := sc.Topology.Describe()
				m, _, _, _ := lookupFlowModel(sc, l)
				sent := res.Training.Flow.BytesSent / payloadShare(m)
				if math.Abs(nic-sent) > 1e-6*sent+float64(len(rows)) {
					t.Errorf("NIC ports sent %v wire bytes, the flows %v", nic, sent)
				}
				key := fmt.Sprint(stepTimes(&res.Summary), res.Summary.Events)
				if base == "" {
					base = key
				} else if key != base {
					t.Errorf("the run changed with the sample interval: %s, was %s", key, base)
				}
			})
		}
	}
}

// TestFlowLinksUnderFaults: a link failing during a later step (at_step, on a bundled MRC
// Clos) moves its bundle's share to the other members; no port's bytes ever go down, so no
// interval of links.csv is negative, and the report can draw it.
func TestFlowLinksUnderFaults(t *testing.T) {
	for _, at := range []string{"{at_step: 1, at: 1ms, link: p0.t0-0.up0, action: down}", "{at: 100us, link: p0.t0-0.up0, action: down}"} {
		c := tfCase{radix: 32, hosts: 32, transport: "{kind: mrc}", steps: 2}
		y := c.yaml() + "\nfaults:\n  - " + at + "\n"
		res := mustRun(t, y)
		if res.Links == nil {
			t.Fatal("no link series")
		}
		head, rows := readCSV(t, func(w *bytes.Buffer) error { return res.Links.WriteCSV(w) })
		col := map[string]int{}
		for i, h := range head {
			col[h] = i
		}
		for _, r := range rows {
			if tx, _ := strconv.ParseFloat(r[col["tx_bytes"]], 64); tx < 0 {
				t.Fatalf("%s: row %v: negative tx_bytes", at, r)
			}
		}
	}
}
