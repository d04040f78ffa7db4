package scenario

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse runs whole scenarios through decoding, defaults and validation (topology layout
// included). Properties: no panic; an error is one line; a scenario that parses encodes to
// YAML that parses again to the same resolved scenario (the results folder's scenario.yaml
// reproduces the run).
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	for _, s := range []string{
		"topology: {clos: {tiers: 3, planes: 2, radix: 8, host_link: 100G}}\ntraffic: [{pattern: permutation, path: spread}]\n",
		"topology: {clos: {tiers: 2, radix: 16, hosts: 20, host_link: 400G, oversubscription: [3]}}\ntraffic: [{pattern: incast, senders: [1, 2], receiver: 0}]\n",
		"topology: {clos: {tiers: 2, radix: 8, host_link: 100G, parallel_links: [2]}}\ntraffic: [{pattern: flows, flows: [{src: 0, dst: 3, rate: 10G}]}]\nrun: {duration: 5us, seed: 9}\n",
		"topology: {clos: {tiers: 2, radix: 7}}\n",
		"name: x\n",
		"topology: {clos: {tiers: 2, planes: 2, radix: 8, host_link: 100G}}\nfabric: {pfc: {xoff: 64KiB, classes: [1]}, reconvergence: 200us}\ntransport: {kind: roce, roce: {qps_per_peer: 4, dcqcn: {g: 0.01}}}\ntraffic: [{pattern: permutation, bytes: 1MiB}]\n",
		"topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100G}}\ntransport: {kind: ideal, ideal: {latency: 2us}}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 1MiB, max_bytes: 4MiB, chunk: 64KiB, channels: 2}]}\n",
		"topology: {clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}}\ntransport: {kind: mrc}\nworkload: {collectives: [{name: a, op: all_gather, hosts: [0, 2, 4], bytes: 96KiB}, {op: all_to_all, ranks: 4, moe: {tokens: 4096, top_k: 2, hidden: 64}}]}\n",
		"topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100G}}\ntransport: {kind: ideal}\nworkload: {collectives: [{op: broadcast, root: 3, bytes: 1MiB, dtype: bf16, reduce_rate: 1Tbps, iterations: 3}, {op: sendrecv, root: 1, peer: 2, bytes: 1MiB}, {op: all_reduce, algorithm: hierarchical, ranks: 16, inner: 4, outer: 4, bytes: 1MiB}]}\n",
		"topology: {clos: {tiers: 2, planes: 2, radix: 8, host_link: 100G}}\ntransport: {kind: mrc}\ntraffic: [{pattern: poisson, start: 1us, arrivals: {load: 0.5, sizes: hadoop, duration: 20us, src: [0, 1], dst: [2, 3]}}]\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\ntransport: {kind: roce}\ntraffic: [{pattern: onoff, arrivals: {rate: 1e6, sizes: fixed 64KiB, count: 20, on: 2us, off: 6us}}]\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\ntraffic: [{pattern: flows, flows: [{src: 0, dst: 1}], load: 0.8, process: poisson}]\nrun: {duration: 5us}\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\nfabric: {switch_model: {kind: voq, ingress_buffer: 2MiB, voq_buffer: 512KiB, egress_threshold: 8KiB}}\ntransport: {kind: mrc}\ntraffic: [{pattern: incast, senders: [1, 2, 3], receiver: 0, bytes: 64KiB}]\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\nfabric: {switch_model: {kind: shared_ingress}, pfc: {enabled: false}}\ntransport: {kind: roce}\ntraffic: [{pattern: permutation, bytes: 64KiB}]\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\nfabric: {switch_model: {kind: output}}\ntraffic: [{pattern: permutation}]\n",
		"topology: {clos: {tiers: 2, planes: 2, radix: 8, host_link: 800G}}\nfabric: {adaptive_routing: {enabled: true}}\ntransport: {kind: ib, ib: {credits: {buffer_per_vl: 8KiB}, cc: {enabled: true, threshold: 32KiB}, out_of_order: {window: 512}}}\ntraffic: [{pattern: permutation, bytes: 1MiB}]\n",
		"topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\ntransport: {kind: ib, ib: {credits: {enabled: false, host_buffer_per_vl: 4160B}, cc: {enabled: false, ccti_limit: 64}}}\ntraffic: [{pattern: incast, senders: [1, 2], receiver: 0, bytes: 64KiB}]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		y, err := Encode(sc)
		if err != nil {
			t.Fatalf("encode a parsed scenario: %v", err)
		}
		sc2, err := Parse(y)
		if err != nil {
			t.Fatalf("resolved scenario does not parse: %v\n%s", err, y)
		}
		y2, err := Encode(sc2)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(y, y2) {
			t.Fatalf("resolved scenario is not a fixed point:\n%s\n---\n%s", y, y2)
		}
	})
}
