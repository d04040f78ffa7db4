package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// arrivalsYAML: generated arrivals on a 16-host, 2-plane Clos under transport %s, pattern %s
// with arrivals %s; run.duration left out, so it fits the transfers.
const arrivalsYAML = `
name: arrivals
topology:
  clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}
transport: {kind: %s}
traffic:
  - {pattern: %s, arrivals: %s}
run: {seed: 3}
`

// Flows made by poisson and onoff run under MRC and RoCE as explicit flows do: every
// generated transfer is a row of flows.csv with the expansion's source, destination, size and
// start, and every one completes.
func TestArrivalsRunUnderTransports(t *testing.T) {
	for _, c := range []struct{ kind, pattern, arrivals string }{
		{"mrc", "poisson", "{load: 0.3, sizes: hadoop, duration: 40us}"},
		{"roce", "onoff", "{load: 0.3, sizes: hadoop, duration: 40us, on: 5us, off: 5us}"},
	} {
		t.Run(c.kind+"-"+c.pattern, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "arrivals.yaml")
			if err := os.WriteFile(file, []byte(fmt.Sprintf(arrivalsYAML, c.kind, c.pattern, c.arrivals)), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := scenario.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			want := sc.Traffic[0].FlowList()
			if len(want) < 5 {
				t.Fatalf("the expansion has %d flows; want a few", len(want))
			}
			dir, sum := runTo(t, file)
			var s struct {
				Failed    bool `json:"failed"`
				FCTBySize []struct {
					Flows, Completed int
					FCTMeanUs        float64 `json:"fct_mean_us"`
					SlowdownMean     float64 `json:"slowdown_mean"`
				} `json:"fct_by_size"`
				Transport struct {
					Kind      string `json:"kind"`
					Flows     int    `json:"flows"`
					Completed int    `json:"flows_completed"`
				} `json:"transport"`
			}
			if err := json.Unmarshal(sum, &s); err != nil {
				t.Fatal(err)
			}
			if s.Failed || s.Transport.Kind != c.kind || s.Transport.Completed != s.Transport.Flows {
				t.Fatalf("summary: failed %v, transport %+v", s.Failed, s.Transport)
			}
			n := 0
			for _, b := range s.FCTBySize {
				n += b.Flows
				if b.Completed != b.Flows || b.FCTMeanUs <= 0 || b.SlowdownMean < 0.99 {
					t.Errorf("fct_by_size bucket %+v: want every flow completed, no faster than ideal", b)
				}
			}
			if n != len(want) || len(s.FCTBySize) < 2 {
				t.Errorf("fct_by_size %+v counts %d flows in %d buckets; want %d in several", s.FCTBySize, n, len(s.FCTBySize), len(want))
			}
			f, err := os.Open(filepath.Join(dir, "flows.csv"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, h := range rows[0] {
				col[h] = i
			}
			if len(rows)-1 != len(want) {
				t.Fatalf("flows.csv has %d flows, the expansion %d", len(rows)-1, len(want))
			}
			for j, r := range rows[1:] {
				w := want[j]
				start, _ := strconv.ParseFloat(r[col["start_us"]], 64)
				if r[col["src"]] != strconv.Itoa(*w.Src) || r[col["dst"]] != strconv.Itoa(*w.Dst) ||
					r[col["bytes"]] != strconv.FormatInt(int64(w.Bytes), 10) || r[col["done_us"]] == "" ||
					start < w.Start.Micros()-0.001 || start > w.Start.Micros()+0.001 {
					t.Fatalf("flows.csv row %d %v; the expansion's flow %d -> %d, %v B at %v", j, r, *w.Src, *w.Dst, w.Bytes, w.Start)
				}
			}
		})
	}
}
