package roce

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestOutOfOrderConfig: transport.roce.out_of_order applies WithReorder with its defaults
// (window rounded up to a power of two), stays off when absent or disabled, and bad values
// are errors naming the field.
func TestOutOfOrderConfig(t *testing.T) {
	if w, _ := (Config{}).WithDefaults().Reorder(); w != 0 {
		t.Errorf("no block: window %d, want 0", w)
	}
	if w, _ := (Config{OutOfOrder: &OutOfOrder{}}).WithDefaults().Reorder(); w != 0 {
		t.Errorf("enabled false: window %d, want 0", w)
	}
	if w, h := (Config{OutOfOrder: &OutOfOrder{Enabled: true}}).WithDefaults().Reorder(); w != DefaultReorderWindow || h != DefaultReorderHold {
		t.Errorf("defaults: %d, %v", w, h)
	}
	if w, h := (Config{OutOfOrder: &OutOfOrder{Enabled: true, Window: 100, Hold: 5 * sim.Microsecond}}).WithDefaults().Reorder(); w != 128 || h != 5*sim.Microsecond {
		t.Errorf("window 100, hold 5us: %d, %v; want 128, 5us", w, h)
	}
	for _, c := range []struct {
		o    OutOfOrder
		want string
	}{
		{OutOfOrder{Enabled: true, Window: -1}, "transport.roce.out_of_order.window: -1 is out of range"},
		{OutOfOrder{Enabled: true, Window: MaxReorderWindow + 1}, "transport.roce.out_of_order.window: 65537"},
		{OutOfOrder{Enabled: true, Hold: sim.Nanosecond}, "transport.roce.out_of_order.hold: 1ns is out of range"},
	} {
		o := c.o
		err := (Config{OutOfOrder: &o}).WithDefaults().Validate("transport.roce")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.o, err, c.want)
		}
	}
}
