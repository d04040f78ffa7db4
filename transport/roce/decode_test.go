package roce_test

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// TestConfigDecodesFromYAML: the yaml tags work with the repository's strict decoder, units
// included, both over a zero value (then WithDefaults) and over Defaults(); unknown keys are
// rejected with the allowed names.
func TestConfigDecodesFromYAML(t *testing.T) {
	const doc = `
payload_bytes: 2048
ack_every: 2
window: 256KiB
rto: 67.108864ms
retry_count: 5
cnp_interval: 4us
dcqcn:
  g: 0.0625
  alpha_timer: 1us
  rate_increase_timer: 300us
  byte_counter: 2MB
  fast_recovery_steps: 1
  rate_ai: 5Mbps
  rate_hai: 50Mbps
  min_rate: 1Mbps
`
	var zero roce.Config
	if err := scenario.Decode([]byte(doc), &zero); err != nil {
		t.Fatal(err)
	}
	over := roce.Defaults()
	if err := scenario.Decode([]byte(doc), &over); err != nil {
		t.Fatal(err)
	}
	got := zero.WithDefaults()
	if got != over {
		t.Fatalf("decoded over zero then defaulted:\n%+v\nover Defaults():\n%+v", got, over)
	}
	if got.PayloadBytes != 2048 || got.AckEvery != 2 || got.Window != 256<<10 || got.RTO != roce.LocalAckTimeout(14) ||
		got.RetryCount != 5 || got.CNPInterval != 4*sim.Microsecond || got.DCQCN.G != 0.0625 ||
		got.DCQCN.AlphaTimer != sim.Microsecond || got.DCQCN.RateIncreaseTimer != 300*sim.Microsecond ||
		got.DCQCN.ByteCounter != 2_000_000 || got.DCQCN.FastRecoverySteps != 1 || got.DCQCN.RateAI != 5*sim.Mbps ||
		got.DCQCN.RateHAI != 50*sim.Mbps || got.DCQCN.MinRate != sim.Mbps || got.HeaderBytes != roce.DefaultHeaderBytes {
		t.Fatalf("decoded %+v", got)
	}
	if err := got.Validate(roce.ConfigPath); err != nil {
		t.Fatal(err)
	}
	var c roce.Config
	err := scenario.Decode([]byte("dcqcn: {rate_increse_timer: 1us}\n"), &c)
	if err == nil || !strings.Contains(err.Error(), "rate_increase_timer") {
		t.Fatalf("misspelt key: %v; want the allowed names listed", err)
	}
}
