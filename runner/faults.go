package runner

import (
	"fmt"
	"path"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// FaultEvent is one scheduled action on one port, as applied.
type FaultEvent struct {
	At     sim.Time
	Port   fabric.PortID
	Name   string
	Action string
	Loss   float64
	// Entropy limits a loss to one entropy value when HasEntropy.
	Entropy    uint32
	HasEntropy bool
}

// scheduleFaults resolves each fault's link pattern to ports and schedules the actions. A
// pattern that matches no port is an error naming it (faults[i].link).
func scheduleFaults(s *sim.Sim, net *fabric.Network, faults []scenario.Fault) ([]FaultEvent, error) {
	var evs []FaultEvent
	for i, f := range faults {
		n := 0
		for pid := range net.Ports {
			name := net.Ports[pid].Name
			if ok, _ := path.Match(f.Link, name); !ok {
				continue
			}
			if f.Action != scenario.FaultLoss && net.Ports[pid].Peer < fabric.PortID(pid) && matchesPeer(f.Link, net, pid) {
				continue // down/up act on the whole link once, even when both ends match
			}
			e := FaultEvent{At: f.At, Port: fabric.PortID(pid), Name: name, Action: f.Action, Loss: f.Loss}
			if f.Entropy != nil {
				e.Entropy, e.HasEntropy = *f.Entropy, true
			}
			evs = append(evs, e)
			n++
		}
		if n == 0 {
			return nil, scenario.Errorf(fmt.Sprintf("faults[%d].link", i), "%q matches no port; port names look like \"h3.p2\", \"p0.t0-1.up3\", \"p0.t1-2.down5\" (lockstep topo lists the shape)", f.Link)
		}
	}
	if len(evs) == 0 {
		return nil, nil
	}
	kind := s.Register("runner.fault", func(now sim.Time, obj int32, _ uint64) {
		e := &evs[obj]
		var err error
		switch e.Action {
		case scenario.FaultDown:
			err = net.SetLinkDown(now, e.Port, true)
		case scenario.FaultUp:
			err = net.SetLinkDown(now, e.Port, false)
		case scenario.FaultLoss:
			if e.HasEntropy {
				err = net.SetEntropyLoss(e.Port, e.Entropy, e.Loss)
			} else {
				err = net.SetLoss(e.Port, e.Loss)
			}
		}
		if err != nil {
			s.Stop(fmt.Errorf("fault at %v on %s: %w", now, e.Name, err))
		}
	})
	for i := range evs {
		s.At(evs[i].At, kind, int32(i), 0)
	}
	return evs, nil
}

// matchesPeer reports whether the pattern also matches the other end of port pid's link.
func matchesPeer(pattern string, net *fabric.Network, pid int) bool {
	ok, _ := path.Match(pattern, net.Ports[net.Ports[pid].Peer].Name)
	return ok
}
