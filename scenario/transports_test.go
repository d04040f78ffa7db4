package scenario

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/roce"
)

const (
	trTopo     = "topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100G}}\n"
	trTraffic  = "traffic: [{pattern: permutation, bytes: 1MiB}]\n"
	trWorkload = "workload: {collectives: [{op: all_gather, bytes: 1MiB}]}\n"
)

// TestTransportKindErrors sweeps transport.kind over values that are not transports: the error
// lists raw, the registered transports (sorted) and ideal.
func TestTransportKindErrors(t *testing.T) {
	for _, kind := range []string{"tcp", "MRC", "Roce", "raw ", "none", "irn", "mrc2", "Ideal", "udp"} {
		for _, load := range []string{trTraffic, trWorkload} {
			_, err := Parse([]byte(fmt.Sprintf("%stransport: {kind: %q}\n%s", trTopo, kind, load)))
			want := fmt.Sprintf("transport.kind: %q is not a transport; allowed raw, ib, mrc, roce, uec, ideal", kind)
			if err == nil || err.Error() != want {
				t.Errorf("kind %q: error %v; want %q", kind, err, want)
			}
		}
	}
}

// TestTransportForeignBlock sweeps every kind (left out included) against every registered
// transport's block: a block for a kind not in force is an error naming both, and the block of
// the kind in force, or a null block, is accepted.
func TestTransportForeignBlock(t *testing.T) {
	for _, load := range []struct{ name, yaml, defaultKind string }{{"traffic", trTraffic, "raw"}, {"workload", trWorkload, "mrc"}} {
		for _, kind := range []string{"", "raw", "mrc", "roce", "ideal"} {
			for _, block := range []string{"mrc", "roce"} {
				inForce := kind
				if kind == "" {
					inForce = load.defaultKind
				}
				if load.name == "traffic" && inForce == "ideal" {
					continue // ideal carries workloads only: that error comes first
				}
				kindYAML := ""
				if kind != "" {
					kindYAML = "kind: " + kind + ", "
				}
				ly := load.yaml
				if inForce == "raw" {
					if load.name == "workload" {
						continue // raw carries no collective: that error comes after
					}
					ly = "traffic: [{pattern: permutation}]\n"
				}
				for _, val := range []string{"{}", "null"} {
					doc := fmt.Sprintf("%stransport: {%s%s: %s}\n%s", trTopo, kindYAML, block, val, ly)
					sc, err := Parse([]byte(doc))
					switch {
					case block == inForce || val == "null":
						if err != nil {
							t.Errorf("%s, kind %q, %s: %s: %v", load.name, kind, block, val, err)
						} else if got := sc.Transport.Kind; got != inForce {
							t.Errorf("%s, kind %q: resolved kind %q; want %q", load.name, kind, got, inForce)
						}
					default:
						want := fmt.Sprintf("transport.%s: set, but transport.kind is %q; use kind: %s or remove the block", block, inForce, block)
						if err == nil || err.Error() != want {
							t.Errorf("%s, kind %q, %s: error %v; want %q", load.name, kind, block, err, want)
						}
					}
				}
			}
		}
	}
}

// TestTransportKeys: an unknown key under transport lists kind, ideal and the registered
// kinds; a misspelt key inside a block is named by its full path and line.
func TestTransportKeys(t *testing.T) {
	ev := structInfoOf(reflect.TypeFor[mrc.EVConfig]()).allowed
	rc := structInfoOf(reflect.TypeFor[roce.Config]()).allowed
	cases := []struct{ yaml, want string }{
		{"transport: {kind: raw, bogus: 1}", "transport.bogus (line 1): unknown field; allowed: ib, ideal, kind, mrc, roce, uec"},
		{"transport:\n  kind: mrc\n  Mrc: {}", "transport.Mrc (line 3): unknown field; allowed: ib, ideal, kind, mrc, roce, uec"},
		{"transport:\n  kind: mrc\n  mrc:\n    ev: {actve: 32}", "transport.mrc.ev.actve (line 4): unknown field; allowed: " + ev},
		{"transport:\n  kind: roce\n  roce:\n    qps_per_per: 4", "transport.roce.qps_per_per (line 4): unknown field; allowed: " + rc},
		{"transport: {kind: roce, roce: {qps_per_peer: many}}", `transport.roce.qps_per_peer (line 1): "many" is not an integer`},
		{"transport: {kind: mrc, mrc: [1]}", "transport.mrc (line 1): want a mapping, got a list"},
		{"transport: {kind: roce, qps_per_peer: 4}", "transport.qps_per_peer (line 1): unknown field here; RoCE settings go under transport.roce: transport: {kind: roce, roce: {qps_per_peer: 4}}"},
		{"transport: mrc", `transport (line 1): want a mapping such as {kind: mrc}, got "mrc"`},
		{"transport: 5", `transport (line 1): want a mapping such as {kind: 5}, got "5"`},
		{"transport: [a]", "transport (line 1): want a mapping such as {kind: mrc}, got a list"},
	}
	for _, c := range cases {
		var sc Scenario
		err := Decode([]byte(c.yaml), &sc)
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v; want %q", c.yaml, err, c.want)
		}
	}
}

