package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/spf13/cobra"
)

// schemaID is the schema's $id: where the README says to keep it is up to the user, so the
// id names what it describes rather than a URL it is served from.
const schemaID = "https://github.com/lockstepsim/lockstep/scenario.schema.json"

func newSchemaCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files (for editors: yaml-language-server)",
		Long: `Print a JSON Schema (draft-07) of scenario files, generated from the scenario types:
every key the decoder accepts (the yaml tags), the registered transports' blocks
(transport.mrc, transport.roce), durations, rates and sizes as strings with units ("10us",
"400Gbps", "4MiB"; a bare 0, and a size in bytes, as numbers), the keys the resolver has no
default for (topology.clos tiers, planes, radix and host_link; a traffic entry's pattern, a
flow's src and dst, a collective's op, a fault's action), enums for the transport kind, the
traffic pattern, the collective op and algorithm (from their registries), run.engine and
the like, and no other key (an unknown key is an error, as in lockstep run). A file with a variants:
section validates too.

Save it and point yaml-language-server (VS Code's YAML extension, Neovim, Helix, ...) at it
from the scenario's first line:

  lockstep schema > lockstep.schema.json
  # yaml-language-server: $schema=./lockstep.schema.json

The schema checks keys and types; lockstep validate FILE checks everything else (ranges,
hosts, budgets) exactly as run does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			js, err := schemaJSON()
			if err != nil {
				return runFailed(err)
			}
			_, err = stdout.Write(js)
			return err
		},
	}
}

// schemaJSON is the scenario schema as indented JSON with a final newline.
func schemaJSON() ([]byte, error) {
	js, err := json.MarshalIndent(scenarioSchema(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return append(js, '\n'), nil
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// newReflector returns the reflector of the scenario types: keys from the yaml tags (as
// scenario.Decode reads them), no key required (every section has defaults; Resolve says
// what is missing), no other key allowed, definitions inlined (editors show them in place),
// and the types the decoder reads from text (sim.Time, sim.Rate, sim.Size and the training
// enums) mapped to a string or a number.
func newReflector() *jsonschema.Reflector {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
		RequiredFromJSONSchemaTags: true,
		DoNotReference:             true,
	}
	r.Mapper = func(t reflect.Type) *jsonschema.Schema {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t {
		case reflect.TypeFor[scenario.Transport]():
			return transportSchema()
		case reflect.TypeFor[sim.Time]():
			return unitSchema(`a duration with its unit: "500ns", "10us", "1.5ms", "2s"; 0 or "never" where allowed`, timePattern, &jsonschema.Schema{Enum: []any{0}})
		case reflect.TypeFor[sim.Rate]():
			return unitSchema(`a rate in bits per second with its unit: "100Gbps", "800G", "1.6Tbps"; 0 where allowed`, ratePattern, &jsonschema.Schema{Enum: []any{0}})
		case reflect.TypeFor[sim.Size]():
			return unitSchema(`a size in bytes: 4096, "4KiB", "16MiB", "2MB", "1PiB"`, sizePattern, &jsonschema.Schema{Type: "integer", Minimum: json.Number("0")})
		case reflect.TypeFor[scenario.HostList]():
			return hostListSchema()
		}
		if reflect.PointerTo(t).Implements(textUnmarshaler) {
			return textSchema("read from its text (" + t.String() + ")")
		}
		return nil
	}
	return r
}

// hostRangePattern is one item of a scenario.HostList text: a host index or an inclusive
// range lo-hi (decimal; the decoder also reads 0x, 0o, 0b prefixes in list items written as
// YAML integers).
const hostRangePattern = `\s*[0-9]+(\s*-\s*[0-9]+)?\s*`

// hostListSchema is traffic[i].senders (scenario.HostList): a list of hosts and ranges
// ([1, 2, 8-15]), or one text of them separated by commas ("1-255", "1-7, 9"), or one host.
func hostListSchema() *jsonschema.Schema {
	item := &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "integer", Minimum: json.Number("0")},
		{Type: "string", Pattern: "^" + hostRangePattern + "$"},
	}}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "array", Items: item, Description: `host indices and inclusive ranges: [1, 2, 8-15]`},
		{Type: "string", Pattern: "^" + hostRangePattern + "(," + hostRangePattern + ")*$", Description: `hosts and inclusive ranges separated by commas: "1-255", "1-7, 9"`},
		{Type: "integer", Minimum: json.Number("0")},
	}}
}

// textSchema is the schema of a value the decoder reads from its YAML text: a string or a
// number.
func textSchema(desc string) *jsonschema.Schema {
	// The description sits on the string branch: the reflector overwrites a field's own
	// description from its (absent) jsonschema_description tag.
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string", Description: desc}, {Type: "number"}}}
}

// The texts sim.ParseTime, sim.ParseRate and sim.ParseSize read, as JSON Schema patterns
// (RE2 and ECMA-262 alike): a decimal number (optionally signed, with a fraction and an
// exponent), optional spaces and the unit. A bare number is a duration or a rate only when it
// is 0 (the parsers ask for a unit: "100" could be Gb/s or b/s); a size without a unit is
// bytes. Rate and size prefixes are case-insensitive, as the parsers read them; a rate's "b" is
// lower-case (bits: "GB/s" is refused) and a size's "B" upper-case ("Kib" is bits, refused).
const (
	numPattern  = `[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`
	timePattern = `^\s*(` + numPattern + `\s*(ps|ns|us|µs|ms|s|min|m|h)|0|never)\s*$`
	bitsPattern = `(b[pP][sS]|b/[sS]|b[iI][tT][sS]?/[sS])`
	ratePattern = `^\s*(` + numPattern + `\s*([kKmMgGtTpP]` + bitsPattern + `?|` + bitsPattern + `)|0)\s*$`
	sizePattern = `^\s*` + numPattern + `\s*([kKmMgGtTpP][iI]?B?|B)?\s*$`
)

// unitSchema is the schema of a value with a unit: a string matching pattern, or the bare
// number bare allows.
func unitSchema(desc, pattern string, bare *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Type: "string", Pattern: pattern, Description: desc}, bare}}
}

// scenarioSchema reflects scenario.Scenario, adds the variants section and the enums.
func scenarioSchema() *jsonschema.Schema {
	s := newReflector().Reflect(&scenario.Scenario{})
	// Draft-07, the draft yaml-language-server and most editors default to; the schema uses no
	// keyword that draft-07 and 2020-12 read differently.
	s.Version = "http://json-schema.org/draft-07/schema#"
	s.ID = schemaID
	s.Title = "lockstep scenario"
	s.Description = "A lockstep scenario file (README.md, Scenarios). Generated by lockstep schema from the scenario types."
	vprops := jsonschema.NewProperties()
	vprops.Set(scenario.SeedsKey, &jsonschema.Schema{
		Description: `run.seed's values: a list of seeds ([1, 2, 3]) or an inclusive range ("1..20")`,
		AnyOf: []*jsonschema.Schema{
			{Type: "array", MinItems: ptr[uint64](1), Items: &jsonschema.Schema{Type: "integer", Minimum: json.Number("1")}},
			{Type: "string", Pattern: `^\s*[0-9]+\s*\.\.\s*[0-9]+\s*$`},
		},
	})
	s.Properties.Set("variants", &jsonschema.Schema{
		Type:                 "object",
		Description:          fmt.Sprintf("dotted YAML paths (list elements by index) to lists of values; the file is the cross product of them (%d scenarios unless --max allows more, at most %d)", scenario.MaxVariants, scenario.MaxVariantsLimit),
		Properties:           vprops,
		AdditionalProperties: &jsonschema.Schema{Type: "array", MinItems: ptr[uint64](1)},
	})
	setEnum(s, []string{"run", "engine"}, scenario.EnginePacket, scenario.EngineFlow)
	setEnum(s, []string{"run", "fault_baseline"}, scenario.FaultBaselineTwin, scenario.FaultBaselineNone)
	setEnum(s, []string{"fabric", "switch_model", "kind"}, scenario.SwitchModels()...)
	if tr := items(prop(s, "traffic")); tr != nil {
		setEnum(tr, []string{"path"}, scenario.PathECMP, scenario.PathSpread, scenario.PathSpray)
		setEnum(tr, []string{"pattern"}, scenario.PatternNames()...)
		tr.Required = []string{"pattern"}
		if fl := items(prop(tr, "flows")); fl != nil {
			fl.Required = []string{"src", "dst"}
		}
	}
	if c := prop(prop(s, "topology"), "clos"); c != nil {
		// What topo.Clos has no default for (a resolved scenario writes them all).
		c.Required = []string{"tiers", "planes", "radix", "host_link"}
	}
	if cs := items(prop(prop(s, "workload"), "collectives")); cs != nil {
		setEnum(cs, []string{"op"}, spellings(enumNames(func(i int) string { return collective.Collective(i).String() }))...)
		setEnum(cs, []string{"algorithm"}, spellings(enumNames(func(i int) string { return collective.Algorithm(i).String() }))...)
		cs.Required = []string{"op"}
	}
	if fs := items(prop(s, "faults")); fs != nil {
		fs.Required = []string{"action"}
	}
	return s
}

