package uecnic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport/uec/uecnic"
)

// pdcYAML: two back-to-back all-to-alls of 2 MiB per rank over 8 hosts (each talks to 7 peers) or a traffic
// incast with a host sending three transfers, on a 2-tier Clos of 16 hosts, with transport.uec = %s.
const pdcYAML = `topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec, uec: %s}
%s
run: {seed: 1}
`

const (
	pdcAllToAll = "workload: {collectives: [{op: all_to_all, ranks: 8, bytes: 2MiB, iterations: 2}]}"
	pdcTraffic  = "traffic: [{pattern: incast, receiver: 0, senders: [1, 2, 3, 4], bytes: 256KiB}, {pattern: flows, flows: [{src: 1, dst: 5, bytes: 256KiB}, {src: 1, dst: 6, bytes: 256KiB}]}]"
)

// TestPDCEphemeral: with transport.uec.pdc [UEC §3.5 PDS, ephemeral PDCs] the workload still
// completes; a bound of max_per_nic PDCs per NIC is never exceeded and makes messages wait
// and PDCs close and reopen; an idle timeout alone closes PDCs after their last message; and
// a bound no NIC reaches, without a timeout, changes nothing (the same collective time as
// the default: one PDC per pair for the run), only the counters appear.
func TestPDCEphemeral(t *testing.T) {
	base := run(t, fmt.Sprintf(pdcYAML, "{}", pdcAllToAll))
	bt := base.Summary.Collectives[0].TimeUs
	if d := complete(t, "default", base).Detail.(*uecnic.Detail); d.PDCsOpened != 0 {
		t.Fatalf("default: %d PDCs counted, want the block omitted", d.PDCsOpened)
	}
	for _, c := range []struct {
		block, work string
		max         int
		wantWait    bool
		wantClosed  bool
	}{
		{"{pdc: {max_per_nic: 64}}", pdcAllToAll, 64, false, false},
		{"{pdc: {max_per_nic: 2}}", pdcAllToAll, 2, true, true},
		{"{pdc: {max_per_nic: 1, idle_timeout: 1us}}", pdcAllToAll, 1, true, true},
		{"{pdc: {idle_timeout: 2us}}", pdcAllToAll, 0, false, true},
		{"{pdc: {max_per_nic: 1}}", pdcTraffic, 1, true, true},
	} {
		res := run(t, fmt.Sprintf(pdcYAML, c.block, c.work))
		s := complete(t, c.block, res)
		d := s.Detail.(*uecnic.Detail)
		var tu float64
		if len(res.Summary.Collectives) > 0 {
			tu = res.Summary.Collectives[0].TimeUs
		}
		t.Logf("%s: time %.1f us (default %.1f), JCT %.1f us; PDCs opened %d, closed %d, peak %d, waits %d (mean %.2f us), QPs %d",
			c.block, tu, bt, s.JCTUs, d.PDCsOpened, d.PDCsClosed, d.PDCPeakOpen, d.PDCWaits, d.PDCWaitMeanUs, s.Flows)
		if c.max > 0 && d.PDCPeakOpen > c.max {
			t.Errorf("%s: %d PDCs open at one NIC, bound %d", c.block, d.PDCPeakOpen, c.max)
		}
		if (d.PDCWaits > 0) != c.wantWait || (d.PDCsClosed > 0) != c.wantClosed || d.PDCsOpened == 0 {
			t.Errorf("%s: opened %d, closed %d, waits %d; want waits %v, closes %v", c.block, d.PDCsOpened, d.PDCsClosed, d.PDCWaits, c.wantWait, c.wantClosed)
		}
		if c.work == pdcAllToAll && c.max == 64 && tu != bt {
			t.Errorf("%s: collective time %.3f us, want the default's %.3f (no NIC reaches the bound)", c.block, tu, bt)
		}
		if c.wantClosed && c.work == pdcAllToAll && d.PDCsOpened <= 56 {
			t.Errorf("%s: %d PDCs opened, want more than the 56 pairs (closed ones reopened)", c.block, d.PDCsOpened)
		}
	}
}

// TestPDCConfig: the block's bad values are refused naming the field.
func TestPDCConfig(t *testing.T) {
	for _, c := range []struct{ block, field string }{
		{"{pdc: {idle_timeout: -1us}}", "transport.uec.pdc.idle_timeout"},
		{"{pdc: {max_per_nic: -2}}", "transport.uec.pdc.max_per_nic"},
		{"{pdc: {max_per_nic: 100000}}", "transport.uec.pdc.max_per_nic"},
	} {
		_, err := scenario.Parse([]byte(fmt.Sprintf(pdcYAML, c.block, pdcAllToAll)))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: error %v, want one naming %s", c.block, err, c.field)
		}
	}
}
