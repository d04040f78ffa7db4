package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// HostList is traffic[i].senders: host indices. YAML gives it as a list whose items are a
// host or an inclusive range of hosts ([1, 2, 8-15]), or as one text of such items separated
// by commas (1-255, "1-7, 9"); integers take 0x, 0o and 0b prefixes and "_" separators as
// everywhere in a scenario. Ranges expand in order: "3-5" is 3, 4, 5. Encode writes it back
// compactly as one text (MarshalText: consecutive hosts as ranges). The hosts themselves (in
// the topology, none twice, not the receiver) are checked by Resolve.
type HostList []int

// MaxHostList is the most hosts one HostList may expand to, 2^20: a bound on what a range
// allocates before the topology is known (the largest topologies have about a million hosts).
const MaxHostList = 1 << 20

// UnmarshalText implements encoding.TextUnmarshaler: comma-separated items, each a host
// ("17") or an inclusive range lo-hi with lo <= hi ("0-254"). Errors say which item is wrong
// and what is allowed (the decoder names the field, the line and the text).
func (h *HostList) UnmarshalText(b []byte) error {
	var out HostList
	n := 0
	for _, item := range strings.Split(string(b), ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return fmt.Errorf("an empty item; want hosts and ranges separated by commas (\"1-7, 9\")")
		}
		if item[0] == '-' {
			return fmt.Errorf("%q: a host index is never negative; want a host index >= 0 (17) or a range lo-hi (\"0-254\")", item)
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parseHost(lo)
		if err != nil {
			return fmt.Errorf("%q: %v; want a host index >= 0 (17) or a range lo-hi (\"0-254\")", item, err)
		}
		z := a
		if isRange {
			if z, err = parseHost(hi); err != nil {
				return fmt.Errorf("%q: %v; want a range lo-hi of host indices >= 0 (\"0-254\")", item, err)
			}
			if z < a {
				return fmt.Errorf("%q: the range ends below its start; want lo <= hi (\"%d-%d\")", item, z, a)
			}
		}
		if n += z - a + 1; n > MaxHostList {
			return fmt.Errorf("%q: %d hosts in all; allowed at most %d", item, n, MaxHostList)
		}
		for x := a; x <= z; x++ {
			out = append(out, x)
		}
	}
	*h = out
	return nil
}

// parseHost reads one host index: a non-negative integer (0x, 0o, 0b prefixes and "_"
// separators allowed), below 2^31.
func parseHost(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("a number is missing")
	}
	if s[0] == '+' || s[0] == '-' {
		return 0, fmt.Errorf("%q is signed", s)
	}
	v, err := strconv.ParseInt(s, 0, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a host index (0 to %d)", s, int64(1)<<31-1)
	}
	return int(v), nil
}

// String writes h compactly: runs of consecutive hosts as lo-hi, the items separated by ", "
// ("1-255", "0, 2-5, 9"); UnmarshalText reads it back to an equal list.
func (h HostList) String() string {
	var b strings.Builder
	for i := 0; i < len(h); {
		j := i
		for j+1 < len(h) && h[j+1] == h[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(h[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(h[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MarshalText implements encoding.TextMarshaler with String.
func (h HostList) MarshalText() ([]byte, error) { return []byte(h.String()), nil }
