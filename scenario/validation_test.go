package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// valYAML is a small scenario: an 8-plane Clos of 16 hosts; %s the fabric block (may be
// empty), %s the transport, %s the traffic list, %s the faults block (may be empty).
const valYAML = `
topology: {clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}}
%s
transport: %s
traffic: %s
%s
run: {duration: 1ms}
`

func valScenario(fab, tr, traffic, faults string) (*Scenario, error) {
	return Parse([]byte(fmt.Sprintf(valYAML, fab, tr, traffic, faults)))
}

// wantErr checks that err names every part of want (path, value, what is allowed), or that
// it is nil when want is empty.
func wantErr(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error; want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

// A profile fills in only the queue settings the scenario leaves out, queue by queue:
// enabled: false is kept, switch_queue's ECN is not the mrc profile's last hop's, and a block
// of thresholds without enabled is on where the profile turns the feature on.
func TestProfileKeepsGivenQueueSettings(t *testing.T) {
	const mrcT, roceT, rawT = "{kind: mrc}", "{kind: roce}", ""
	const mrcTraffic, rawTraffic = "[{pattern: permutation, bytes: 1MiB}]", "[{pattern: permutation, load: 0.5}]"
	cases := []struct {
		name, fabric, tr string
		want             QueueGiven
		err              []string
		check            func(f *Fabric) string
	}{
		{"mrc: nothing given", "", mrcT, QueueGiven{}, nil, nil},
		{"mrc: trim off on both queues", "fabric: {switch_queue: {trim: {enabled: false}}, last_hop_queue: {trim: {enabled: false}}}", mrcT,
			QueueGiven{SwitchTrim: true, LastTrim: true}, nil, func(f *Fabric) string {
				if f.SwitchQueue.Trim.Enabled || f.LastHopQueue.Trim.Enabled {
					return "trimming left on"
				}
				return ""
			}},
		{"mrc: switch ECN off", "fabric: {switch_queue: {ecn: {enabled: false}}}", mrcT, QueueGiven{SwitchECN: true}, nil, nil},
		{"mrc: switch trim off keeps the last hop's to the profile", "fabric: {switch_queue: {trim: {enabled: false}}}", mrcT,
			QueueGiven{SwitchTrim: true}, nil, nil},
		{"mrc: own switch ECN is not the last hop's", "fabric: {switch_queue: {ecn: {enabled: true, kmin: 20KB, kmax: 80KB, pmax: 0.5}}}", mrcT,
			QueueGiven{SwitchECN: true}, nil, func(f *Fabric) string {
				if e := f.SwitchQueue.ECN; !e.Enabled || e.Kmin != 20000 || e.Kmax != 80000 || e.Pmax != 0.5 {
					return fmt.Sprintf("switch ECN %+v", e)
				}
				return ""
			}},
		{"mrc: thresholds without enabled mark, pmax from the profile", "fabric: {switch_queue: {ecn: {kmin: 20KB, kmax: 80KB}}}", mrcT,
			QueueGiven{SwitchECN: true}, nil, func(f *Fabric) string {
				if e := f.SwitchQueue.ECN; !e.Enabled || e.Pmax != mrcnic.ProfilePmax {
					return fmt.Sprintf("switch ECN %+v; want enabled, pmax 1", e)
				}
				return ""
			}},
		{"mrc: enabled true alone leaves the thresholds to the profile", "fabric: {switch_queue: {ecn: {enabled: true}, trim: {enabled: true}}}", mrcT,
			QueueGiven{}, nil, nil},
		{"mrc: trim threshold without enabled trims", "fabric: {switch_queue: {trim: {threshold: 50KB}}}", mrcT,
			QueueGiven{SwitchTrim: true}, nil, func(f *Fabric) string {
				if q := f.SwitchQueue.Trim; !q.Enabled || q.Threshold != 50000 {
					return fmt.Sprintf("switch trim %+v", q)
				}
				return ""
			}},
		{"mrc: header limit alone is not a trim setting", "fabric: {switch_queue: {trim: {header_limit: 128KiB}}}", mrcT, QueueGiven{}, nil, nil},
		{"mrc: switch limit is copied to the last hop", "fabric: {switch_queue: {limit: 256KiB}}", mrcT,
			QueueGiven{SwitchLimit: true, LastLimit: true}, nil, nil},
		{"mrc: last hop trim enabled alone is the profile's", "fabric: {last_hop_queue: {trim: {enabled: true}, ecn: {enabled: false}}}", mrcT,
			QueueGiven{LastECN: true}, nil, nil},
		{"mrc: through an anchor, alias and merge key", "fabric: {switch_queue: &q {ecn: {enabled: false}, trim: {enabled: false}}, last_hop_queue: {<<: *q, limit: 2MiB}}", mrcT,
			QueueGiven{SwitchECN: true, SwitchTrim: true, LastLimit: true, LastECN: true, LastTrim: true}, nil, func(f *Fabric) string {
				if f.LastHopQueue.Trim.Enabled || f.LastHopQueue.Limit != 2<<20 {
					return fmt.Sprintf("last hop %+v", *f.LastHopQueue)
				}
				return ""
			}},
		{"mrc: last hop thresholds without enabled", "fabric: {last_hop_queue: {ecn: {kmin: 20KB, kmax: 80KB}}}", mrcT, QueueGiven{},
			[]string{"fabric.last_hop_queue.ecn.enabled", "missing", "mrc profile turns it off at the last hop", "enabled: true"}, nil},
		{"roce: own switch ECN is copied to the last hop", "fabric: {switch_queue: {ecn: {enabled: true, kmin: 50KB, kmax: 200KB, pmax: 0.1}}}", roceT,
			QueueGiven{SwitchECN: true, LastECN: true}, nil, func(f *Fabric) string {
				if f.LastHopQueue.ECN != f.SwitchQueue.ECN {
					return fmt.Sprintf("last hop ECN %+v, switch %+v", f.LastHopQueue.ECN, f.SwitchQueue.ECN)
				}
				return ""
			}},
		{"roce: thresholds without enabled mark with pmax 0.2", "fabric: {switch_queue: {ecn: {kmin: 50KB, kmax: 200KB}}}", roceT,
			QueueGiven{SwitchECN: true, LastECN: true}, nil, func(f *Fabric) string {
				if e := f.LastHopQueue.ECN; !e.Enabled || e.Pmax != rocenic.ProfilePmax {
					return fmt.Sprintf("last hop ECN %+v", e)
				}
				return ""
			}},
		{"roce: trim threshold without enabled", "fabric: {switch_queue: {trim: {threshold: 50KB}}}", roceT, QueueGiven{},
			[]string{"fabric.switch_queue.trim.enabled", "missing", "roce profile turns it off"}, nil},
		{"none: thresholds without enabled", "fabric: {switch_queue: {ecn: {kmin: 20KB, kmax: 80KB}}}", rawT, QueueGiven{},
			[]string{"fabric.switch_queue.ecn.enabled", "missing", "profile none turns nothing on"}, nil},
		{"none: explicit blocks as before", "fabric: {switch_queue: {ecn: {enabled: true, kmin: 20KB, kmax: 80KB, pmax: 0.2}, trim: {enabled: true, threshold: 50KB}}}", rawT,
			QueueGiven{SwitchECN: true, SwitchTrim: true, LastECN: true, LastTrim: true}, nil, func(f *Fabric) string {
				if *f.LastHopQueue != f.SwitchQueue {
					return "last hop is not a copy of switch_queue"
				}
				return ""
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traffic := mrcTraffic
			if c.tr == rawT {
				traffic = rawTraffic
			}
			tr := c.tr
			if tr == "" {
				tr = "{kind: raw}"
			}
			sc, err := valScenario(c.fabric, tr, traffic, "")
			wantErr(t, err, c.err)
			if err != nil {
				return
			}
			if got := sc.Fabric.Given(); got != c.want {
				t.Errorf("Given() = %+v\nwant      %+v", got, c.want)
			}
			if c.check != nil {
				if msg := c.check(&sc.Fabric); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

// mustParse returns a valid MRC scenario of valYAML (for its topology).
func mustParse(t *testing.T) *Scenario {
	t.Helper()
	sc, err := valScenario("", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB}]", "")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// A scenario built in Go (not decoded) is judged by its values, as before presence was
// recorded.
func TestProfileGivenFromValues(t *testing.T) {
	sc := &Scenario{Transport: Transport{Kind: "mrc"}, Traffic: []Traffic{{Pattern: PatternPermutation, Bytes: 1 << 20}}}
	sc.Topology.Clos = mustParse(t).Topology.Clos
	sc.Fabric.SwitchQueue.Trim = fabric.TrimConfig{Enabled: true, Threshold: 50000}
	if err := sc.Resolve(); err != nil {
		t.Fatal(err)
	}
	if got, want := sc.Fabric.Given(), (QueueGiven{SwitchTrim: true}); got != want {
		t.Errorf("Given() = %+v, want %+v", got, want)
	}
}

// ecn and trimmable flag raw packets; under a transport even false is unused, so it is an
// error like the other raw-only fields.
func TestTrafficRawOnlyFlags(t *testing.T) {
	cases := []struct {
		name, tr, traffic string
		err               []string
	}{
		{"mrc trimmable false", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, trimmable: false}]",
			[]string{"traffic[0].trimmable", "false", "applies to transport raw only", "trimmable", "fabric.switch_queue.trim: {enabled: false}"}},
		{"mrc ecn false", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, ecn: false}]",
			[]string{"traffic[0].ecn", "false", "applies to transport raw only", "fabric.switch_queue.ecn: {enabled: false}"}},
		{"mrc ecn true", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, ecn: true}]",
			[]string{"traffic[0].ecn", "true", "applies to transport raw only"}},
		{"roce trimmable false", "{kind: roce}", "[{pattern: permutation, bytes: 1MiB}, {pattern: permutation, bytes: 1MiB, trimmable: false}]",
			[]string{"traffic[1].trimmable", "false", "raw only", "RoCE"}},
		{"mrc without them", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB}]", nil},
		{"mrc null is left out", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, ecn: ~}]", nil},
		{"raw false", "{kind: raw}", "[{pattern: permutation, load: 0.5, ecn: false, trimmable: false}]", nil},
		{"raw true", "{kind: raw}", "[{pattern: permutation, load: 0.5, ecn: true, trimmable: true}]", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", c.tr, c.traffic, "")
			wantErr(t, err, c.err)
		})
	}
}

