package scenario

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// The types below are a test-only stand-in for a scenario: nested structs, a list of structs,
// sim.Time/Rate/Size, []float64, map[string]string, pointers, and ints of several widths.

type tScenario struct {
	Name     string            `yaml:"name"`
	Topology tTopology         `yaml:"topology"`
	Traffic  []tTraffic        `yaml:"traffic"`
	Run      tRun              `yaml:"run"`
	Labels   map[string]string `yaml:"labels,omitempty"`
	Faults   *tFaults          `yaml:"faults"`
	Untagged int               // not settable from YAML
	Skipped  int               `yaml:"-"`
	hidden   int               `yaml:"hidden"` //nolint:unused // unexported: not settable
}

type tTopology struct {
	Hosts   int      `yaml:"hosts"`
	Planes  uint8    `yaml:"planes"`
	Radix   int16    `yaml:"radix"`
	Tiers   int8     `yaml:"tiers"`
	Link    sim.Rate `yaml:"link"`
	Latency sim.Time `yaml:"latency"`
	Oversub float32  `yaml:"oversub"`
}

type tTraffic struct {
	Pattern string    `yaml:"pattern"`
	Load    float64   `yaml:"load"`
	Weights []float64 `yaml:"weights"`
	Size    sim.Size  `yaml:"size"`
	Senders []uint32  `yaml:"senders,flow"`
	ECN     bool      `yaml:"ecn"`
	Start   sim.Time  `yaml:"start"`
}

type tRun struct {
	Seed     uint64   `yaml:"seed"`
	Duration sim.Time `yaml:"duration"`
	Limit    *int64   `yaml:"limit,omitempty"`
}

type tFaults struct {
	Links []string            `yaml:"links"`
	At    sim.Time            `yaml:"at"`
	MTBF  map[string]sim.Time `yaml:"mtbf"`
	Extra map[string]tFault   `yaml:"extra"`
}

type tFault struct {
	Kind string `yaml:"kind"`
	Down uint16 `yaml:"down"`
}

// tTree is recursive, for alias cycles and deep nesting.
type tTree struct {
	Name string  `yaml:"name"`
	Kids []tTree `yaml:"kids"`
	Next *tTree  `yaml:"next"`
}

const decGoodYAML = `# a scenario
name: demo
topology:
  hosts: 1_024
  planes: 8
  radix: 64
  tiers: -3
  link: 800G
  latency: 1.5us
  oversub: 0.5
traffic:
  - pattern: permutation
    load: 0.9
    weights: [1, 2.5, 1e-3]
    size: 4KiB
    senders: [0, 0x10, 0b11]
    ecn: true
  - pattern: incast
    load: ~
    size: 1500
    start: 2ms
run:
  seed: 18446744073709551615
  duration: 1ms
  limit: -9223372036854775808
labels:
  rack: r1
  "odd key": "yes"
faults:
  links: [p0.t0-1.up2]
  at: 10us
  mtbf:
    p0.t0-1: 1h
  extra:
    a: {kind: flap, down: 65535}
`

func decInt64p(v int64) *int64 { return &v }

func decGoodValue() tScenario {
	return tScenario{
		Name: "demo",
		Topology: tTopology{
			Hosts: 1024, Planes: 8, Radix: 64, Tiers: -3,
			Link: 800 * sim.Gbps, Latency: 1500 * sim.Nanosecond, Oversub: 0.5,
		},
		Traffic: []tTraffic{
			{Pattern: "permutation", Load: 0.9, Weights: []float64{1, 2.5, 0.001}, Size: 4096,
				Senders: []uint32{0, 16, 3}, ECN: true},
			{Pattern: "incast", Size: 1500, Start: 2 * sim.Millisecond},
		},
		Run:    tRun{Seed: 1<<64 - 1, Duration: sim.Millisecond, Limit: decInt64p(-1 << 63)},
		Labels: map[string]string{"rack": "r1", "odd key": "yes"},
		Faults: &tFaults{
			Links: []string{"p0.t0-1.up2"},
			At:    10 * sim.Microsecond,
			MTBF:  map[string]sim.Time{"p0.t0-1": sim.Hour},
			Extra: map[string]tFault{"a": {Kind: "flap", Down: 65535}},
		},
	}
}

