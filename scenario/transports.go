package scenario

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/lockstepsim/lockstep/transport"
	_ "github.com/lockstepsim/lockstep/transport/all" // the shipped transports (transport.Register)
)

// Block returns the block of the transport in force (transport.<kind>, a pointer to the
// plugin's config type, *mrc.Config under kind mrc), nil when there is none (raw, ideal, or
// before Resolve when left out). After Resolve it is the resolved block.
func (t *Transport) Block() any { return t.blocks[t.Kind] }

// SetBlock stores cfg as the block of the registered transport whose configuration type it
// is (transport.Plugin.NewConfig's, e.g. *mrc.Config for transport.mrc), for tests and tools
// that build a scenario in Go; the block is kept, not copied. A nil cfg removes the block of
// t.Kind. It panics when no registered transport takes cfg's type (a programming error).
func (t *Transport) SetBlock(cfg any) {
	if cfg == nil {
		t.setBlock(t.Kind, nil)
		return
	}
	ty := reflect.TypeOf(cfg)
	for _, k := range transport.Kinds() {
		if p, _ := transport.Lookup(k); p.NewConfig != nil && reflect.TypeOf(p.NewConfig()) == ty {
			t.setBlock(k, cfg)
			return
		}
	}
	panic(fmt.Sprintf("scenario: Transport.SetBlock: no registered transport takes a %T", cfg))
}

// setBlock stores cfg (a non-nil pointer, or nil to remove) under kind, replacing the map so
// a copied Transport keeps its own.
func (t *Transport) setBlock(kind string, cfg any) {
	m := make(map[string]any, len(t.blocks)+1)
	for k, v := range t.blocks {
		m[k] = v
	}
	if v := reflect.ValueOf(cfg); cfg == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		delete(m, kind)
	} else {
		m[kind] = cfg
	}
	if len(m) == 0 {
		m = nil
	}
	t.blocks = m
}

// blockKinds returns the kinds of the blocks given, sorted.
func (t *Transport) blockKinds() []string {
	out := make([]string, 0, len(t.blocks))
	for k := range t.blocks {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// takeKey accepts a registered transport's kind as a key of the transport mapping (see
// keyTaker): its block decodes into the plugin's configuration type.
func (t *Transport) takeKey(key string) (any, bool) {
	p, ok := transport.Lookup(key)
	if !ok || p.NewConfig == nil {
		return nil, false
	}
	if cur, ok := t.blocks[key]; ok {
		return cur, true
	}
	return reflect.Zero(reflect.TypeOf(p.NewConfig())).Interface(), true
}

// setKey stores a block decoded under key (see keyTaker).
func (t *Transport) setKey(key string, v any) { t.setBlock(key, v) }

// takenKeys lists the registered kinds that take a block (see keyTaker).
func (t *Transport) takenKeys() []string {
	var out []string
	for _, k := range transport.Kinds() {
		if p, _ := transport.Lookup(k); p.NewConfig != nil {
			out = append(out, k)
		}
	}
	return out
}

// extraKeys writes the blocks given after kind, in kind order (see keyGiver).
func (t Transport) extraKeys() (after string, keys []string, vals []any) {
	keys = t.blockKinds()
	for _, k := range keys {
		vals = append(vals, t.blocks[k])
	}
	return "kind", keys, vals
}

// plugin returns the registered transport of kind, nil for raw, ideal or an unknown kind.
func plugin(kind string) *transport.Plugin {
	p, _ := transport.Lookup(kind)
	return p
}

// workloadTransport is the kind a workload runs over when transport.kind is left out: the
// registered transport whose plugin is the WorkloadDefault, "" when none is.
func workloadTransport() string {
	for _, k := range transport.Kinds() {
		if p, _ := transport.Lookup(k); p.WorkloadDefault {
			return k
		}
	}
	return ""
}

// transferTransport is the transport a message suggests for transfers: the workloads'
// default, else the first registered kind.
func transferTransport() string {
	if w := workloadTransport(); w != "" {
		return w
	}
	if ks := transport.Kinds(); len(ks) > 0 {
		return ks[0]
	}
	return TransportRaw
}

// transportKinds lists the allowed values of transport.kind for its error: raw, the
// registered transports (sorted), ideal.
func transportKinds() string {
	return strings.Join(append(append([]string{TransportRaw}, transport.Kinds()...), TransportIdeal), ", ")
}

// profileKinds returns the registered kinds whose plugin has a fabric profile, sorted.
func profileKinds() []string {
	var out []string
	for _, k := range transport.Kinds() {
		if p, _ := transport.Lookup(k); p.Profile != nil {
			out = append(out, k)
		}
	}
	return out
}
