package topo

import (
	"encoding/json"
	"strconv"
)

// Elements named in a blast-radius table (Blast.Element).
const (
	BlastNICPort     = "nic_port"      // one NIC port, or its host link
	BlastT0T1Link    = "t0_t1_link"    // one T0-T1 link
	BlastT1T2Link    = "t1_t2_link"    // one T1-T2 link
	BlastT0Switch    = "t0_switch"     // one T0 (leaf, rail switch)
	BlastT1Switch    = "t1_switch"     // one T1 (spine)
	BlastT2Switch    = "t2_switch"     // one T2 (core)
	BlastTorusLink   = "torus_link"    // one chip-to-chip torus link
	BlastTorusChip   = "torus_chip"    // one torus chip (TPU)
	BlastOCS         = "ocs"           // one optical circuit switch of a torus
	BlastMeshLink    = "mesh_link"     // one link of a full mesh
	BlastMeshNode    = "mesh_node"     // one node of a full mesh
	BlastScaleUpLink = "scale_up_link" // one NVLink of a GPU
)

// Blast is one row of a blast-radius table: what a single failure of one element takes away.
// Share is the fraction of the bandwidth named by Lost that each of the Affected hosts,
// switches or chips loses (0..1; 1 means cut off). For example one T0-T1 link of a radix-512
// 2-tier Clos takes 1/256 of one T0's uplink bandwidth; one NIC port of an 8-plane NIC takes
// 1/8 of that host's bandwidth.
type Blast struct {
	Element      string  // one of the Blast* names, e.g. "t0_t1_link"
	Lost         string  // whose bandwidth: "host NIC bandwidth", "T0 uplink bandwidth", ...
	Share        float64 // fraction of it lost by each affected element, 0..1
	Affected     int     // how many hosts, switches or chips lose Share
	AffectedKind string  // what Affected counts: "hosts", "T0s", "T1s", "chips", "GPUs", "nodes"
	// Note adds what the share alone does not say (a chip's cube moved by the OCS, a rail
	// cut off from the fabric).
	Note string
}

// MarshalJSON writes the row with snake_case keys and the share also as a percentage.
func (b Blast) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Element      string  `json:"element"`
		Lost         string  `json:"lost"`
		Share        float64 `json:"share"`
		Percent      float64 `json:"percent"`
		Affected     int     `json:"affected"`
		AffectedKind string  `json:"affected_kind"`
		Note         string  `json:"note,omitempty"`
	}{b.Element, b.Lost, b.Share, b.Share * 100, b.Affected, b.AffectedKind, b.Note})
}

// BlastRadius returns the blast radius of one failure of each element of the Clos, per plane
// (planes are independent, so a failure touches one):
//
//   - NIC port: 1/Planes of its host's bandwidth (all of it with one plane);
//   - T0-T1 link: 1/u0 of its T0's uplink bandwidth (radix 512, 1:1: 1/256 = 0.39%; radix 64:
//     1/32 = 3.1%), felt by the d0 hosts below;
//   - T1-T2 link: 1/u1 of its T1's uplink bandwidth;
//   - T0 switch: one plane (1/Planes) of each of its d0 hosts;
//   - T1 switch: p0/u0 of the uplink bandwidth of each T0 it serves;
//   - T2 switch: p1/u1 of the uplink bandwidth of each T1 it serves;
//   - scale-up link (with a ScaleUp domain): 1/LinksPerGPU of one GPU's NVLink bandwidth.
func (l *Layout) BlastRadius() []Blast {
	d := &l.d
	nic := 1 / float64(d.Planes)
	out := []Blast{{Element: BlastNICPort, Lost: "host NIC bandwidth", Share: nic, Affected: 1, AffectedKind: "hosts"}}
	if d.T0s > 1 || d.Tiers == 3 {
		out = append(out, Blast{Element: BlastT0T1Link, Lost: "T0 uplink bandwidth", Share: 1 / float64(d.T0Up), Affected: 1, AffectedKind: "T0s",
			Note: "felt by the " + strconv.Itoa(d.T0Down) + " hosts below it"})
	}
	if d.Tiers == 3 {
		out = append(out, Blast{Element: BlastT1T2Link, Lost: "T1 uplink bandwidth", Share: 1 / float64(d.T1Up), Affected: 1, AffectedKind: "T1s"})
	}
	out = append(out, Blast{Element: BlastT0Switch, Lost: "host NIC bandwidth", Share: nic, Affected: min(d.T0Down, d.Hosts), AffectedKind: "hosts"})
	// A T1 serves every T0 of its pod (2-tier: every T0).
	t0sPerT1 := min(d.T0PerPod, d.T0s)
	out = append(out, Blast{Element: BlastT1Switch, Lost: "T0 uplink bandwidth", Share: float64(d.T0Parallel) / float64(d.T0Up), Affected: t0sPerT1, AffectedKind: "T0s"})
	if d.Tiers == 3 {
		out = append(out, Blast{Element: BlastT2Switch, Lost: "T1 uplink bandwidth", Share: float64(d.T1Parallel) / float64(d.T1Up), Affected: d.Pods, AffectedKind: "T1s"})
	}
	return append(out, l.cfg.ScaleUp.blast()...)
}
