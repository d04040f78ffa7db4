package ib

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
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
		{Config{TimeoutExponent: ptr(40)}, "transport.ib.timeout: 40"},
		{Config{RetryCount: 9}, "transport.ib.retry_count"},
		{Config{Credits: Credits{BufferPerVL: 10}}, "transport.ib.credits.buffer_per_vl"},
	} {
		err := tc.c.WithDefaults().Validate("transport.ib")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want it to name %q", tc.c, err, tc.want)
		}
	}
}

func ptr(v int) *int { return &v }

// TestTimeout: a left-out timeout is NCCL's 18 (written by WithDefaults, so the resolved
// scenario shows it); a written 0, IBTA's infinite timeout, is an error that says so, what
// is allowed and how to get the default; 1..31 are used as written, the rest refused.
func TestTimeout(t *testing.T) {
	if c := (Config{}).WithDefaults(); c.TimeoutExponent == nil || *c.TimeoutExponent != DefaultTimeoutExponent || c.RTO() != roceTimeout(18) {
		t.Fatalf("left out: %v", c.TimeoutExponent)
	}
	for v := -1; v <= 33; v++ {
		c := Config{TimeoutExponent: ptr(v)}.WithDefaults()
		err := c.Validate("transport.ib")
		switch {
		case v == 0:
			if err == nil || !strings.Contains(err.Error(), "transport.ib.timeout: 0 is IBTA's infinite timeout") ||
				!strings.Contains(err.Error(), "allowed 1..31") || !strings.Contains(err.Error(), "leave it out for NCCL's default 18") {
				t.Errorf("timeout 0: %v", err)
			}
		case v >= 1 && v <= 31:
			if err != nil || c.RTO() != roceTimeout(v) {
				t.Errorf("timeout %d: %v, RTO %v", v, err, c.RTO())
			}
		default:
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("transport.ib.timeout: %d is out of range; allowed 1..31", v)) {
				t.Errorf("timeout %d: %v", v, err)
			}
		}
	}
}

// roceTimeout is 4.096 us x 2^t.
func roceTimeout(t int) sim.Time { return sim.Time(4096) * sim.Nanosecond << t }

