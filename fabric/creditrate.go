package fabric

import "github.com/lockstepsim/lockstep/sim"

// CreditRate is the most one link of rate c and one-way delay d carries on one VL under
// credit flow control [IBTA vol 1 §7.9] when the receiver advertises buffer bytes and every
// packet is pkt bytes on the wire: min(c, floor(B / P) x pkt x 8 / RTT) bits/s, B the buffer
// in whole 64-byte blocks, P a packet's blocks, and RTT the credit round trip of an idle
// receiver: the packet's serialisation, the delay there, the delay back and the
// flow-control packet's serialisation (FCPacketBytes). Only whole packets go, so a buffer
// of 1.9 packets runs as one (8 KiB at a 4,122-byte packet: 128 blocks, 65 per packet). A
// receiving switch that holds the packet longer (its egress busy or itself waiting for
// credits) only lengthens the round trip: the form is an upper bound under load, the
// closed form TestCreditRateClosedForm checks against the simulated link. c when the
// buffer is not positive or pkt is not (no credit limit known); 0 when the buffer holds
// no whole packet (it could never be sent: CreditCheck warns).
func CreditRate(c sim.Rate, d sim.Time, buffer sim.Size, pkt int64) sim.Rate {
	if buffer <= 0 || pkt <= 0 || c <= 0 {
		return c
	}
	n := (int64(buffer) / CreditBlockBytes) / blocks(pkt)
	if n <= 0 {
		return 0
	}
	rtt := c.TxTime(pkt) + 2*max(d, 0) + c.TxTime(FCPacketBytes)
	if rtt <= 0 {
		return c
	}
	r := float64(n) * float64(pkt) * 8 / rtt.Seconds()
	if r >= float64(c) {
		return c
	}
	return sim.Rate(r)
}
