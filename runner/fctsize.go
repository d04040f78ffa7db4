package runner

import (
	"math"
	"sort"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
)

// FCTBucket is the flow completion times of the transfers whose size falls in one bucket of
// summary.json's fct_by_size (traffic with generated arrivals, patterns poisson and onoff):
// sizes above the previous bucket's MaxBytes up to this one's (0: no upper bound).
type FCTBucket struct {
	// MaxBytes is the bucket's largest size in bytes (0 for the last, unbounded bucket).
	MaxBytes int64 `json:"max_bytes"`
	// Flows is the transfers in the bucket, Completed those acknowledged in full.
	Flows     int `json:"flows"`
	Completed int `json:"completed"`
	// FCT mean and 99th percentile (nearest rank) over the completed transfers, microseconds.
	FCTMeanUs float64 `json:"fct_mean_us"`
	FCTP99Us  float64 `json:"fct_p99_us"`
	// Slowdown is FCT over the transfer's ideal (alone on an idle fabric): mean and 99th
	// percentile over the completed transfers whose ideal is known.
	SlowdownMean float64 `json:"slowdown_mean"`
	SlowdownP99  float64 `json:"slowdown_p99"`
}

// fctBucketEdges are the upper sizes of the fct_by_size buckets (bytes): the decades the
// WebSearch and Hadoop evaluations report (short flows under 100 KB, long above 1-10 MB).
var fctBucketEdges = []int64{10_000, 100_000, 1_000_000, 10_000_000, 0}

// fctBySize groups flows by size into fctBucketEdges, empty buckets left out; nil unless a
// traffic group of sc has generated arrivals (poisson, onoff).
func fctBySize(sc *scenario.Scenario, flows []transport.FlowRecord) []FCTBucket {
	gen := false
	for i := range sc.Traffic {
		gen = gen || sc.Traffic[i].Arrivals != nil
	}
	if !gen {
		return nil
	}
	bucket := func(b int64) int {
		for i, e := range fctBucketEdges {
			if e == 0 || b <= e {
				return i
			}
		}
		return len(fctBucketEdges) - 1
	}
	fct := make([][]float64, len(fctBucketEdges))
	slow := make([][]float64, len(fctBucketEdges))
	out := make([]FCTBucket, len(fctBucketEdges))
	for _, f := range flows {
		i := bucket(f.Bytes)
		out[i].Flows++
		if f.Done <= 0 {
			continue
		}
		out[i].Completed++
		d := f.Done - f.Start
		fct[i] = append(fct[i], us(d))
		if f.Ideal > 0 {
			slow[i] = append(slow[i], float64(d)/float64(f.Ideal))
		}
	}
	var keep []FCTBucket
	for i := range out {
		if out[i].Flows == 0 {
			continue
		}
		out[i].MaxBytes = fctBucketEdges[i]
		out[i].FCTMeanUs, out[i].FCTP99Us = meanP99(fct[i])
		out[i].SlowdownMean, out[i].SlowdownP99 = meanP99(slow[i])
		keep = append(keep, out[i])
	}
	return keep
}

// meanP99 returns the mean and the nearest-rank 99th percentile of xs (0, 0 when empty),
// rounded to 3 decimals; it sorts xs.
func meanP99(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	sort.Float64s(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	k := int(math.Ceil(0.99*float64(len(xs)))) - 1
	return round3(sum / float64(len(xs))), round3(xs[max(k, 0)])
}