// bytes: 0 is not a transfer size, and is told apart from bytes left out.
func TestTrafficZeroBytes(t *testing.T) {
	cases := []struct {
		name, traffic string
		err           []string
	}{
		{"group zero", "[{pattern: permutation, bytes: 0}]", []string{"traffic[0].bytes: 0B", "want a positive size such as 4MiB"}},
		{"group zero with flows", "[{pattern: flows, bytes: 0, flows: [{src: 0, dst: 1}]}]", []string{"traffic[0].bytes: 0B", "positive size"}},
		{"group zero written 0B", "[{pattern: permutation, bytes: 0B}]", []string{"traffic[0].bytes: 0B", "positive size"}},
		{"flow zero", "[{pattern: flows, bytes: 1MiB, flows: [{src: 0, dst: 1, bytes: 0}]}]",
			[]string{"traffic[0].flows[0].bytes: 0B", "positive size", "leave it out for the group's bytes"}},
		{"group missing", "[{pattern: permutation}]", []string{"traffic[0].bytes: missing"}},
		{"flow and group missing", "[{pattern: flows, flows: [{src: 0, dst: 1}]}]", []string{"traffic[0].flows[0].bytes: missing"}},
		{"flow takes the group's", "[{pattern: flows, bytes: 1MiB, flows: [{src: 0, dst: 1}]}]", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", "{kind: mrc}", c.traffic, "")
			wantErr(t, err, c.err)
		})
	}
	// Under raw, bytes is a transport field: even 0 is an error.
	_, err := valScenario("", "{kind: raw}", "[{pattern: permutation, load: 0.5, bytes: 0}]", "")
	wantErr(t, err, []string{"traffic[0].bytes: 0B is set, but transport raw paces flows by load or rate"})
}

