package fabric

// CreditsLeftByVL exposes, to the external tests, the credits sender port p may still use per
// VL (its FCCL less its FCTBS, blocks): the per-VL books a detour's turn must keep.
func CreditsLeftByVL(n *Network, p PortID) (left [MaxClasses]int64) {
	st := n.Ports[p].cred
	if st == nil {
		return left
	}
	for c := range left {
		left[c] = st.limit[c] - st.sent[c]
	}
	return left
}
