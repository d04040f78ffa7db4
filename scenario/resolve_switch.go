package scenario

import (
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
)

// switchModel resolves fabric.switch_model (fabric.SwitchConfig): left out it stays out (the
// output-queued fabric, as every scenario without the key ran); given, its defaults are filled
// and it is checked (kind output fills none: buffers written under it are kept, unused, so a
// variants: sweep over the kind can share them). The input-buffered kinds need the
// packet fabric (the flow level's max-min rates model output queueing: they see no
// head-of-line blocking, so a run there would silently measure output queueing) and refuse
// fabric.pfc (its ingress accounting is its own); credit flow control, which a transport
// turns on when the run is set up, is refused then (fabric.Network.SetSwitch). It relies on
// the transport kind, run.engine and fabric.pfc (steps 4 to 6).
func (r *resolver) switchModel() error {
	sc := r.sc
	m := sc.Fabric.SwitchModel
	if m == nil {
		return nil
	}
	c := *m
	if c.Kind == "" || c.Kind == fabric.SwitchOutput {
		// Buffers given stay as written and unused, so a variants: sweep over kind can share
		// them; they must still be valid.
		c.Kind = fabric.SwitchOutput
		if err := c.Validate(fabric.SwitchPrefix); err != nil {
			return switchError(err)
		}
		sc.Fabric.SwitchModel = &c
		return nil
	}
	c = c.WithDefaults()
	if err := c.Validate(fabric.SwitchPrefix); err != nil {
		return switchError(err)
	}
	switch {
	case sc.Transport.Kind == TransportIdeal:
		return Errorf(fabric.SwitchPrefix+".kind", "%s under transport ideal, which has no switches; allowed there: output (or leave fabric.switch_model out)", c.Kind)
	case sc.Fluid():
		return Errorf(fabric.SwitchPrefix+".kind", "%s at flow level (run.engine %s): the flow-level engine's max-min rates model output queueing and cannot show head-of-line blocking; allowed there: output; use run.engine %s for %s", c.Kind, sc.Run.Engine, EnginePacket, c.Kind)
	case sc.Fabric.PFC.Config().Enabled:
		why := ""
		if p := plugin(sc.Transport.Kind); p != nil && p.Lossless {
			why = " (on by default under transport " + sc.Transport.Kind + ")"
		}
		return Errorf(fabric.SwitchPrefix+".kind", "%s with fabric.pfc enabled%s is not supported: PFC accounts ingress buffers its own way; allowed with PFC: output; or set fabric.pfc: {enabled: false}", c.Kind, why)
	}
	sc.Fabric.SwitchModel = &c
	return nil
}

// switchError turns fabric.SwitchConfig.Validate's "path: message" into a *FieldError.
func switchError(err error) error {
	msg := err.Error()
	if path, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(path, fabric.SwitchPrefix) {
		return Errorf(path, "%s", rest)
	}
	return Errorf(fabric.SwitchPrefix, "%s", msg)
}

// The hint for fabric.switch_model written as a single value ("switch_model: voq"): the
// mapping meant. Registered here, beside the key's other code, so decode.go's table stays as
// it is.
func init() {
	mappingHints["fabric."+switchModelKey] = func(w string) string {
		if w == "" {
			w = fabric.SwitchVOQ
		}
		return "{kind: " + w + "}"
	}
}

// switchModelKey is fabric.switch_model's key in the fabric mapping.
const switchModelKey = "switch_model"

// SwitchModels lists fabric.switch_model's kinds (fabric.SwitchOutput first, the default).
func SwitchModels() []string {
	return []string{fabric.SwitchOutput, fabric.SwitchSharedIngress, fabric.SwitchVOQ}
}