// transport as a bare value gets a hint of the mapping meant.
func TestTransportScalarHint(t *testing.T) {
	cases := []struct{ tr, want string }{
		{"mrc", `transport (line 4): want a mapping such as {kind: mrc}, got "mrc"`},
		{"roce", `transport (line 4): want a mapping such as {kind: roce}, got "roce"`},
		{"[mrc, roce]", `transport (line 4): want a mapping such as {kind: mrc}, got a list`},
		{`"a b"`, `transport (line 4): want a mapping such as {kind: mrc}, got "a b"`},
	}
	for _, c := range cases {
		t.Run(c.tr, func(t *testing.T) {
			_, err := valScenario("", c.tr, "[{pattern: permutation, bytes: 1MiB}]", "")
			if err == nil || err.Error() != c.want {
				t.Errorf("err = %v\nwant  %s", err, c.want)
			}
		})
	}
}

// transport.mrc.ev's active set and backup pool split equally over the planes of any
// topology kind; left out, they default to multiples of the planes.
func TestEVSplitOverPlanes(t *testing.T) {
	cases := []struct {
		name, topo, ev string
		active, backup int
		err            []string
	}{
		{"default on 8 planes", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "", 128, 64, nil},
		{"default on 6 planes", "clos: {tiers: 2, planes: 6, radix: 16, hosts: 16, host_link: 100G}", "", 126, 66, nil},
		{"default on 5 planes", "fat_tree: {k: 4, planes: 5, host_link: 100G}", "", 125, 65, nil},
		{"active 8 on 8 planes: a backup per plane", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 8}", 8, 8, nil},
		{"active 16, no backup", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 16, backup: -1}", 16, -1, nil},
		{"active 9 on 8 planes", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 9}", 0, 0,
			[]string{"transport.mrc.ev.active: 9 does not split equally over the 8 planes of the topology; use a multiple of 8 (e.g. 8 or 16)"}},
		{"active 3 on 8 planes", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 3}", 0, 0,
			[]string{"transport.mrc.ev.active", "3 EVs cannot cover the 8 planes", "multiple of 8"}},
		{"backup 4 on 8 planes", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 16, backup: 4}", 0, 0,
			[]string{"transport.mrc.ev.backup: 4 does not split equally over the 8 planes", "multiple of 8", "-1 for none"}},
		{"rail 2 planes", "rail: {servers: 4, gpus_per_server: 4, planes: 2, radix: 16, host_link: 100G}", "{active: 7}", 0, 0,
			[]string{"transport.mrc.ev.active: 7 does not split equally over the 2 planes", "(e.g. 6 or 8)"}},
		{"fat tree 4 planes", "fat_tree: {k: 4, planes: 4, host_link: 100G}", "{active: 130}", 0, 0,
			[]string{"transport.mrc.ev.active: 130", "4 planes", "(e.g. 128 or 132)"}},
		{"torus has 1 plane", "torus: {dims: 2x2x2, link_rate: 100G}", "{active: 7, backup: 3}", 7, 3, nil},
		{"mesh has 1 plane", "mesh: {nodes: 4, link_rate: 100G}", "{active: 9}", 9, 4, nil},
		{"active 24 on 8 planes: 2 backups per plane", "clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}", "{active: 24}", 24, 16, nil},
		{"active 48 on 6 planes: active/2 splits", "clos: {tiers: 2, planes: 6, radix: 16, hosts: 16, host_link: 100G}", "{active: 48}", 48, 24, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := "{kind: mrc}"
			if c.ev != "" {
				tr = "{kind: mrc, mrc: {ev: " + c.ev + "}}"
			}
			sc, err := Parse([]byte(fmt.Sprintf("topology: {%s}\ntransport: %s\ntraffic: [{pattern: permutation, bytes: 1MiB}]\n", c.topo, tr)))
			wantErr(t, err, c.err)
			if err != nil {
				return
			}
			if ev := sc.Transport.Block().(*mrc.Config).EV; ev.Active != c.active || ev.Backup != c.backup {
				t.Errorf("active %d, backup %d; want %d, %d", ev.Active, ev.Backup, c.active, c.backup)
			}
		})
	}
}

