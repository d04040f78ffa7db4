package scenario

import "testing"

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
		if tc.name == "workload defaults to MRC" && sc.Transport.Kind != TransportMRC {
			t.Errorf("%s: transport %q", tc.name, sc.Transport.Kind)
		}
	}
}
