package flow

// sortDone sorts buf by id (ids are unique, so the order is total) and returns the sorted
// entries, in buf or in tmp (grown as needed), with the other slice as the next scratch. A
// batch of a few entries is insertion-sorted; a larger one (an all-to-all phase's flows
// finishing at one instant: thousands) is radix-sorted by id minus the batch's least id,
// one byte a pass, only as many passes as the ids' span needs: O(n) per pass, against the
// O(n log n) comparisons through a function value of slices.SortFunc.
func sortDone(buf, tmp []doneRef) (sorted, scratch []doneRef) {
	if len(buf) <= 32 {
		for i := 1; i < len(buf); i++ {
			x := buf[i]
			j := i
			for j > 0 && buf[j-1].id > x.id {
				buf[j] = buf[j-1]
				j--
			}
			buf[j] = x
		}
		return buf, tmp
	}
	lo, hi := buf[0].id, buf[0].id
	for _, d := range buf[1:] {
		lo, hi = min(lo, d.id), max(hi, d.id)
	}
	span := uint64(hi - lo)
	if cap(tmp) < len(buf) {
		tmp = make([]doneRef, len(buf), 2*len(buf))
	}
	tmp = tmp[:len(buf)]
	src, dst := buf, tmp
	var count [256]int
	for shift := uint(0); shift < 64 && span>>shift > 0; shift += 8 {
		clear(count[:])
		for _, d := range src {
			count[(uint64(d.id-lo)>>shift)&0xff]++
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, d := range src {
			k := (uint64(d.id-lo) >> shift) & 0xff
			dst[count[k]] = d
			count[k]++
		}
		src, dst = dst, src
	}
	return src, dst
}