// A fault's entropy under MRC must be an EV of a plane of a link it names: EVs are numbered
// plane by plane (default 128 active + 64 backup over 8 planes: 24 per plane).
func TestFaultEntropyRange(t *testing.T) {
	const mrcT = "{kind: mrc}"
	cases := []struct {
		name, tr, ev, fault string
		err                 []string
	}{
		{"plane 0 EV on a plane 0 link", mrcT, "", "{at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 3}", nil},
		{"plane 0 backup EV", mrcT, "", "{at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 23}", nil},
		{"plane 1 EV on a plane 1 host link", mrcT, "", "{at: 0s, nic: h3.p1, action: loss, loss: 1, entropy: 24}", nil},
		{"every link: some are on the EV's plane", mrcT, "", `{at: 0s, link: "*", action: loss, loss: 0.2, entropy: 100}`, nil},
		{"beyond every EV", mrcT, "", "{at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 192}",
			[]string{"faults[0].entropy: 192 is beyond the 192 EVs of a QP (0..191", "link p0.t0-0.up1 is on plane 0: allowed 0..23"}},
		{"EV of another plane", mrcT, "", "{at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 30}",
			[]string{"faults[0].entropy: 30 is an EV of plane 1 (EVs 24..47)", "link p0.t0-0.up1 is on plane 0", "allowed 0..23 there", "16 active then 8 backup"}},
		{"EV of another plane, direction in", mrcT, "", "{at: 0s, link: h3.p2, action: loss, loss: 1, entropy: 0, direction: in}",
			[]string{"faults[0].entropy: 0 is an EV of plane 0", "on plane 2", "allowed 48..71"}},
		{"random process on another plane", mrcT, "", `{link: "p5.t0-*.up*", action: loss, loss: 1, entropy: 1, random: {per_day: 1e9, repair: {dist: fixed, mean: 10us}}}`,
			[]string{"faults[0].entropy: 1 is an EV of plane 0", "on plane 5", "allowed 120..143"}},
		{"smaller EV sets", "{kind: mrc, mrc: {ev: {active: 16, backup: -1}}}", "", "{at: 0s, link: p1.t0-0.up0, action: loss, loss: 1, entropy: 16}",
			[]string{"faults[0].entropy: 16 is beyond the 16 EVs of a QP (0..15", "on plane 1: allowed 2..3"}},
		{"smaller EV sets, in range", "{kind: mrc, mrc: {ev: {active: 16, backup: -1}}}", "", "{at: 0s, link: p1.t0-0.up0, action: loss, loss: 1, entropy: 3}", nil},
		{"roce has no entropy", "{kind: roce}", "", "{at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 3}",
			[]string{"faults[0].entropy: 3 under transport roce", "UDP source port", "mrc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", c.tr, "[{pattern: permutation, bytes: 1MiB}]", "faults:\n  - "+c.fault)
			wantErr(t, err, c.err)
		})
	}
	// Raw traffic's entropy (a sprayed packet's path index) is left alone.
	_, err := valScenario("", "{kind: raw}", "[{pattern: permutation, load: 0.5, path: spray}]", "faults:\n  - {at: 0s, link: p0.t0-0.up1, action: loss, loss: 1, entropy: 1000}")
	wantErr(t, err, nil)
}

