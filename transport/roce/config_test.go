package roce

import (
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func TestConfigDefaults(t *testing.T) {
	c := Defaults()
	want := Config{
		QPsPerPeer: 1, PayloadBytes: 4096, HeaderBytes: 82, AckEvery: 1, Window: 0, RTO: 4294967296 * sim.Nanosecond, // NCCL_IB_TIMEOUT 20
		RetryCount: 7, CNPInterval: 20 * sim.Microsecond,
		DCQCN: DCQCNConfig{Profile: DCQCNProfileProduction,
			G: 1.0 / 256, InitialAlpha: 1, AlphaTimer: 55 * sim.Microsecond, RateIncreaseTimer: 10 * sim.Microsecond,
			ByteCounter: 0, FastRecoverySteps: 2, MinRate: 100 * sim.Mbps,
		},
	}
	if c != want {
		t.Fatalf("Defaults() =\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(ConfigPath); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	// WithDefaults keeps what is set.
	set := Config{PayloadBytes: 1024, AckEvery: 4, Window: 1 << 20, RTO: 67108864 * sim.Nanosecond, RetryCount: 3,
		DCQCN: DCQCNConfig{Disabled: true, FastRecoverySteps: 2, RateAI: 5 * sim.Mbps}}
	got := set.WithDefaults()
	if got.PayloadBytes != 1024 || got.AckEvery != 4 || got.Window != 1<<20 || got.RTO != 67108864*sim.Nanosecond ||
		got.RetryCount != 3 || !got.DCQCN.Disabled || got.DCQCN.FastRecoverySteps != 2 || got.DCQCN.RateAI != 5*sim.Mbps ||
		got.HeaderBytes != 82 || got.DCQCN.G != 1.0/256 {
		t.Fatalf("WithDefaults overwrote or missed fields: %+v", got)
	}
	// The profiles scale with the line rate across 25G..800G: production R_AI = line / 170 and
	// B = 40 us of line rate; paper R_AI = line / 1000 and B = 10 MB.
	for _, g := range []int64{25, 100, 400, 800} {
		line := sim.Rate(g) * sim.Gbps
		r := Defaults().DCQCN.Resolve(line)
		if r.RateAI != line/170 || r.RateHAI != 10*(line/170) || int64(r.ByteCounter) != line.BytesIn(40*sim.Microsecond) {
			t.Errorf("production at %dG: R_AI %v, R_HAI %v, B %v; want line/170, 10x, 40 us of line", g, r.RateAI, r.RateHAI, r.ByteCounter)
		}
		p := Config{DCQCN: DCQCNConfig{Profile: DCQCNProfilePaper}}.WithDefaults()
		pr := p.DCQCN.Resolve(line)
		if p.CNPInterval != 50*sim.Microsecond || pr.RateIncreaseTimer != 55*sim.Microsecond || pr.ByteCounter != 10_000_000 ||
			pr.FastRecoverySteps != 5 || pr.RateAI != line/1000 || pr.RateHAI != 10*(line/1000) {
			t.Errorf("paper at %dG: %+v (CNP interval %v); want the [DCQCN] values", g, pr, p.CNPInterval)
		}
	}
	if err := (Config{DCQCN: DCQCNConfig{Profile: "fast"}}).WithDefaults().Validate(ConfigPath); err == nil || !strings.Contains(err.Error(), "transport.roce.dcqcn.profile: \"fast\" is not a DCQCN profile") {
		t.Errorf("unknown profile: %v", err)
	}
}

// TestConfigValidate: each bad field is named by its YAML path, with the value and what is
// allowed.
func TestConfigValidate(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.PayloadBytes = 1500 }, "transport.roce.payload_bytes: 1500 is not an IBTA path MTU; allowed 256, 512"},
		{func(c *Config) { c.HeaderBytes = 2000 }, "transport.roce.header_bytes: 2000 is out of range"},
		{func(c *Config) { c.AckEvery = -2 }, "transport.roce.ack_every: -2"},
		{func(c *Config) { c.Window = -1 }, "transport.roce.window"},
		{func(c *Config) { c.Window = 100 }, "transport.roce.window: 100B is below one full packet (4194 B)"},
		{func(c *Config) { c.RTO = 10 * sim.Nanosecond }, "transport.roce.rto: 10ns is out of range; allowed 1us.."},
		{func(c *Config) { c.RTO = 3 * sim.Hour }, "transport.roce.rto"},
		{func(c *Config) { c.RetryCount = 8 }, "transport.roce.retry_count: 8 is out of range; allowed 1..7"},
		{func(c *Config) { c.CNPInterval = -1 }, "transport.roce.cnp_interval"},
		{func(c *Config) { c.DCQCN.G = 0 - 1 }, "transport.roce.dcqcn.g: -1 is out of range; allowed (0, 1]"},
		{func(c *Config) { c.DCQCN.G = math.Inf(1) }, "transport.roce.dcqcn.g"},
		{func(c *Config) { c.DCQCN.InitialAlpha = 1.5 }, "transport.roce.dcqcn.initial_alpha"},
		{func(c *Config) { c.DCQCN.AlphaTimer = -sim.Microsecond }, "transport.roce.dcqcn.alpha_timer"},
		{func(c *Config) { c.DCQCN.RateIncreaseTimer = 2 * sim.Second }, "transport.roce.dcqcn.rate_increase_timer"},
		{func(c *Config) { c.DCQCN.ByteCounter = -5 }, "transport.roce.dcqcn.byte_counter"},
		{func(c *Config) { c.DCQCN.FastRecoverySteps = 100 }, "transport.roce.dcqcn.fast_recovery_steps: 100"},
		{func(c *Config) { c.DCQCN.RateAI = -1 }, "transport.roce.dcqcn.rate_ai"},
		{func(c *Config) { c.DCQCN.RateHAI = 2 * sim.Pbps }, "transport.roce.dcqcn.rate_hai"},
		{func(c *Config) { c.DCQCN.MinRate = 1 }, "transport.roce.dcqcn.min_rate: 1bps is out of range"},
	}
	for _, tc := range cases {
		c := Defaults()
		tc.mod(&c)
		err := c.Validate(ConfigPath)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v; want an error starting %q", c, err, tc.want)
		}
	}
	c := Defaults()
	c.AckEvery = 0
	if err := c.Validate(""); err == nil || !strings.HasPrefix(err.Error(), "ack_every: 0") {
		t.Errorf("empty prefix: %v; want a bare field name", err)
	}
}
