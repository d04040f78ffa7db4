package collective

import "fmt"

// Comm is a communicator: an ordered list of ranks, rank r running on fabric host Host(r).
// Any subset of the hosts, in any order, can form a communicator, and several communicators
// can run collectives at once on one Executor (tensor-, data- and expert-parallel groups).
// The zero value is an empty communicator; build one with NewComm. Comm is immutable.
type Comm struct {
	hosts []int32
	hash  uint64 // FNV-1a 64 of the hosts (Hash), computed once by NewComm
}

// NewComm returns the communicator whose rank r runs on hosts[r]. Errors: no hosts, a negative
// host, a host listed twice (two ranks on one host).
func NewComm(hosts []int) (Comm, error) {
	if len(hosts) == 0 {
		return Comm{}, fieldError("comm.hosts", "[]", "a communicator needs >= 1 rank")
	}
	if len(hosts) > 1<<24 {
		return Comm{}, fieldError("comm.hosts", fmt.Sprintf("%d ranks", len(hosts)), "at most 16777216 ranks")
	}
	seen := make(map[int]int, len(hosts))
	h := make([]int32, len(hosts))
	for r, x := range hosts {
		if x < 0 || x > 1<<31-1 {
			return Comm{}, fieldError(fmt.Sprintf("comm.hosts[%d]", r), x, "must be a host index >= 0")
		}
		if prev, dup := seen[x]; dup {
			return Comm{}, fieldError(fmt.Sprintf("comm.hosts[%d]", r), x, fmt.Sprintf("host already holds rank %d; each rank needs its own host", prev))
		}
		seen[x] = r
		h[r] = int32(x)
	}
	return Comm{hosts: h, hash: hashHosts(h)}, nil
}

// FNV-1a 64-bit parameters (offset basis and prime), as in Go's hash/fnv and the FNV
// specification (draft-eastlake-fnv).
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// hashHosts is FNV-1a 64 over the hosts, each as 4 little-endian bytes.
func hashHosts(hosts []int32) uint64 {
	h := uint64(fnvOffset64)
	for _, x := range hosts {
		for k := 0; k < 32; k += 8 {
			h ^= uint64(byte(x >> k))
			h *= fnvPrime64
		}
	}
	return h
}

// Hash returns the FNV-1a 64-bit hash of the rank-to-host list, each host as 4 little-endian
// bytes, in rank order (the same value hash/fnv's New64a gives over those bytes): a stable
// key for the communicator, computed once when it is built, so a runner that keys
// connections by communicator pays nothing per collective. The zero Comm hashes to the FNV
// offset basis.
func (c Comm) Hash() uint64 {
	if c.hosts == nil {
		return fnvOffset64
	}
	return c.hash
}

// RangeComm returns the communicator of n ranks on hosts first, first+stride, ...
// (e.g. RangeComm(0, 64, 1) is hosts 0..63; RangeComm(3, 8, 8) is the rail of local GPU 3 on
// 8 servers of 8). Errors as NewComm, and n < 1 or stride < 1.
func RangeComm(first, n, stride int) (Comm, error) {
	if n < 1 {
		return Comm{}, fieldError("comm.ranks", n, "must be >= 1")
	}
	if stride < 1 {
		return Comm{}, fieldError("comm.stride", stride, "must be >= 1")
	}
	hosts := make([]int, n)
	for i := range hosts {
		hosts[i] = first + i*stride
	}
	return NewComm(hosts)
}

// Size returns the number of ranks.
func (c Comm) Size() int { return len(c.hosts) }

// Host returns the fabric host index of rank r (0 <= r < Size()).
func (c Comm) Host(r int) int { return int(c.hosts[r]) }

// Hosts returns a copy of the rank-to-host list.
func (c Comm) Hosts() []int {
	out := make([]int, len(c.hosts))
	for i, h := range c.hosts {
		out[i] = int(h)
	}
	return out
}