// The resolved scenario (the results folder's scenario.yaml) parses again to itself with
// every fix above: no raw-only flags under a transport, EV counts that split, given queue
// settings written out.
func TestResolvedRoundTripAfterFixes(t *testing.T) {
	for _, y := range []string{
		fmt.Sprintf(valYAML, "fabric: {switch_queue: {trim: {enabled: false}, ecn: {kmin: 20KB, kmax: 80KB}}}", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB}]", ""),
		"topology: {clos: {tiers: 2, planes: 6, radix: 16, hosts: 16, host_link: 100G}}\ntransport: {kind: mrc, mrc: {ev: {active: 12}}}\ntraffic: [{pattern: flows, bytes: 1MiB, flows: [{src: 0, dst: 1}]}]\n",
		fmt.Sprintf(valYAML, "", "{kind: roce}", "[{pattern: permutation, bytes: 1MiB}]", ""),
		fmt.Sprintf(valYAML, "", "{kind: raw}", "[{pattern: permutation, load: 0.5, ecn: true}]", ""),
	} {
		sc, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		out, err := Encode(sc)
		if err != nil {
			t.Fatal(err)
		}
		sc2, err := Parse(out)
		if err != nil {
			t.Fatalf("resolved scenario does not parse: %v\n%s", err, out)
		}
		out2, _ := Encode(sc2)
		if string(out) != string(out2) {
			t.Errorf("not a fixed point:\n%s\n---\n%s", out, out2)
		}
	}
}