// items is the schema of a list's elements, nil when s is not a list.
func items(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil {
		return nil
	}
	return s.Items
}

// enumNames lists the names of an enumeration whose String prints "name(N)" past its last
// value (collective.Collective, collective.Algorithm): the registry's own names, in order.
func enumNames(name func(int) string) []string {
	var out []string
	for i := 0; i < 256; i++ {
		n := name(i)
		if strings.HasSuffix(n, ")") {
			break
		}
		out = append(out, n)
	}
	return out
}

// spellings adds the spellings the collective parsers accept besides the snake_case name:
// without the underscores and with hyphens ("allreduce", "all-reduce").
func spellings(names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n)
		if strings.Contains(n, "_") {
			out = append(out, strings.ReplaceAll(n, "_", ""), strings.ReplaceAll(n, "_", "-"))
		}
	}
	return out
}

// transportSchema is the transport section: kind (raw, ideal or a registered transport),
// ideal, and one block per registered transport (its plugin's configuration type).
func transportSchema() *jsonschema.Schema {
	kinds := append([]string{scenario.TransportRaw, scenario.TransportIdeal}, transport.Kinds()...)
	props := jsonschema.NewProperties()
	props.Set("kind", &jsonschema.Schema{Type: "string", Enum: anys(kinds), Description: "raw (paced packets), ideal (workloads only) or a registered transport: " + strings.Join(transport.Kinds(), ", ")})
	sub := newReflector()
	strip := func(s *jsonschema.Schema) *jsonschema.Schema {
		s.Version, s.ID = "", ""
		return s
	}
	props.Set("ideal", strip(sub.Reflect(&scenario.Ideal{})))
	for _, k := range transport.Kinds() {
		p, _ := transport.Lookup(k)
		if p.NewConfig == nil {
			continue
		}
		b := strip(sub.Reflect(p.NewConfig()))
		b.Description = "transport." + k + ": the " + k + " transport's settings (docs/protocols.md)"
		props.Set(k, b)
	}
	return &jsonschema.Schema{Type: "object", Properties: props, AdditionalProperties: jsonschema.FalseSchema}
}

// prop returns the schema of property name of s, nil when there is none.
func prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	if s == nil || s.Properties == nil {
		return nil
	}
	v, _ := s.Properties.Get(name)
	return v
}

// setEnum sets the enum of the property at path under s (when it exists and is a string):
// vals and "", which every such key takes for its default (a resolved scenario.yaml writes
// path: "" under a transport).
func setEnum(s *jsonschema.Schema, path []string, vals ...string) {
	for _, p := range path {
		s = prop(s, p)
	}
	if s != nil && s.Type == "string" {
		s.Enum = anys(append(slices.Clone(vals), ""))
	}
}

func anys(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func ptr[T any](v T) *T { return &v }