func TestDecodeGood(t *testing.T) {
	var got tScenario
	if err := Decode([]byte(decGoodYAML), &got); err != nil {
		t.Fatal(err)
	}
	if want := decGoodValue(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

// decTimeErr and decRateErr return package sim's message for a bad duration or rate, which Decode
// wraps with the path and value.
func decTimeErr(s string) string {
	_, err := sim.ParseTime(s)
	return err.Error()
}

func decRateErr(s string) string {
	_, err := sim.ParseRate(s)
	return err.Error()
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not an integer", "topology:\n  hosts: 4\n  planes: 2\n  radix: abc\n",
			`topology.radix (line 4): "abc" is not an integer`},
		{"quoted int", "topology:\n  tiers: '2'\n",
			`topology.tiers (line 2): "2" is quoted, a string; want an integer: write 2, unquoted`},
		{"quoted int in a list", "traffic:\n  - {weights: [1, \"2\"]}\n",
			`traffic[0].weights[1] (line 2): "2" is quoted, a string; want a number: write 2, unquoted`},
		{"quoted bool", "traffic:\n  - {ecn: \"true\"}\n",
			`traffic[0].ecn (line 2): "true" is quoted, a string; want true or false: write true, unquoted`},
		{"float for int", "topology:\n  radix: 1.5\n",
			`topology.radix (line 2): "1.5" is not an integer`},
		{"uint8 range", "topology:\n  planes: 300\n",
			`topology.planes (line 2): 300 does not fit in uint8 (0 to 255)`},
		{"int8 range", "topology:\n  tiers: -129\n",
			`topology.tiers (line 2): -129 does not fit in int8 (-128 to 127)`},
		{"negative uint", "run:\n  seed: -1\n",
			`run.seed (line 2): -1 does not fit in uint64 (0 to 18446744073709551615)`},
		{"huge int", "run:\n  limit: 99999999999999999999999999\n",
			`run.limit (line 2): 99999999999999999999999999 does not fit in int64 (-9223372036854775808 to 9223372036854775807)`},
		{"unknown field", "topology:\n  planez: 4\n",
			`topology.planez (line 2): unknown field; allowed: hosts, latency, link, oversub, planes, radix, tiers`},
		{"untagged field", "Untagged: 1\n",
			`Untagged (line 1): unknown field; allowed: faults, labels, name, run, topology, traffic`},
		{"unexported field", "hidden: 1\n",
			`hidden (line 1): unknown field; allowed: faults, labels, name, run, topology, traffic`},
		{"time without unit", "name: x\nrun:\n  duration: 5\n",
			`run.duration (line 3): ` + decTimeErr("5")},
		{"rate in bytes", "topology:\n  link: 100GB/s\n",
			`topology.link (line 2): ` + decRateErr("100GB/s")},
		{"size as mapping", "traffic:\n  - size: {a: 1}\n",
			`traffic[0].size (line 2): want a single value (sim.Size), got a mapping`},
		{"bad float in list", "traffic:\n  - load: 0.5\n  - load: lots\n",
			`traffic[1].load (line 3): "lots" is not a finite number`},
		{"nan", "traffic:\n  - load: .nan\n",
			`traffic[0].load (line 2): ".nan" is not a finite number`},
		{"float64 range", "traffic:\n  - load: 1e400\n",
			`traffic[0].load (line 2): 1e400 does not fit in float64`},
		{"float32 range", "topology:\n  oversub: 1e39\n",
			`topology.oversub (line 2): 1e39 does not fit in float32`},
		{"weights element", "traffic:\n  - weights: [1, x]\n",
			`traffic[0].weights[1] (line 2): "x" is not a finite number`},
		{"uint32 element", "traffic:\n  - senders:\n      - 1\n      - 4294967296\n",
			`traffic[0].senders[1] (line 4): 4294967296 does not fit in uint32 (0 to 4294967295)`},
		{"bool", "traffic:\n  - ecn: yes\n",
			`traffic[0].ecn (line 2): "yes" is not a boolean; want true or false`},
		{"scalar for mapping", "topology: clos\n",
			`topology (line 1): want a mapping, got "clos"`},
		{"mapping for list", "traffic:\n  pattern: incast\n",
			`traffic (line 2): want a list, got a mapping`},
		{"scalar for list item", "traffic:\n  - incast\n",
			`traffic[0] (line 2): want a mapping, got "incast"`},
		{"list for string", "name: [a, b]\n",
			`name (line 1): want a string, got a list`},
		{"list for map", "labels: [a]\n",
			`labels (line 1): want a mapping, got a list`},
		{"odd map key", "labels:\n  \"a b\": [1]\n",
			`labels["a b"] (line 2): want a string, got a list`},
		{"map of structs", "faults:\n  extra:\n    x: {kind: k, down: 70000}\n",
			`faults.extra.x.down (line 3): 70000 does not fit in uint16 (0 to 65535)`},
		{"map of times", "faults:\n  mtbf:\n    l1: soon\n",
			`faults.mtbf.l1 (line 3): ` + decTimeErr("soon")},
		{"complex key", "labels:\n  ? [a]\n  : b\n",
			`labels (line 2): a mapping key must be a single value, got a list`},
		{"duplicate key", "name: a\ntopology:\n  hosts: 1\n  hosts: 2\n",
			`topology.hosts (line 4): duplicate key (first at line 3)`},
		{"duplicate root key", "name: a\nname: b\n",
			`name (line 2): duplicate key (first at line 1)`},
		{"syntax", "name: a\ntopology:\n  hosts: 1\n bad: [\n",
			`line 3: did not find expected key`},
		{"tab indent", "topology:\n\thosts: 1\n",
			`line 2: found character that cannot start any token`},
		{"two documents", "name: a\n---\nname: b\n",
			`line 2: a second YAML document starts here ("---"); a scenario is a single document`},
		{"empty", "", "empty scenario"},
		{"comments only", "# nothing\n\n", "empty scenario"},
		{"null document", "---\n~\n", "empty scenario"},
		{"root list", "- a\n", `line 1: want a mapping, got a list`},
		{"root scalar", "hello\n", `line 1: want a mapping, got "hello"`},
		{"unknown anchor", "name: *x\n", `invalid YAML: unknown anchor 'x' referenced`},
		{"merge of scalar", "topology:\n  <<: 5\n",
			`topology (line 2): merge key "<<" wants a mapping or a list of mappings, got "5"`},
		{"long value shortened", "name: x\ntraffic:\n  - load: " + strings.Repeat("9", 100) + "x\n",
			`traffic[0].load (line 3): "` + strings.Repeat("9", 64) + `…" is not a finite number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s tScenario
			err := Decode([]byte(tc.in), &s)
			if err == nil {
				t.Fatalf("no error; want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, tc.want)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FieldError", err)
			}
			if strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

func TestDecodeHostile(t *testing.T) {
	laughs := "a: &a {kids: [" + strings.Repeat("{name: x}, ", 9) + "{name: x}]}\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		laughs += name + ": &" + name + " {kids: [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]}\n"
		prev = name
	}
	// Merge keys multiply work without growing the result.
	merges := "a: &a {name: x}\n"
	prev = "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j", "k"} {
		merges += name + ": &" + name + " {<<: [" + strings.Repeat("*"+prev+", ", 9) + "*" + prev + "]}\n"
		prev = name
	}
	deep := strings.Repeat("{next: ", 5000) + "{}" + strings.Repeat("}", 5000)
	tests := []struct {
		name, in string
		out      any
		want     string // substring of the error
	}{
		{"billion laughs", laughs, &map[string]tTree{}, "aliases expand to more than 1000000 values"},
		{"merge laughs", merges, &map[string]tTree{}, "aliases expand to more than 1000000 values"},
		{"alias cycle", "&a {name: x, kids: [*a]}\n", &tTree{}, "kids[0] (line 1): alias *a refers to a value that contains it"},
		{"merge cycle", "&a {name: x, <<: *a}\n", &tTree{}, `line 1: merge key "<<" refers to a mapping that contains it`},
		{"deep", deep, &tTree{}, "nested more than 1000 levels deep"},
		{"parser depth", strings.Repeat("[", 20000), &tTree{}, "exceeded max depth"},
		{"binary junk", "\x00\x01\xff\xfe", &tScenario{}, "control characters are not allowed"},
		{"bad utf-8", "name: \xff\xfe\n", &tScenario{}, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode([]byte(tc.in), tc.out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDecodeProgrammerErrors(t *testing.T) {
	var s tScenario
	if err := Decode([]byte("name: a"), s); err == nil {
		t.Error("non-pointer: no error")
	}
	if err := Decode([]byte("name: a"), (*tScenario)(nil)); err == nil {
		t.Error("nil pointer: no error")
	}
	var bad struct {
		C chan int `yaml:"c"`
	}
	if err := Decode([]byte("x: 1"), &bad); err == nil || !strings.Contains(err.Error(), "unsupported type chan int") {
		t.Errorf("chan field: %v", err)
	}
	var badKey struct {
		M map[int]string `yaml:"m"`
	}
	if err := Decode([]byte("m: {}"), &badKey); err == nil || !strings.Contains(err.Error(), "map keys must be strings") {
		t.Errorf("int map key: %v", err)
	}
	var dup struct {
		A int `yaml:"a"`
		B int `yaml:"a"`
	}
	if err := Decode([]byte("a: 1"), &dup); err == nil || !strings.Contains(err.Error(), `two fields are tagged yaml:"a"`) {
		t.Errorf("duplicate tag: %v", err)
	}
	var inline struct {
		A tRun `yaml:",inline"`
		B tRun `yaml:"b,inline"`
	}
	if err := Decode([]byte("b: {}"), &inline); err == nil || !strings.Contains(err.Error(), `unsupported yaml tag option "inline"`) {
		t.Errorf("inline: %v", err)
	}
}

func TestDecodeForms(t *testing.T) {
	tests := []struct {
		name, in string
		want     tScenario
	}{
		{"numbers and bools", "topology: {hosts: 12, planes: 0x0f}\ntraffic: [{ecn: True, load: 1_000.5}]\n",
			tScenario{Topology: tTopology{Hosts: 12, Planes: 15}, Traffic: []tTraffic{{ECN: true, Load: 1000.5}}}},
		{"number bases", "topology: {hosts: +0o17, radix: -0x10, tiers: 0b111}\n",
			tScenario{Topology: tTopology{Hosts: 15, Radix: -16, Tiers: 7}}},
		{"nulls and empties", "name: ~\ntopology: null\ntraffic: []\nlabels: {}\nfaults: ~\nrun: {limit: ~}\n",
			tScenario{}},
		{"null list item", "traffic: [~, {load: 1}]\n",
			tScenario{Traffic: []tTraffic{{}, {Load: 1}}}},
		{"empty pointer mapping", "faults: {}\n", tScenario{Faults: &tFaults{}}},
		{"strings from other scalars", "name: 12\nlabels: {a: true, b: 1.5, c: '', 1: x}\n",
			tScenario{Name: "12", Labels: map[string]string{"a": "true", "b": "1.5", "c": "", "1": "x"}}},
		{"zero time and rate as number", "run: {duration: 0}\ntopology: {link: 400e9bps}\n",
			tScenario{Run: tRun{Duration: 0}, Topology: tTopology{Link: 400 * sim.Gbps}}},
		{"anchors and aliases", "topology: &t {hosts: 4, link: 100G}\ntraffic:\n  - &tr {load: 0.5, size: 1KiB}\n  - *tr\nname: &n x\nlabels: {a: *n}\n",
			tScenario{Name: "x", Topology: tTopology{Hosts: 4, Link: 100 * sim.Gbps},
				Traffic: []tTraffic{{Load: 0.5, Size: 1024}, {Load: 0.5, Size: 1024}}, Labels: map[string]string{"a": "x"}}},
		{"merge precedence", "traffic:\n  - &a {load: 0.1, pattern: a}\n  - &b {load: 0.2, ecn: true}\n  - {<<: [*a, *b], load: 0.3}\n",
			tScenario{Traffic: []tTraffic{{Load: 0.1, Pattern: "a"}, {Load: 0.2, ECN: true}, {Load: 0.3, Pattern: "a", ECN: true}}}},
		{"merge into map", "labels: {<<: {a: '1', b: '2'}, b: '3'}\n",
			tScenario{Labels: map[string]string{"a": "1", "b": "3"}}},
		{"nested merge", "traffic:\n  - &a {load: 0.1}\n  - &b {<<: *a, pattern: b}\n  - {<<: *b}\n",
			tScenario{Traffic: []tTraffic{{Load: 0.1}, {Load: 0.1, Pattern: "b"}, {Load: 0.1, Pattern: "b"}}}},
		{"merge, then explicit", "topology: {<<: {hosts: 1}, hosts: 2}\n",
			tScenario{Topology: tTopology{Hosts: 2}}},
		{"leading document marker", "---\nname: a\n...\n", tScenario{Name: "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got tScenario
			if err := Decode([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestDecodeOverlay(t *testing.T) {
	shared := &tFaults{Links: []string{"a"}, At: sim.Second}
	s := tScenario{
		Name:     "default",
		Topology: tTopology{Hosts: 64, Planes: 4},
		Traffic:  []tTraffic{{Load: 0.9}, {Load: 0.1}},
		Labels:   map[string]string{"keep": "no"},
		Faults:   shared,
		Untagged: 7,
	}
	in := "topology: {planes: 8}\ntraffic: [{pattern: x}]\nlabels: {new: y}\nfaults: {at: 2s}\n"
	if err := Decode([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	want := tScenario{
		Name:     "default",
		Topology: tTopology{Hosts: 64, Planes: 8},
		Traffic:  []tTraffic{{Pattern: "x"}},
		Labels:   map[string]string{"new": "y"},
		Faults:   &tFaults{Links: []string{"a"}, At: 2 * sim.Second},
		Untagged: 7,
	}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", s, want)
	}
	if shared.At != sim.Second {
		t.Fatalf("Decode wrote through a pre-set pointer: shared.At = %v", shared.At)
	}
	// Null resets a field to its zero value.
	if err := Decode([]byte("name: ~\nfaults: ~\n"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "" || s.Faults != nil {
		t.Fatalf("null did not reset: name %q, faults %v", s.Name, s.Faults)
	}
}

func TestErrorf(t *testing.T) {
	err := Errorf("traffic[2].load", "%g is above %d", 1.5, 1)
	if got, want := err.Error(), "traffic[2].load: 1.5 is above 1"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Line != 0 || fe.Path != "traffic[2].load" {
		t.Fatalf("got %#v", err)
	}
	if got := Errorf("x", "a\nb").Error(); got != "x: a b" {
		t.Fatalf("multi-line message: %q", got)
	}
	if got := (&FieldError{Msg: "m"}).Error(); got != "m" {
		t.Fatalf("bare message: %q", got)
	}
}

// decSimText fills in package sim's text for the values in the Encode golden outputs.
var decSimText = strings.NewReplacer(
	"{800G}", (800 * sim.Gbps).String(),
	"{1.5us}", (1500 * sim.Nanosecond).String(),
	"{4KiB}", sim.Size(4096).String(),
	"{1500B}", sim.Size(1500).String(),
	"{0s}", sim.Time(0).String(),
	"{1ms}", sim.Millisecond.String(),
	"{2ms}", (2 * sim.Millisecond).String(),
	"{10us}", (10 * sim.Microsecond).String(),
	"{1h}", sim.Hour.String(),
	"{0rate}", decZeroRateText(),
)

// decZeroRateText is how Encode writes a zero sim.Rate: null while ParseRate rejects its text.
func decZeroRateText() string {
	if _, err := sim.ParseRate(sim.Rate(0).String()); err != nil {
		return "null"
	}
	return sim.Rate(0).String()
}

func TestEncodeRoundTrip(t *testing.T) {
	v := decGoodValue()
	out, err := Encode(&v)
	if err != nil {
		t.Fatal(err)
	}
	const want = `name: demo
topology:
  hosts: 1024
  planes: 8
  radix: 64
  tiers: -3
  link: {800G}
  latency: {1.5us}
  oversub: 0.5
traffic:
  - pattern: permutation
    load: 0.9
    weights: [1, 2.5, 0.001]
    size: {4KiB}
    senders: [0, 16, 3]
    ecn: true
    start: {0s}
  - pattern: incast
    load: 0
    weights: []
    size: {1500B}
    senders: []
    ecn: false
    start: {2ms}
run:
  seed: 18446744073709551615
  duration: {1ms}
  limit: -9223372036854775808
labels:
  odd key: "yes"
  rack: r1
faults:
  links: [p0.t0-1.up2]
  at: {10us}
  mtbf:
    p0.t0-1: {1h}
  extra:
    a:
      kind: flap
      down: 65535
`
	if want := decSimText.Replace(want); string(out) != want {
		t.Errorf("Encode:\n%s\nwant:\n%s", out, want)
	}
	var back tScenario
	if err := Decode(out, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, v) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v", back, v)
	}

	// Zero value: every field written, omitempty ones left out, nil pointer as null.
	out, err = Encode(tScenario{})
	if err != nil {
		t.Fatal(err)
	}
	const wantZero = `name: ""
topology:
  hosts: 0
  planes: 0
  radix: 0
  tiers: 0
  link: {0rate}
  latency: {0s}
  oversub: 0
traffic: []
run:
  seed: 0
  duration: {0s}
faults: null
`
	if wantZero := decSimText.Replace(wantZero); string(out) != wantZero {
		t.Errorf("Encode zero:\n%s\nwant:\n%s", out, wantZero)
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := Encode(nil); err == nil {
		t.Error("nil: no error")
	}
	if _, err := Encode(struct {
		F func() `yaml:"f"`
	}{}); err == nil {
		t.Error("func field: no error")
	}
	cyc := &tTree{}
	cyc.Next = cyc
	if _, err := Encode(cyc); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("pointer cycle: %v", err)
	}
}

func TestEncodeStrings(t *testing.T) {
	strs := []string{"", " ", "  a", "a ", "\n", "\n\n", " \n", "a\n", "a\n\n", "\na", " a\nb",
		"a\n b", "a \nb", "\t", "a\tb", "\t\n", "x\n\t", "\r", "a\r\nb", "\u0085", "\u2028", "\ufeff",
		"\ufeffa", "\x00", "\x7f", "a\x1bb", "- x", "-", "#", "a #b", " # x", ": ", "a: b", "?",
		"0x10", "1e3", "null", "~", "<<", "=", "!", "&a", "*a", "%", "@", "`", "'", "\"", "yes",
		"on", "N", "1_000", ".inf", "2001-12-14", "[", "{", "}", ",", "|", ">", "\\", "é", "😀",
		"\U0010FFFF", "a\u00a0", "---", "...", "--- a", "a\n---\nb", "a\n...\nb", "line 1\nline 2\n"}
	for _, s := range strs {
		a := tScenario{Name: s, Labels: map[string]string{s: s, "k": s}, Traffic: []tTraffic{{Pattern: s}}}
		out, err := Encode(&a)
		if err != nil {
			t.Errorf("%q: Encode: %v", s, err)
			continue
		}
		var b tScenario
		if err := Decode(out, &b); err != nil {
			t.Errorf("%q: Decode: %v\n%s", s, err, out)
			continue
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q: read back as %q\n%s", s, b.Name, out)
		}
	}
}