// TestTransportBlockEncode: blocks decode into the plugins' types, overlay what is already
// there, and encode back under their kinds between kind and ideal, so a decoded scenario
// re-decodes to itself.
func TestTransportBlockEncode(t *testing.T) {
	var a Scenario
	doc := "transport: {ideal: {latency: 1us}, roce: {qps_per_peer: 2}, mrc: {ev: {active: 16}}, kind: raw}\n"
	if err := Decode([]byte(doc), &a); err != nil {
		t.Fatal(err)
	}
	if got := a.Transport.blockKinds(); !reflect.DeepEqual(got, []string{"mrc", "roce"}) {
		t.Fatalf("blocks %v; want mrc, roce", got)
	}
	out, err := Encode(a.Transport)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(string(out), "\n") {
		if line != "" && line[0] != ' ' {
			keys = append(keys, strings.SplitN(line, ":", 2)[0])
		}
	}
	if want := []string{"kind", "mrc", "roce", "ideal"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("keys %v; want %v:\n%s", keys, want, out)
	}
	var b Transport
	if err := Decode(out, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Transport, b) {
		t.Errorf("re-decoded %+v; want %+v", b, a.Transport)
	}
	// Overlay: a second document keeps the block's other fields and never writes through.
	held := a.Transport.blocks["roce"].(*roce.Config)
	if err := Decode([]byte("roce: {rto: 1ms}"), &a.Transport); err != nil {
		t.Fatal(err)
	}
	got := a.Transport.blocks["roce"].(*roce.Config)
	if got == held || got.QPsPerPeer != 2 || held.RTO != 0 || got.RTO == 0 {
		t.Errorf("overlay: %+v (held %+v); want qps_per_peer 2 kept in a copy with rto set", got, held)
	}
}

// TestTransportSetBlock: a block set in Go is the plugin's type, resolved in place of the one
// given; a copied scenario does not share later blocks.
func TestTransportSetBlock(t *testing.T) {
	for _, active := range []int{4, 8, 16, 32, 64} {
		sc := Scenario{Transport: Transport{Kind: "mrc"}, Traffic: []Traffic{{Pattern: PatternPermutation, Bytes: 1 << 20}}}
		sc.Topology = Topology{}
		if err := Decode([]byte(trTopo), &sc); err != nil {
			t.Fatal(err)
		}
		sc.Transport.SetBlock(&mrc.Config{EV: mrc.EVConfig{Active: active}})
		cp := sc
		if err := sc.Resolve(); err != nil {
			t.Fatalf("active %d: %v", active, err)
		}
		m, ok := sc.Transport.Block().(*mrc.Config)
		if !ok || m.EV.Active != active || m.PayloadBytes == 0 {
			t.Errorf("active %d: block %#v", active, sc.Transport.Block())
		}
		if c := cp.Transport.Block().(*mrc.Config); c.PayloadBytes != 0 {
			t.Errorf("active %d: the copy's block was resolved too", active)
		}
	}
	var tr Transport
	tr.Kind = "roce"
	tr.SetBlock(&roce.Config{QPsPerPeer: 3})
	tr.SetBlock(nil)
	if tr.Block() != nil || tr.blocks != nil {
		t.Errorf("SetBlock(nil) left %v", tr.blocks)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("SetBlock of an unregistered type did not panic")
		}
	}()
	tr.SetBlock(&struct{ X int }{})
}

