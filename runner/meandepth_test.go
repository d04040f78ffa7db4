package runner

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
)

// links.csv's queue_mean_bytes is the fabric's integral of the bytes queued: summed over a
// switch port's rows times their length it gives the port's area over the offered-load
// interval, so the mean over switch ports and the run is summary.json's queue_depth.mean_bytes;
// and the time average never exceeds the deepest sample's interval bound by more than the
// queue's limit, nor is it negative. Across loads, incasts and planes.
func TestQueueMeanBytes(t *testing.T) {
	for _, c := range []struct {
		name   string
		planes int
		tr     string
		queues bool // an overload: the mean must be well above 0
	}{
		{"perm-ecmp-0.9", 1, "  - {pattern: permutation, path: ecmp, load: 0.9}", false},
		{"perm-ecmp-2plane", 2, "  - {pattern: permutation, path: ecmp, load: 1}", false},
		{"incast-3", 1, "  - {pattern: incast, senders: [0, 1, 3], receiver: 2, load: 1}", true},
		{"incast-light", 1, "  - {pattern: incast, senders: [0, 1], receiver: 2, load: 0.3}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustRun(t, fmt.Sprintf(closYAML, 2, c.planes, 8, c.tr, 5, "100us"))
			var buf bytes.Buffer
			if err := res.Links.WriteCSV(&buf); err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(&buf).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			col := map[string]int{}
			for i, h := range rows[0] {
				col[h] = i
			}
			mi, ok := col["queue_mean_bytes"]
			if !ok {
				t.Fatalf("links.csv header %v has no queue_mean_bytes", rows[0])
			}
			num := func(r []string, k string) float64 {
				v, err := strconv.ParseFloat(r[col[k]], 64)
				if err != nil {
					t.Fatalf("%s %q: %v", k, r[col[k]], err)
				}
				return v
			}
			var area float64 // byte-microseconds over switch ports
			for _, r := range rows[1:] {
				m := num(r, "queue_mean_bytes")
				if m < 0 || m > 256<<10 {
					t.Fatalf("row %v: queue_mean_bytes %v outside [0, the 256 KiB limit]", r, r[mi])
				}
				if num(r, "tier") >= 0 {
					area += m * (num(r, "end_us") - num(r, "start_us"))
				}
			}
			s := res.Summary
			switchPorts := 0
			for i := range res.Net.Ports {
				if res.Net.Nodes[res.Net.Ports[i].Node].Kind != fabric.Host {
					switchPorts++
				}
			}
			// links.csv's last interval runs past the offered-load interval and rows round to
			// 3 decimals: compare with a tolerance.
			want := s.Queue.MeanBytes * float64(switchPorts) * s.DurationUs
			if math.Abs(area-want) > 0.02*want+1 {
				t.Errorf("links.csv area %.1f B us, summary mean %.3f B x %d ports x %.1f us = %.1f", area, s.Queue.MeanBytes, switchPorts, s.DurationUs, want)
			}
			if c.queues && s.Queue.MeanBytes < 100 {
				t.Errorf("overloaded incast: mean depth %.3f B", s.Queue.MeanBytes)
			}
			if s.Queue.MeanBytes > float64(s.Queue.MaxBytes) {
				t.Errorf("mean %.1f B above the deepest sample %d B", s.Queue.MeanBytes, s.Queue.MaxBytes)
			}
			var planeSum float64
			for _, p := range s.PerPlane {
				planeSum += p.Queue.MeanBytes
			}
			if got := planeSum / float64(len(s.PerPlane)); math.Abs(got-s.Queue.MeanBytes) > 0.01 {
				t.Errorf("planes' mean %.3f, all ports' %.3f (planes have as many ports each)", got, s.Queue.MeanBytes)
			}
			if s.LatencyMeanUs < s.LatencyP50Us/2 || s.LatencyMeanUs > s.LatencyMaxUs {
				t.Errorf("latency mean %.3f us against p50 %.3f, max %.3f", s.LatencyMeanUs, s.LatencyP50Us, s.LatencyMaxUs)
			}
		})
	}
}
