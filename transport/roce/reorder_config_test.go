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
	on, off := true, false
	if w, _ := (Config{}).WithDefaults().Reorder(); w != 0 {
		t.Errorf("no block: window %d, want 0", w)
	}
	if w, _ := (Config{OutOfOrder: &OutOfOrder{}}).WithDefaults().Reorder(); w != 0 {
		t.Errorf("enabled left out: window %d, want 0", w)
	}
	if w, _ := (Config{OutOfOrder: &OutOfOrder{Enabled: &off}}).WithDefaults().Reorder(); w != 0 {
		t.Errorf("enabled false: window %d, want 0", w)
	}
	if w, h := (Config{OutOfOrder: &OutOfOrder{Enabled: &on}}).WithDefaults().Reorder(); w != DefaultReorderWindow || h != DefaultReorderHold {
		t.Errorf("defaults: %d, %v", w, h)
	}
	if w, h := (Config{OutOfOrder: &OutOfOrder{Enabled: &on, Window: 100, Hold: 5 * sim.Microsecond}}).WithDefaults().Reorder(); w != 128 || h != 5*sim.Microsecond {
		t.Errorf("window 100, hold 5us: %d, %v; want 128, 5us", w, h)
	}
	for _, c := range []struct {
		o    OutOfOrder
		want string
	}{
		{OutOfOrder{Enabled: &on, Window: -1}, "transport.roce.out_of_order.window: -1 is out of range"},
		{OutOfOrder{Enabled: &on, Window: MaxReorderWindow + 1}, "transport.roce.out_of_order.window: 65537"},
		{OutOfOrder{Enabled: &on, Hold: sim.Nanosecond}, "transport.roce.out_of_order.hold: 1ns is out of range"},
	} {
		o := c.o
		err := (Config{OutOfOrder: &o}).WithDefaults().Validate("transport.roce")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.o, err, c.want)
		}
	}
}

// TestOutOfOrderForFabric: left out, out-of-order placement follows fabric.adaptive_routing
// (on under it, with a written window kept); written true or false it is kept either way.
func TestOutOfOrderForFabric(t *testing.T) {
	on, off := true, false
	for _, c := range []struct {
		name     string
		o        *OutOfOrder
		adaptive bool
		window   int
	}{
		{"no block, static", nil, false, 0},
		{"no block, AR", nil, true, DefaultReorderWindow},
		{"window only, AR", &OutOfOrder{Window: 256}, true, 256},
		{"window only, static", &OutOfOrder{Window: 256}, false, 0},
		{"false, AR", &OutOfOrder{Enabled: &off}, true, 0},
		{"true, static", &OutOfOrder{Enabled: &on}, false, DefaultReorderWindow},
		{"true, AR", &OutOfOrder{Enabled: &on}, true, DefaultReorderWindow},
	} {
		in := Config{OutOfOrder: c.o}
		got := in.ForFabric(c.adaptive)
		if w, _ := got.Reorder(); w != c.window {
			t.Errorf("%s: window %d, want %d", c.name, w, c.window)
		}
		if got.OutOfOrderOn() != (c.window > 0) {
			t.Errorf("%s: OutOfOrderOn %v with window %d", c.name, got.OutOfOrderOn(), c.window)
		}
		if c.o != nil && c.o.Enabled == nil && c.adaptive && in.OutOfOrder.Enabled != nil {
			t.Errorf("%s: ForFabric wrote into the caller's block", c.name)
		}
	}
}
