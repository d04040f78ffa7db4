package scenario

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestHostListText: UnmarshalText reads hosts and inclusive ranges separated by commas,
// refuses what is not one (naming the item and what is allowed), and String writes a list
// back compactly in a form UnmarshalText reads to the same list.
func TestHostListText(t *testing.T) {
	seq := func(lo, hi int) HostList {
		var h HostList
		for x := lo; x <= hi; x++ {
			h = append(h, x)
		}
		return h
	}
	for _, c := range []struct {
		in   string
		want HostList
		text string // String of want ("" : in)
		err  string // "": accepted
	}{
		{in: "17", want: HostList{17}},
		{in: "0", want: HostList{0}},
		{in: "0-254", want: seq(0, 254)},
		{in: "1-7, 9", want: append(seq(1, 7), 9)},
		{in: " 3 - 5 ,8", want: HostList{3, 4, 5, 8}, text: "3-5, 8"},
		{in: "5-5", want: HostList{5}, text: "5"},
		{in: "9, 1-3", want: HostList{9, 1, 2, 3}},
		{in: "1, 2, 3, 5", want: HostList{1, 2, 3, 5}, text: "1-3, 5"},
		{in: "0x10, 0b11, 0o7, 1_000", want: HostList{16, 3, 7, 1000}, text: "16, 3, 7, 1000"},
		{in: "2147483647", want: HostList{2147483647}},
		{in: "", err: "an empty item"},
		{in: "1,,2", err: "an empty item"},
		{in: "1,", err: "an empty item"},
		{in: "-1", err: `"-1": a host index is never negative`},
		{in: "7-3", err: `"7-3": the range ends below its start; want lo <= hi ("3-7")`},
		{in: "1-2-3", err: `"2-3" is not a host index`},
		{in: "a", err: `"a": "a" is not a host index (0 to 2147483647); want a host index >= 0 (17) or a range lo-hi ("0-254")`},
		{in: "1-", err: `"1-": a number is missing`},
		{in: "+3", err: `"+3" is signed`},
		{in: "2147483648", err: "is not a host index"},
		{in: "1.5", err: "is not a host index"},
		{in: fmt.Sprintf("0-%d", MaxHostList), err: fmt.Sprintf("%d hosts in all; allowed at most %d", MaxHostList+1, MaxHostList)},
		{in: fmt.Sprintf("0-%d, 5", MaxHostList-1), err: "allowed at most"},
		{in: fmt.Sprintf("0-%d", MaxHostList-1), want: seq(0, MaxHostList-1), text: fmt.Sprintf("0-%d", MaxHostList-1)},
	} {
		var h HostList
		err := h.UnmarshalText([]byte(c.in))
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v; want one containing %q", c.in, err, c.err)
			continue
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
			continue
		case c.err != "":
			continue
		}
		if !slices.Equal(h, c.want) {
			t.Errorf("%q: %d hosts %.40v; want %d %.40v", c.in, len(h), h, len(c.want), c.want)
		}
		text := c.text
		if text == "" {
			text = c.in
		}
		if got := h.String(); got != text {
			t.Errorf("%q: String %q; want %q", c.in, got, text)
		}
	}
}

// TestSendersYAML: traffic[i].senders takes a list of hosts and ranges or one text, gives the
// same hosts either way, and the resolved scenario writes it back compactly and reads back
// to the same list; bad items are errors naming the item's path and line.
func TestSendersYAML(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: ib}\n" +
		"traffic:\n  - {pattern: incast, receiver: 0, bytes: 64KB, senders: %s}\n"
	want := HostList{1, 2, 3, 4, 5, 6, 7, 9, 12}
	for _, c := range []struct {
		in, err string
	}{
		{in: "[1, 2, 3, 4, 5, 6, 7, 9, 12]"},
		{in: "[1-7, 9, 12]"},
		{in: "[1-3, 4-7, 9, 0xc]"},
		{in: `"1-7, 9, 12"`},
		{in: "'1-7,9,12'"},
		{in: "[1-7, [9]]", err: "traffic[0].senders[1] (line 4): want one item of scenario.HostList (a single value), got a list"},
		{in: "[1-7, null]", err: "traffic[0].senders[1] (line 4)"},
		{in: "[7-1]", err: `traffic[0].senders[0] (line 4): "7-1": the range ends below its start`},
		{in: "[1-16]", err: "traffic[0].senders[15]: host 16 does not exist; allowed 0..15"},
		{in: "[1-5, 3]", err: "host 3 is listed twice"},
		{in: "[0-3]", err: "host 0 is also the receiver"},
	} {
		sc, err := Parse([]byte(fmt.Sprintf(y, c.in)))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("senders %s: error %v; want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("senders %s: %v", c.in, err)
			continue
		}
		if got := sc.Traffic[0].Senders; !slices.Equal(got, want) {
			t.Errorf("senders %s: %v; want %v", c.in, got, want)
		}
		out, err := Encode(sc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "senders: 1-7, 9, 12\n") {
			t.Errorf("senders %s: resolved scenario writes\n%s\nwant senders: 1-7, 9, 12", c.in, out)
		}
		back, err := Parse(out)
		if err != nil || !slices.Equal(back.Traffic[0].Senders, want) {
			t.Errorf("senders %s: the written scenario reads back %v (%v); want %v", c.in, back.Traffic[0].Senders, err, want)
		}
	}
}

// FuzzHostList: any text either is refused or gives at most MaxHostList non-negative hosts
// whose String reads back to the same list; nothing panics.
func FuzzHostList(f *testing.F) {
	for _, s := range []string{"17", "0-254", "1-7, 9", "0x10, 0b11", "7-3", "1,,2", "-1", "1-2-3", " 3 - 5 ,8", "0-1048575", "2147483647", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var h HostList
		if err := h.UnmarshalText([]byte(s)); err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: an empty error", s)
			}
			return
		}
		if len(h) == 0 || len(h) > MaxHostList {
			t.Fatalf("%q: %d hosts; want 1..%d", s, len(h), MaxHostList)
		}
		for _, x := range h {
			if x < 0 {
				t.Fatalf("%q: host %d", s, x)
			}
		}
		var back HostList
		if err := back.UnmarshalText([]byte(h.String())); err != nil || !slices.Equal(back, h) {
			t.Fatalf("%q: String %q reads back to %d hosts (%v); want the same %d", s, h.String(), len(back), err, len(h))
		}
	})
}