// TestAutoReorderHold: the automatic hold is the base RTT plus one buffer per VL drained at
// each switch hop's egress rate (scaled buffers above 400G under the defaults), bounded to
// 1us..1s; with credits off it is DefaultReorderHold; a written hold is used as written
// (Reorder), and out of range refused.
func TestAutoReorderHold(t *testing.T) {
	const rtt = 9 * sim.Microsecond
	off := false
	for _, c := range []struct {
		name   string
		c      Config
		egress []sim.Rate
		want   sim.Time
	}{
		{"2-tier 100G", Config{}, []sim.Rate{100 * sim.Gbps, 100 * sim.Gbps, 100 * sim.Gbps}, rtt + 3*(100*sim.Gbps).TxTime(128<<10)},
		{"3-tier 100G", Config{}, []sim.Rate{100 * sim.Gbps, 100 * sim.Gbps, 100 * sim.Gbps, 100 * sim.Gbps, 100 * sim.Gbps}, rtt + 5*(100*sim.Gbps).TxTime(128<<10)},
		{"2-tier 400G", Config{}, []sim.Rate{400 * sim.Gbps, 400 * sim.Gbps, 400 * sim.Gbps}, rtt + 3*(400*sim.Gbps).TxTime(128<<10)},
		{"2-tier 800G scaled", Config{}, []sim.Rate{800 * sim.Gbps, 800 * sim.Gbps, 800 * sim.Gbps}, rtt + 3*(800*sim.Gbps).TxTime(256<<10)},
		{"800G given buffer", Config{Credits: Credits{BufferPerVL: 64 << 10}}, []sim.Rate{800 * sim.Gbps}, rtt + (800 * sim.Gbps).TxTime(64<<10)},
		{"1G 1 GiB: bounded to 1s", Config{Credits: Credits{BufferPerVL: 1 << 30}}, []sim.Rate{sim.Gbps, sim.Gbps}, MaxReorderHold},
		{"credits off", Config{Credits: Credits{Enabled: &off}}, []sim.Rate{100 * sim.Gbps}, DefaultReorderHold},
		{"no hop", Config{}, nil, DefaultReorderHold},
	} {
		if got := c.c.AutoReorderHold(rtt, c.egress); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := (Config{Credits: Credits{BufferPerVL: 8 << 10}}).AutoReorderHold(0, []sim.Rate{800 * sim.Gbps}); got != MinReorderHold {
		t.Errorf("tiny: %v, want the %v floor", got, MinReorderHold)
	}
	on := true
	given := Config{OutOfOrder: OutOfOrder{Enabled: &on, Hold: 7 * sim.Microsecond}}.WithDefaults()
	if _, h := given.Reorder(false).Reorder(); h != 7*sim.Microsecond {
		t.Errorf("written hold: %v in force, want 7us", h)
	}
	for _, h := range []sim.Time{sim.Nanosecond, 999 * sim.Nanosecond, sim.Second + 1, -sim.Microsecond} {
		err := Config{OutOfOrder: OutOfOrder{Hold: h}}.WithDefaults().Validate("transport.ib")
		if err == nil || !strings.Contains(err.Error(), "transport.ib.out_of_order.hold") || !strings.Contains(err.Error(), "allowed 1us..1s") {
			t.Errorf("hold %v: %v", h, err)
		}
	}
}

// TestCheckVLsSweep sweeps the switch queues' classes (1..4), every set of VLs given a
// weight in the low table and the SL of every QP (0..4; SL 15 refused by Validate): under
// arbitration tables the block is refused exactly when a VL it uses (VL 0 for ACKs, the
// SL's data VL, each folded into a port's last class) has no weight, and the error names
// the field and that VL; without tables every mapping is accepted.
func TestCheckVLsSweep(t *testing.T) {
	for classes := 1; classes <= 4; classes++ {
		for mask := 0; mask < 1<<classes; mask++ {
			var low []fabric.VLArbEntry
			for v := 0; v < classes; v++ {
				w := 0
				if mask&(1<<v) != 0 {
					w = 1 + v
				}
				low = append(low, fabric.VLArbEntry{VL: v, Weight: w})
			}
			for sl := 0; sl <= 4; sl++ {
				c := Config{SL: sl, Credits: Credits{Low: low}}.WithDefaults()
				if err := c.Validate("transport.ib"); err != nil {
					t.Fatalf("classes %d, sl %d: %v", classes, sl, err)
				}
				data := DefaultVL(sl, classes)
				starved := -1
				for _, v := range []int{0, data} {
					if mask&(1<<v) == 0 && starved < 0 {
						starved = v
					}
				}
				err := c.CheckVLs("transport.ib", -1, classes, classes, classes)
				if starved < 0 && err != nil {
					t.Errorf("classes %d, weights on %04b, sl %d: %v; want none", classes, mask, sl, err)
				}
				if starved >= 0 && (err == nil || !strings.Contains(err.Error(), fmt.Sprintf("transport.ib.credits.high, low: VL %d, which carries", starved))) {
					t.Errorf("classes %d, weights on %04b, sl %d (VL %d): %v; want VL %d named", classes, mask, sl, data, err, starved)
				}
				if err := (Config{SL: sl}).WithDefaults().CheckVLs("transport.ib", -1, classes, classes, classes); err != nil {
					t.Errorf("no tables: %v", err)
				}
			}
		}
	}
}

// FuzzCheckVLs: any tables, SLs, SL-to-VL map and queue classes are either refused with a
// message naming a transport.ib field, or every VL in use has a weight on every port (no
// VL the arbiter would never serve); never a panic.
func FuzzCheckVLs(f *testing.F) {
	f.Add([]byte{0, 4, 1, 4}, uint8(0), uint8(2), uint8(2), []byte{}, []byte{})
	f.Add([]byte{1, 0}, uint8(1), uint8(3), uint8(2), []byte{2}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, tab []byte, sl, sw, nic uint8, slToVL, trafficSL []byte) {
		var low []fabric.VLArbEntry
		for i := 0; i+1 < len(tab) && i < 32; i += 2 {
			low = append(low, fabric.VLArbEntry{VL: int(tab[i] % 10), Weight: int(tab[i+1])})
		}
		c := Config{SL: int(sl % 17), Credits: Credits{Low: low}}
		for i, v := range slToVL {
			if i < 16 {
				c.SLToVL = append(c.SLToVL, int(v%10))
			}
		}
		for i, v := range trafficSL {
			if i < 4 {
				c.TrafficSL = append(c.TrafficSL, int(v%17))
			}
		}
		c = c.WithDefaults()
		classes := []int{1 + int(sw%fabric.MaxClasses), 1 + int(nic%fabric.MaxClasses)}
		err := c.Validate("transport.ib")
		if err == nil {
			err = c.CheckVLs("transport.ib", -1, classes...)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "transport.ib.") {
				t.Fatalf("error names no field: %v", err)
			}
			return
		}
		if len(low) == 0 {
			return // no tables: strict priority serves every VL
		}
		for _, n := range classes {
			for _, u := range c.VLsInUse(classes[0]) {
				v := min(u, n-1)
				w := 0
				for _, e := range low {
					if e.VL == v {
						w += e.Weight
					}
				}
				if w == 0 {
					t.Fatalf("accepted, but VL %d (of %d, ports of %d classes) has no weight: %+v", v, u, n, c)
				}
			}
		}
	})
}

