package rocenic

import "fmt"

// entropy rejects every fault entropy filter under RoCE (transport.Plugin.Entropy): its
// packets carry no entropy value (a QP's ECMP path comes from its UDP source port), so the
// filter would drop nothing.
func entropy(_ any, e int64, _ int, _ func(int) bool, _ string, _ int) error {
	return fmt.Errorf("%d under transport roce, whose packets carry no entropy value (a QP's ECMP path comes from its UDP source port), so the filter would drop nothing (0: every packet); entropy applies to transport mrc (an EV number) and raw traffic with path: spray (a path index)", e)
}
