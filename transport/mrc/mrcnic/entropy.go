package mrcnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/transport/mrc"
)

// entropy checks a fault's entropy filter against MRC's EVs (transport.Plugin.Entropy). A
// packet's entropy is its EV's number within its QP (Packet.Entropy = EV, endpoint.go), and
// EVs are numbered plane by plane (mrc.NewEVSet): with A active and B backup EVs over P
// planes, plane p's are p x (A+B)/P up to (p+1) x (A+B)/P - 1, its A/P active ones first
// (resolve makes A and B multiples of P, so the blocks are the same in every QP). An entropy
// must be one of those of the plane of some link the entry names.
func entropy(cfg any, e int64, planes int, onPlane func(p int) bool, target string, targetPlane int) error {
	c, _ := cfg.(*mrc.Config)
	if c == nil {
		return nil
	}
	ev := c.EV
	active, backup := ev.Active, max(ev.Backup, 0)
	if planes < 1 || active%planes != 0 || backup%planes != 0 {
		return nil // resolve rejects these first
	}
	per := (active + backup) / planes
	span := func(p int) string {
		return fmt.Sprintf("%d..%d", p*per, (p+1)*per-1)
	}
	layout := fmt.Sprintf("EVs are numbered plane by plane, %d per plane: %d active then %d backup, from transport.mrc.ev active %d and backup %d over %d planes", per, active/planes, backup/planes, active, backup, planes)
	if e >= int64(active+backup) {
		return fmt.Errorf("%d is beyond the %d EVs of a QP (0..%d: transport.mrc.ev active %d + backup %d), so it would drop nothing; %s is on plane %d: allowed %s", e, active+backup, active+backup-1, active, backup, target, targetPlane, span(targetPlane))
	}
	if evPlane := int(e) / per; !onPlane(evPlane) {
		return fmt.Errorf("%d is an EV of plane %d (EVs %s), but %s is on plane %d, which its packets never cross; allowed %s there (%s)", e, evPlane, span(evPlane), target, targetPlane, span(targetPlane), layout)
	}
	return nil
}