// TestAutoReorderFanIn: the automatic hold_per_fan_in is the drain term of the automatic hold
// (one buffer per VL per switch hop at its egress rate), 0 with credits off or no hop; Reorder
// hands it and fan_in_max to the RC engine; out-of-range values are refused naming the field.
func TestAutoReorderFanIn(t *testing.T) {
	off := false
	for _, c := range []struct {
		name   string
		c      Config
		egress []sim.Rate
		want   sim.Time
	}{
		{"2-tier 100G", Config{}, []sim.Rate{100 * sim.Gbps, 100 * sim.Gbps, 100 * sim.Gbps}, 3 * (100 * sim.Gbps).TxTime(128<<10)},
		{"3-tier 400G", Config{}, []sim.Rate{400 * sim.Gbps, 400 * sim.Gbps, 400 * sim.Gbps, 400 * sim.Gbps, 400 * sim.Gbps}, 5 * (400 * sim.Gbps).TxTime(128<<10)},
		{"2-tier 800G scaled", Config{}, []sim.Rate{800 * sim.Gbps, 800 * sim.Gbps, 800 * sim.Gbps}, 3 * (800 * sim.Gbps).TxTime(256<<10)},
		{"1G 1 GiB: bounded to 1s", Config{Credits: Credits{BufferPerVL: 1 << 30}}, []sim.Rate{sim.Gbps, sim.Gbps}, MaxReorderHold},
		{"credits off", Config{Credits: Credits{Enabled: &off}}, []sim.Rate{100 * sim.Gbps}, 0},
		{"no hop", Config{}, nil, 0},
	} {
		if got := c.c.AutoReorderFanIn(c.egress); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	on := true
	given := Config{OutOfOrder: OutOfOrder{Enabled: &on, Hold: 7 * sim.Microsecond, HoldPerFanIn: 3 * sim.Microsecond, FanInMax: 15}}.WithDefaults()
	if per, m := given.Reorder(false).ReorderFanIn(); per != 3*sim.Microsecond || m != 15 {
		t.Errorf("written fan-in: %v, %d in force, want 3us, 15", per, m)
	}
	for _, c := range []struct {
		o     OutOfOrder
		field string
	}{
		{OutOfOrder{HoldPerFanIn: -sim.Microsecond}, "hold_per_fan_in"},
		{OutOfOrder{HoldPerFanIn: sim.Second + 1}, "hold_per_fan_in"},
		{OutOfOrder{FanInMax: -1}, "fan_in_max"},
		{OutOfOrder{FanInMax: MaxFanIn + 1}, "fan_in_max"},
	} {
		err := Config{OutOfOrder: c.o}.WithDefaults().Validate("transport.ib")
		if err == nil || !strings.Contains(err.Error(), "transport.ib.out_of_order."+c.field) || !strings.Contains(err.Error(), "allowed") {
			t.Errorf("%+v: %v", c.o, err)
		}
	}
	for _, o := range []OutOfOrder{{HoldPerFanIn: sim.Second}, {FanInMax: MaxFanIn}, {FanInMax: 1}} {
		if err := (Config{OutOfOrder: o}).WithDefaults().Validate("transport.ib"); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
