package roce

import "fmt"

// Stripe splits a transfer of bytes over qps QPs (QP scaling: applications open several QPs
// per peer so that ECMP spreads them [docs/protocols.md, "RoCEv2: QP scaling and ECMP"]) and
// returns each QP's share, in QP order, summing to bytes.
//
// The split is in whole units of unit bytes (pass Config.PayloadBytes, so no QP sends a short
// packet mid-transfer and the total packet count is what one QP would send): the
// ceil(bytes/unit) units are dealt as evenly as possible, the first (units mod qps) QPs taking
// one more, and the short last unit (bytes mod unit, if any) is taken from QP 0's share, which
// holds the most units. Shares therefore differ by at most one unit. When the transfer has
// fewer units than QPs, the trailing QPs get 0 bytes: post nothing on them (a zero-length
// write would still cost a packet). unit <= 1 splits byte by byte.
//
// Errors: qps < 1, or bytes < 0.
func Stripe(bytes int64, qps int, unit int64) ([]int64, error) {
	if qps < 1 {
		return nil, fmt.Errorf("roce: stripe over %d QPs; want at least 1", qps)
	}
	if bytes < 0 {
		return nil, fmt.Errorf("roce: stripe of %d B; want a length >= 0", bytes)
	}
	if unit < 1 {
		unit = 1
	}
	units := bytes / unit
	short := bytes % unit // bytes of a partial last unit
	if short != 0 {
		units++
	}
	q, r := units/int64(qps), units%int64(qps)
	shares := make([]int64, qps)
	for i := range shares {
		n := q
		if int64(i) < r {
			n++
		}
		shares[i] = n * unit
	}
	if short != 0 {
		shares[0] -= unit - short
	}
	return shares, nil
}
