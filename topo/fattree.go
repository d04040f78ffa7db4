package topo

import (
	"errors"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// FatTree configures a k-ary 3-tier fat-tree [Al-Fares et al., SIGCOMM 2008]: k pods of k/2
// T0s and k/2 T1s, (k/2)^2 T2s, k^3/4 hosts (k = 64: 65,536 hosts, 5,120 switches), in Planes
// identical planes. It is a Clos{Tiers: 3, Radix: K} under another name; Layout builds it
// and its Params and Sizing report kind "fat_tree".
type FatTree struct {
	// K is the switch radix: even, 4 to MaxRadix. Required.
	K int `yaml:"k" json:"k"`
	// Planes is the number of planes (NIC ports per host), 1 to MaxPlanes; 0 means 1.
	Planes int `yaml:"planes" json:"planes"`
	// HostLink is the rate of each host link, bits/s. Required.
	HostLink sim.Rate `yaml:"host_link" json:"host_link"`
	// FabricLink is the rate of each switch-switch link. 0 means HostLink.
	FabricLink sim.Rate `yaml:"fabric_link" json:"fabric_link"`
	// HopLatency is each link's latency. 0 means DefaultHopLatency.
	HopLatency sim.Time `yaml:"hop_latency" json:"hop_latency"`
	// Oversubscription is the T0's host:uplink bandwidth ratio; 0 means 1 (the classic
	// non-blocking fat-tree). It must split k into whole numbers of ports.
	Oversubscription float64 `yaml:"oversubscription" json:"oversubscription"`
	// ScaleUp groups hosts into scale-up domains of ScaleUp.GPUs consecutive hosts.
	ScaleUp *ScaleUp `yaml:"scale_up,omitempty" json:"scale_up,omitempty"`
}

// Kind returns "fat_tree".
func (f FatTree) Kind() string { return "fat_tree" }

// Clos returns the equivalent Clos: 3 tiers, radix K, the T0 oversubscription, full size.
func (f FatTree) Clos() Clos {
	c := Clos{Tiers: 3, Planes: f.Planes, Radix: f.K, HostLink: f.HostLink, FabricLink: f.FabricLink, HopLatency: f.HopLatency, ScaleUp: copyScaleUp(f.ScaleUp)}
	if c.Planes == 0 {
		c.Planes = 1
	}
	if f.Oversubscription != 0 {
		c.Oversubscription = []float64{f.Oversubscription}
	}
	return c
}

// fatTreeFields renames the Clos fields a FatTree sets differently.
var fatTreeFields = map[string]string{"radix": "k", "oversubscription[0]": "oversubscription"}

// maxFatTreeK is the largest even k whose fat-tree fits MaxHostCount hosts.
func maxFatTreeK() int {
	k := 4
	for (k+2)*(k+2)*(k+2)/4 <= MaxHostCount {
		k += 2
	}
	return k
}

// Layout validates f and returns its Layout (kind "fat_tree"). Errors: *FieldError per
// problem, named by FatTree's keys ("k", "oversubscription", ...).
func (f FatTree) Layout() (*Layout, error) {
	if f.K < 4 || f.K > MaxRadix || f.K%2 != 0 {
		what := strconv.Itoa(f.K) + " is not allowed"
		if f.K == 0 {
			what = "missing"
		}
		return nil, errors.Join(append([]error{fieldErr("k", "%s; want an even radix from 4 to %d (k pods, k^3/4 hosts), e.g. 64", what, MaxRadix)}, f.ScaleUp.withDefaults().check()...)...)
	}
	if hosts := f.K * f.K * f.K / 4; hosts > MaxHostCount {
		return nil, fieldErr("k", "%d gives k^3/4 = %d hosts, beyond the %d lockstep supports; want k <= %d", f.K, hosts, MaxHostCount, maxFatTreeK())
	}
	l, err := f.Clos().Layout()
	if err != nil {
		return nil, renameFields(err, fatTreeFields)
	}
	l.kindName = "fat_tree"
	return l, nil
}

// Validate reports whether f describes a buildable fat-tree (see Layout for the errors).
func (f FatTree) Validate() error {
	_, err := f.Layout()
	return err
}

// Topology validates f and returns its Layout as a Topology.
func (f FatTree) Topology() (Topology, error) {
	l, err := f.Layout()
	if err != nil {
		return nil, err
	}
	return l, nil
}

// renameFields returns err with the Field of every *FieldError in it renamed by names
// (errors joined by errors.Join are renamed one by one).
func renameFields(err error, names map[string]string) error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, renameFields(e, names))
		}
		return errors.Join(out...)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		if n, ok := names[fe.Field]; ok {
			return &FieldError{Field: n, Msg: fe.Msg}
		}
	}
	return err
}
