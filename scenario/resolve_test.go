package scenario

import (
	"reflect"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestPFCMirrorsFabric checks that fabric.pfc (PFC) has every field of fabric.PFCConfig under
// the same YAML key, and that Config and set carry each of them across.
func TestPFCMirrorsFabric(t *testing.T) {
	ft, pt := reflect.TypeOf(fabric.PFCConfig{}), reflect.TypeOf(PFC{})
	if ft.NumField() != pt.NumField() {
		t.Fatalf("fabric.PFCConfig has %d fields, PFC %d", ft.NumField(), pt.NumField())
	}
	for i := range ft.NumField() {
		f := ft.Field(i)
		g, ok := pt.FieldByName(f.Name)
		if !ok {
			t.Fatalf("PFC lacks fabric.PFCConfig.%s", f.Name)
		}
		if g.Tag.Get("yaml") != f.Tag.Get("yaml") {
			t.Errorf("%s: yaml %q, fabric's %q", f.Name, g.Tag.Get("yaml"), f.Tag.Get("yaml"))
		}
		if f.Name != "Enabled" && g.Type != f.Type {
			t.Errorf("%s: %v, fabric's %v", f.Name, g.Type, f.Type)
		}
	}
	c := fabric.PFCConfig{Enabled: true, Classes: []int{1, 2}, XOFF: 1, XON: 2, Headroom: 3, Quanta: 4, Alpha: 5, SharedBuffer: 6, Reserved: 7, Watchdog: sim.Time(8)}
	var p PFC
	p.set(c)
	if got := p.Config(); !reflect.DeepEqual(got, c) {
		t.Errorf("set then Config: %+v, want %+v", got, c)
	}
}