// TestTransportProfileDefaults sweeps the transports: fabric.profile defaults to the
// transport's kind when its plugin has a profile (none otherwise), fabric.pfc defaults to on
// under a lossless one, and profile names outside the registry are errors.
func TestTransportProfileDefaults(t *testing.T) {
	for _, c := range []struct {
		kind, load, profile string
		pfc                 bool
	}{{"raw", "traffic: [{pattern: permutation}]\n", "none", false}, {"mrc", trTraffic, "mrc", false}, {"roce", trTraffic, "roce", true}, {"ideal", trWorkload, "none", false}} {
		sc, err := Parse([]byte(fmt.Sprintf("%stransport: {kind: %s}\n%s", trTopo, c.kind, c.load)))
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		if sc.Fabric.Profile != c.profile || sc.Fabric.PFC.Config().Enabled != c.pfc {
			t.Errorf("%s: profile %q, pfc %v; want %q, %v", c.kind, sc.Fabric.Profile, sc.Fabric.PFC.Config().Enabled, c.profile, c.pfc)
		}
	}
	for _, p := range []string{"raw", "ideal", "dcqcn", "MRC", "default"} {
		_, err := Parse([]byte(fmt.Sprintf("%sfabric: {profile: %s}\n%s", trTopo, p, trTraffic)))
		want := fmt.Sprintf("fabric.profile: %q is not a profile; allowed ib, mrc, roce, uec, none", p)
		if err == nil || err.Error() != want {
			t.Errorf("profile %q: error %v; want %q", p, err, want)
		}
	}
	_, err := Parse([]byte(trTopo + "transport: {kind: mrc}\nfabric: {pfc: {enabled: true}}\n" + trTraffic))
	if want := "fabric.pfc.enabled: true under transport mrc; PFC applies to RoCE (and raw traffic), InfiniBand, MRC, UEC and the ideal network run without it"; err == nil || err.Error() != want {
		t.Errorf("pfc under mrc: %v; want %q", err, want)
	}
}

// TestProbeProfile pins what the shipped profiles turn on, as the resolver probes it from their
// plugins, over topologies and engines: mrc marks every hop but the last and trims everywhere
// (pmax 1, a last hop of its own), roce marks every hop and never trims (pmax 0.2).
func TestProbeProfile(t *testing.T) {
	want := map[string]profileShape{
		"none": {},
		"mrc":  {ok: true, ecn: true, trim: true, lastECN: false, lastTrim: true, pmax: 1, lastApart: true},
		"roce": {ok: true, ecn: true, trim: false, lastECN: true, lastTrim: false, pmax: 0.2},
	}
	for _, planes := range []int{1, 2, 4, 8} {
		for _, rate := range []string{"25G", "100G", "400G", "800G"} {
			var tp Topology
			doc := fmt.Sprintf("clos: {tiers: 2, planes: %d, radix: 16, hosts: 16, host_link: %s}", planes, rate)
			if err := Decode([]byte(doc), &tp); err != nil {
				t.Fatal(err)
			}
			l, err := tp.Describe()
			if err != nil {
				t.Fatal(err)
			}
			for _, fluid := range []bool{false, true} {
				for p, w := range want {
					if got := probeProfile(p, l, fluid); got != w {
						t.Errorf("%s, %d planes, %s, fluid %v: %+v; want %+v", p, planes, rate, fluid, got, w)
					}
				}
			}
		}
	}
}

// TestTransportListMessages: messages that name the transports to use instead list them from
// the registry, in the words they always had.
func TestTransportListMessages(t *testing.T) {
	const train = "workload:\n  training:\n    model: {preset: llama3-8b, global_batch: 64}\n    gpu: {preset: h100}\n    plan: {tp: 8, pp: 2}\n"
	const big = "topology: {clos: {tiers: 2, planes: 2, radix: 32, hosts: 512, host_link: 100G}}\n"
	cases := []struct{ doc, want string }{
		{trTopo + "transport: {kind: raw}\n" + trWorkload, "transport.kind: raw cannot carry a collective's messages; allowed ib or mrc or roce or uec (packet level) or ideal"},
		{big + "transport: {kind: raw}\n" + train, "transport.kind: raw cannot carry a training job's collectives; allowed ib, mrc, roce, uec or ideal"},
		{trTopo + "transport: {kind: raw}\n" + trTraffic, "traffic[0].bytes: 1MiB is set, but transport raw paces flows by load or rate; use transport.kind: mrc for transfers"},
		{trTopo + trTraffic, "traffic[0].bytes: 1MiB is set, but transport raw paces flows by load or rate; use transport.kind: mrc for transfers"},
		{trTopo + "transport: {kind: ideal}\n" + trTraffic, "transport.kind: ideal carries workload messages only; give workload.collectives or use raw or mrc for traffic"},
		{trTopo + "transport: {kind: ideal}\n" + trWorkload + "faults: [{at: 10us, nic: h0.p0, action: down}]\n", "faults: given with transport ideal, which has no links to fail; use transport ib or mrc or roce or uec"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: error %v; want %q", c.doc, err, c.want)
		}
	}
}
