package topo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/lockstepsim/lockstep/sim"
)

// OCSRemap is the outcome of Torus.Remap: the optical circuit switches have swapped the cube
// holding a failed chip for a spare cube. The job's torus keeps its shape and host numbering
// (host h keeps its coordinates and its rank); only the physical chips behind one cube's
// hosts change. The runner pauses the job for SwitchTime (the OCS reconfiguration; restoring
// the moved ranks' state is the job's business) and continues on Topology.
type OCSRemap struct {
	// Torus is the configuration after the swap: CubeMap points the cube at the spare and
	// FailedCubes lists the failed physical cube. Remap it again for the next failure.
	Torus Torus
	// Topology is the remapped torus: the same shape, links and routes as before.
	Topology *Graph
	// Cube is the job's cube that moved (its index, see Torus.CubeMap); FailedCube and
	// SpareCube the physical cubes it moved from and to.
	Cube, FailedCube, SpareCube int
	// Moved lists the hosts whose physical chip changed, ascending: the CubeSize^3 hosts of
	// the cube.
	Moved []int
	// Mapping[h] is the physical chip serving host h after the swap: physical cube x
	// CubeSize^3 + the chip's position in its cube (lx + c (ly + c lz)).
	Mapping []int
	// SwitchTime is the OCS reconfiguration time, Torus.OCSSwitchTime.
	SwitchTime sim.Time
}

// Remap swaps the cube holding host failedChip for the lowest-numbered spare physical cube
// (one neither in CubeMap nor in FailedCubes) and returns the new configuration, topology and
// host-to-chip mapping [TPU v4 §2: OCSes route around failed cubes]. Errors (*FieldError for
// configuration fields): an invalid torus, OCS off ("ocs"), no spare left ("spare_cubes"),
// failedChip not a host.
func (t Torus) Remap(failedChip int) (OCSRemap, error) {
	t = t.WithDefaults()
	if errs := t.check(); len(errs) > 0 {
		return OCSRemap{}, errors.Join(errs...)
	}
	if !t.OCS {
		return OCSRemap{}, fieldErr("ocs", "is off; a torus without optical circuit switches cannot swap in a spare cube")
	}
	n := t.Dims.Chips()
	if failedChip < 0 || failedChip >= n {
		return OCSRemap{}, fmt.Errorf("topo: remap: chip %d is not a host; hosts are 0 to %d", failedChip, n-1)
	}
	spare := -1
	for c := range t.cubes() + t.SpareCubes {
		if !slices.Contains(t.CubeMap, c) && !slices.Contains(t.FailedCubes, c) {
			spare = c
			break
		}
	}
	if spare < 0 {
		return OCSRemap{}, fieldErr("spare_cubes", "all %d spare cubes are in use or failed; no cube can replace the failed one", t.SpareCubes)
	}
	g := newTorusGeom(t)
	cube := t.cubeOf(&g, failedChip)
	r := OCSRemap{Cube: cube, FailedCube: t.CubeMap[cube], SpareCube: spare, SwitchTime: t.OCSSwitchTime}
	t.FailedCubes = append(t.FailedCubes, t.CubeMap[cube])
	t.CubeMap[cube] = spare
	r.Torus = t
	tg, err := t.Graph()
	if err != nil {
		return OCSRemap{}, err
	}
	r.Topology = tg
	r.Mapping = t.Mapping()
	for h := range n {
		if t.cubeOf(&g, h) == cube {
			r.Moved = append(r.Moved, h)
		}
	}
	return r, nil
}

// cubeOf returns the index of the job's cube holding chip h.
func (t Torus) cubeOf(g *torusGeom, h int) int {
	x, c := g.coords(h), t.CubeSize
	k0, k1 := t.Dims[0]/c, t.Dims[1]/c
	return x[0]/c + k0*(x[1]/c+k1*(x[2]/c))
}

// Mapping returns, for each host, the physical chip serving it (see OCSRemap.Mapping); nil
// without OCS or for an invalid torus.
func (t Torus) Mapping() []int {
	t = t.WithDefaults()
	if !t.OCS || len(t.check()) > 0 {
		return nil
	}
	g := newTorusGeom(t)
	c := t.CubeSize
	out := make([]int, g.n)
	for h := range out {
		x := g.coords(h)
		local := x[0]%c + c*(x[1]%c+c*(x[2]%c))
		out[h] = t.CubeMap[t.cubeOf(&g, h)]*c*c*c + local
	}
	return out
}
