package scenario

import (
	"fmt"
	"strings"
	"testing"
)

// Defaults and canonical names a collective resolves to.
func TestCollectiveResolve(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100G}}\n"
	cases := []struct {
		name, yaml string
		check      func(c *Collective) string
	}{
		{"send_recv default peer", "workload: {collectives: [{op: sendrecv, ranks: 4, bytes: 1MiB}]}", func(c *Collective) string {
			if c.Op != "send_recv" || c.Root != 0 || c.Peer != 1 {
				return "want op send_recv, root 0, peer 1"
			}
			return ""
		}},
		{"aliases canonicalised", "workload: {collectives: [{op: AllReduce, algorithm: Halving-Doubling, bytes: 1MiB}]}", func(c *Collective) string {
			if c.Op != "all_reduce" || c.Algorithm != "halving_doubling" {
				return "want all_reduce and halving_doubling"
			}
			return ""
		}},
		{"reduce_rate 0 is free", "workload: {collectives: [{op: all_reduce, bytes: 1MiB, reduce_rate: 0}]}", func(c *Collective) string {
			if c.ReduceRate != 0 {
				return "want 0"
			}
			return ""
		}},
		{"MoE dtype is the row type", "transport: {kind: ideal}\nworkload: {collectives: [{op: all_to_all, ranks: 8, moe: {tokens: 4096, top_k: 2, hidden: 64, dtype: fp16}}]}", func(c *Collective) string {
			if c.DType != "half" {
				return "want dtype half"
			}
			return ""
		}},
		{"workload defaults to MRC", "workload: {collectives: [{op: all_gather, bytes: 1MiB}]}", func(c *Collective) string {
			if c.Ranks != 16 || c.Iterations != 1 || c.Channels != 1 {
				return "want 16 ranks, 1 iteration, 1 channel"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		sc, err := Parse([]byte(topo + tc.yaml))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		c := &sc.Workload.Collectives[0]
		if msg := tc.check(c); msg != "" {
			t.Errorf("%s: got %+v; %s", tc.name, *c, msg)
		}
		if tc.name == "workload defaults to MRC" && sc.Transport.Kind != "mrc" {
			t.Errorf("%s: transport %q", tc.name, sc.Transport.Kind)
		}
	}
}

// Rank placement: topology (the default; NCCL's order, host order on every builder),
// sequential, shuffled (seeded, recorded in hosts, a fixed point), explicit with hosts; and
// the errors that name the field.
func TestCollectivePlacement(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: roce}\n"
	get := func(y string) (*Collective, error) {
		sc, err := Parse([]byte(topo + y))
		if err != nil {
			return nil, err
		}
		return &sc.Workload.Collectives[0], nil
	}
	for _, p := range []string{"", "topology", "sequential"} {
		y := "workload: {collectives: [{op: all_reduce, bytes: 1MiB}]}"
		if p != "" {
			y = "workload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: " + p + "}]}"
		}
		c, err := get(y)
		if err != nil || len(c.Hosts) != 0 || c.Placement != map[string]string{"": "topology"}[p]+p {
			t.Errorf("placement %q: %+v, %v; want rank r on host r", p, c, err)
		}
	}
	c, err := get("run: {seed: 3}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: shuffled}]}")
	if err != nil || len(c.Hosts) != 16 || c.Placement != "shuffled" {
		t.Fatalf("shuffled: %+v, %v", c, err)
	}
	inOrder := true
	for r, h := range c.Hosts {
		inOrder = inOrder && r == h
	}
	if inOrder {
		t.Errorf("shuffled: hosts %v in order", c.Hosts)
	}
	again, err := get("run: {seed: 3}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: shuffled}]}")
	if err != nil || fmt.Sprint(again.Hosts) != fmt.Sprint(c.Hosts) {
		t.Errorf("shuffled is not deterministic: %v then %v", c.Hosts, again.Hosts)
	}
	c, err = get("workload: {collectives: [{op: all_reduce, bytes: 1MiB, hosts: [3, 2, 1, 0]}]}")
	if err != nil || c.Placement != "explicit" || c.Ranks != 4 {
		t.Errorf("hosts list: %+v, %v; want placement explicit, 4 ranks", c, err)
	}
	for y, want := range map[string]string{
		"workload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: random}]}":                    `workload.collectives[0].placement: "random" is not a placement`,
		"workload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: explicit}]}":                  "workload.collectives[0].placement: explicit, but no hosts list",
		"workload: {collectives: [{op: all_reduce, bytes: 1MiB, placement: sequential, hosts: [0, 1]}]}": "workload.collectives[0].placement: sequential, but hosts lists",
	} {
		if _, err := get(y); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", y, err, want)
		}
	}
}

// The collective header line names the order placement: shuffled drew (rank r on the r-th
// host), not only the resolved scenario.yaml; long orders are elided after MaxPlacementShown.
func TestPlacementLabel(t *testing.T) {
	for _, c := range []struct {
		placement string
		ranks     int
		want      string // a prefix of the label
		hosts     int    // hosts listed
	}{
		{"topology", 8, "topology", 0},
		{"sequential", 8, "sequential", 0},
		{"shuffled", 8, "shuffled: hosts ", 8},
		{"shuffled", 48, "shuffled: hosts ", MaxPlacementShown},
	} {
		sc, err := Parse([]byte(fmt.Sprintf(`
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 64, host_link: 100G}}
transport: {kind: roce}
workload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 1MiB, ranks: %d, placement: %s}]}
`, c.ranks, c.placement)))
		if err != nil {
			t.Fatal(err)
		}
		wc := sc.Workload.Collectives[0]
		got := wc.PlacementLabel()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: label %q; want it to start %q", c.placement, got, c.want)
			continue
		}
		if c.hosts == 0 {
			continue
		}
		list := strings.Fields(strings.SplitN(strings.TrimPrefix(got, c.want), " ...", 2)[0])
		if len(list) != c.hosts || list[0] != fmt.Sprint(wc.Hosts[0]) {
			t.Errorf("%s %d ranks: label %q lists %d hosts from %s; want %d from %d", c.placement, c.ranks, got, len(list), list[0], c.hosts, wc.Hosts[0])
		}
		if c.ranks > MaxPlacementShown && !strings.Contains(got, fmt.Sprintf("(%d more", c.ranks-MaxPlacementShown)) {
			t.Errorf("%s %d ranks: label %q; want the rest counted", c.placement, c.ranks, got)
		}
	}
}