// Transfers end the run when they complete, so run.duration is only a bound: left out, it
// covers the busiest NIC's bytes (here 64 x 4 MiB into one receiver, about 2.7 ms at 800
// Gb/s) rather than the 1 ms default; given, it caps the packet estimate at what each sender
// can send before it ends (100 GiB in 10 us is about 2,400 packets, not 26 million); and a
// long run's default sampling period grows to stay within the sample cap.
func TestRunDurationForTransfers(t *testing.T) {
	const base = `
topology: {clos: {tiers: 2, planes: 8, radix: 16, hosts: 128, host_link: 100G}}
transport: {kind: mrc}
traffic:
  - %s
%s`
	senders := make([]string, 64)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	incast := fmt.Sprintf("{pattern: incast, senders: [%s], receiver: 0, bytes: 4MiB}", strings.Join(senders, ", "))
	for _, c := range []struct {
		name, traffic, run string
		minDur, maxDur     sim.Time
		err                string
	}{
		{"incast default duration", incast, "", 4 * 2700 * sim.Microsecond, 20 * sim.Millisecond, ""},
		{"small transfer keeps 1ms", "{pattern: permutation, bytes: 64KiB}", "", sim.Millisecond, sim.Millisecond, ""},
		{"given duration kept", incast, "run: {duration: 500us}", 500 * sim.Microsecond, 500 * sim.Microsecond, ""},
		{"huge bytes, short run", "{pattern: flows, bytes: 100GiB, flows: [{src: 0, dst: 9}]}", "run: {duration: 10us}", 10 * sim.Microsecond, 10 * sim.Microsecond, ""},
		{"huge bytes, long run", "{pattern: flows, bytes: 100GiB, flows: [{src: 0, dst: 9}]}", "run: {duration: 2s}", 0, 0, "run.max_packets"},
		{"long run, default sampling", "{pattern: permutation, bytes: 16MiB}", "run: {duration: 2s}", 2 * sim.Second, 2 * sim.Second, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse([]byte(fmt.Sprintf(base, c.traffic, c.run)))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v; want one naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := sc.Run.Duration; d < c.minDur || d > c.maxDur {
				t.Errorf("run.duration %v; want %v to %v", d, c.minDur, c.maxDur)
			}
		})
	}
}

// A trim threshold below one data packet trims every packet even at an empty queue, so no
// transfer could finish: rejected. A transfer starting at or after the 1ms default duration is
// fine when run.duration is left out (it is derived from the transfers).
func TestTrimThresholdAndLateStart(t *testing.T) {
	_, err := valScenario("fabric: {last_hop_queue: {trim: {enabled: true, threshold: 1B}}}", "{kind: mrc}",
		"[{pattern: incast, senders: [1, 2, 3], receiver: 0, bytes: 1MiB}]", "")
	wantErr(t, err, []string{"fabric.last_hop_queue.trim.threshold", "1B", "4230B"})
	sc, err := Parse([]byte(`
topology: {clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}}
transport: {kind: mrc}
traffic: [{pattern: flows, bytes: 1MiB, start: 2ms, flows: [{src: 0, dst: 9}]}]
`))
	if err != nil {
		t.Fatalf("a transfer starting at 2ms with run.duration left out: %v", err)
	}
	if sc.Run.Duration <= 2*sim.Millisecond {
		t.Errorf("derived run.duration %v; want past the 2ms start", sc.Run.Duration)
	}
}

// PFC and ECN inputs under RoCE: a kmin is checked against the queue limit in force (the roce
// profile's under PFC, not the 1 MiB default; a limit written is still checked), a static
// xoff or xon written with alpha is an error naming both, and thresholds below one data packet
// are rejected with the packet size named.
func TestRoCEPFCInputs(t *testing.T) {
	inc := "[{pattern: incast, senders: [1, 2, 3], receiver: 0, bytes: 1MiB}]"
	for _, c := range []struct {
		fab  string
		want []string
	}{
		{"fabric: {switch_queue: {ecn: {kmin: 2MB, kmax: 8MB}}}", nil},
		{"fabric: {switch_queue: {limit: 1MiB, ecn: {kmin: 2MB, kmax: 8MB}}}", []string{"fabric.switch_queue.ecn.kmin", "2000000B", "1MiB"}},
		{"fabric: {pfc: {enabled: false}, switch_queue: {ecn: {kmin: 2MB, kmax: 8MB}}}", []string{"fabric.switch_queue.ecn.kmin", "1MiB"}},
		{"fabric: {pfc: {xoff: 128KiB, alpha: 1}}", []string{"fabric.pfc.xoff", "128KiB", "fabric.pfc.alpha 1", "either xoff"}},
		{"fabric: {pfc: {xon: 64KiB, alpha: 0.5}}", []string{"fabric.pfc.xon", "64KiB", "fabric.pfc.alpha 0.5"}},
		{"fabric: {pfc: {xoff: 100B}}", []string{"fabric.pfc.xoff", "100B", "4194B"}},
		{"fabric: {pfc: {xoff: 4194B}}", nil},
		{"fabric: {pfc: {alpha: 1, reserved: 1KB}}", []string{"fabric.pfc.reserved", "1000B", "4194B"}},
		{"fabric: {pfc: {alpha: 1}}", nil},
	} {
		t.Run(c.fab, func(t *testing.T) {
			_, err := valScenario(c.fab, "{kind: roce}", inc, "")
			wantErr(t, err, c.want)
		})
	}
}

