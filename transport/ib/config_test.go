package ib

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestDefaults: NCCL's IB defaults (NCCL_IB_TIMEOUT 18: 4.096 us x 2^18 = 1.073741824 s;
// NCCL_IB_RETRY_CNT 7), IBTA header sizes (26 B), DCQCN off, credits on.
func TestDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if err := c.Validate("transport.ib"); err != nil {
		t.Fatal(err)
	}
	if got, want := c.RTO(), sim.Time(4096)*sim.Nanosecond*(1<<18); got != want {
		t.Fatalf("RTO %v, want %v", got, want)
	}
	rc := c.RC()
	if rc.HeaderBytes != 26 || rc.RetryCount != 7 || !rc.DCQCN.Disabled || rc.RTO != c.RTO() {
		t.Fatalf("RC config %+v", rc)
	}
	if !c.Credits.Fabric().Enabled {
		t.Fatal("credits off by default")
	}
	off := false
	if (Config{Credits: Credits{Enabled: &off}}).WithDefaults().Credits.Fabric().Enabled {
		t.Fatal("credits.enabled: false ignored")
	}
}

// TestValidate: bad fields are named with their value and range.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{TimeoutExponent: 40}, "transport.ib.timeout: 40"},
		{Config{RetryCount: 9}, "transport.ib.retry_count"},
		{Config{Credits: Credits{BufferPerVL: 10}}, "transport.ib.credits.buffer_per_vl"},
	} {
		err := tc.c.WithDefaults().Validate("transport.ib")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to name %q", tc.c, err, tc.want)
		}
	}
}
