package collective

import (
	"hash/fnv"
	"testing"
)

// TestCommHash: Hash is hash/fnv's New64a over the hosts as 4 little-endian bytes each, for
// communicators of several sizes and host ranges (the flow engine's Router keys depend on it).
func TestCommHash(t *testing.T) {
	cases := [][]int{{0}, {1, 0}, {5, 9, 300, 70000}, {1<<31 - 1, 0, 65536}}
	big := make([]int, 1024)
	for i := range big {
		big[i] = 131071 - 7*i
	}
	cases = append(cases, big)
	for _, hosts := range cases {
		c, err := NewComm(hosts)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		for _, x := range hosts {
			h.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
		}
		if got, want := c.Hash(), h.Sum64(); got != want {
			t.Errorf("%d hosts: Hash %#x, want %#x", len(hosts), got, want)
		}
	}
	if got, want := (Comm{}).Hash(), fnv.New64a().Sum64(); got != want {
		t.Errorf("zero Comm: Hash %#x, want %#x", got, want)
	}
}