// A rate_ai above the NIC rate names the default of the profile in force: line/170 under
// production (the default), line/1000 under paper.
func TestRoCERateAIMessage(t *testing.T) {
	inc := "[{pattern: incast, senders: [1, 2, 3], receiver: 0, bytes: 1MiB}]"
	for _, c := range []struct {
		tr   string
		want []string
	}{
		{"{kind: roce, roce: {dcqcn: {rate_ai: 200G}}}", []string{"transport.roce.dcqcn.rate_ai", "200Gbps", "production: line/170"}},
		{"{kind: roce, roce: {dcqcn: {profile: paper, rate_ai: 200G}}}", []string{"transport.roce.dcqcn.rate_ai", "paper: line/1000"}},
	} {
		_, err := valScenario("", c.tr, inc, "")
		wantErr(t, err, c.want)
		t.Log(err)
	}
}

// TestIBCreditBuffers: transport.ib.credits' buffers per VL follow one rule, stated once
// (ib.Config.CreditBufferMin): at least the largest data packet's credit blocks (4,160 B at
// the default payload), at most 1 GiB; the error names the field, the value and both
// bounds whichever is broken, and a left-out buffer resolves to the 128 KiB in force (the
// written scenario shows it, not 0B).
func TestIBCreditBuffers(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: ib, ib: {credits: {%s}}}\ntraffic: [{pattern: permutation, bytes: 64KiB}]\n"
	allowed := "allowed at least 4160B (65 blocks of 64 B: the largest packet, 4138 B at payload_bytes 4096) and at most 1GiB"
	for _, c := range []struct {
		block string
		want  []string
	}{
		{"buffer_per_vl: 32B", []string{"transport.ib.credits.buffer_per_vl: 32B", "fewer than the largest packet's 65", allowed}},
		{"buffer_per_vl: 4159B", []string{"transport.ib.credits.buffer_per_vl: 4159B", allowed}},
		{"host_buffer_per_vl: 4KB", []string{"transport.ib.credits.host_buffer_per_vl: 4000B", allowed}},
		{"buffer_per_vl: 2GiB", []string{"transport.ib.credits.buffer_per_vl: 2GiB is out of range", allowed}},
		{"buffer_per_vl: 4160B", nil},
	} {
		_, err := Parse([]byte(fmt.Sprintf(y, c.block)))
		wantErr(t, err, c.want)
	}
	sc, err := Parse([]byte(fmt.Sprintf(y, "")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"buffer_per_vl: 128KiB", "host_buffer_per_vl: 128KiB"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("resolved scenario lacks %q:\n%s", w, out)
		}
	}
}

// TestAdaptiveRoutingDelaysResolved: a left-out fabric.adaptive_routing.notify_delay and
// sm_delay resolve to the delays in force (2us, and fabric.reconvergence), so lockstep
// validate and the results' scenario.yaml show them rather than 0s, and the written scenario
// parses to itself (sm_delay equal to reconvergence is no conflict).
func TestAdaptiveRoutingDelaysResolved(t *testing.T) {
	sc, err := Parse([]byte("topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\nfabric: {adaptive_routing: {enabled: true}, reconvergence: 300ms}\ntransport: {kind: ib}\ntraffic: [{pattern: permutation, bytes: 64KiB}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"notify_delay: 2us", "sm_delay: 300ms"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("resolved scenario lacks %q:\n%s", w, out)
		}
	}
	if _, err := Parse(out); err != nil {
		t.Errorf("the resolved scenario does not parse: %v", err)
	}
}
