package fault

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// Expand fills each spec's defaults (WithDefaults, on copies: specs is not modified),
// validates it, resolves its target against inv, expands flaps, For restores and random
// processes into timed events, and checks the whole schedule for contradictions (see the
// package documentation). Errors are *Error values naming the entry and field.
func Expand(specs []Spec, inv *Inventory, opt Options) (*Schedule, error) {
	x := &expander{inv: inv, opt: opt, prefix: opt.Path, specs: make([]Spec, len(specs))}
	if x.prefix == "" {
		x.prefix = "faults"
	}
	x.sch = &Schedule{Entries: make([]EntryStats, len(specs))}
	for i := range specs {
		x.specs[i] = specs[i].WithDefaults(opt.Duration)
		if err := x.specs[i].Validate(x.path(i), opt.Duration); err != nil {
			return nil, err
		}
	}
	var units []unit
	for i := range x.specs {
		els, err := x.elements(i)
		if err != nil {
			return nil, err
		}
		x.sch.Entries[i].Elements = len(els)
		if x.count+x.estimate(i, els) > MaxEvents {
			return nil, errorf(x.path(i), "the schedule expands to more than %d events by this entry; narrow its target, or lower its count or random rate", MaxEvents)
		}
		if x.specs[i].Random == nil {
			for e := range els {
				x.explicit(i, &els[e])
			}
		} else {
			x.spans = true
			units = append(units, x.random(i, els)...)
		}
		if x.count > MaxEvents {
			return nil, errorf(x.path(i), "the schedule expands to more than %d events by this entry; narrow its target, or lower its count or random rate", MaxEvents)
		}
	}
	if err := x.checkAtStep(); err != nil {
		return nil, err
	}
	out, err := x.check()
	if err != nil {
		return nil, err
	}
	out = x.admit(units, out)
	order := byTime(out, true)
	x.sch.Events = make([]Event, len(out))
	for i, j := range order {
		e := out[j].Event
		e.Step = -1
		if st := x.specs[e.Entry].AtStep; st != nil {
			e.Step = *st
		}
		x.sch.Events[i] = e
		x.sch.Entries[out[j].Entry].Events++
	}
	return x.sch, nil
}

// checkAtStep rejects an element that an AtStep entry acts on and another entry names too:
// an AtStep entry's times are known only when its step starts, so its events cannot be
// ordered against another entry's at load time (the contradiction checks then see every
// AtStep entry alone: no other touches its elements). Elements are links (either end) and
// switches.
func (x *expander) checkAtStep() error {
	var steps []int
	for i := range x.specs {
		if x.specs[i].AtStep != nil {
			steps = append(steps, i)
		}
	}
	if len(steps) == 0 {
		return nil
	}
	type key struct {
		link bool
		id   int32
	}
	owner := map[key]int{}
	keys := func(i int) ([]key, error) {
		els, err := x.elements(i)
		if err != nil {
			return nil, err
		}
		var out []key
		for _, el := range els {
			if el.node >= 0 {
				out = append(out, key{false, el.node})
			}
			for _, p := range el.links {
				out = append(out, key{true, x.linkID(p)})
			}
			for _, p := range el.ports {
				out = append(out, key{true, x.linkID(p)})
			}
		}
		return out, nil
	}
	for i := range x.specs {
		ks, err := keys(i)
		if err != nil {
			return err
		}
		for _, k := range ks {
			j, ok := owner[k]
			if !ok {
				owner[k] = i
				continue
			}
			if j == i || (x.specs[i].AtStep == nil && x.specs[j].AtStep == nil) {
				continue
			}
			a, b := j, i
			if x.specs[a].AtStep == nil {
				a, b = b, a
			}
			what := "switch " + x.inv.Nodes[k.id].Name
			if k.link {
				what = "link " + x.inv.Ports[k.id].Name
			}
			return errorf(x.path(a)+".at_step", "acts on %s, which %s names too; an element an at_step entry acts on takes no other entry (their order is known only as the run goes): give both an at (simulated time from the job's start), or make them one entry (for, a flap train)", what, x.path(b))
		}
	}
	return nil
}

// byTime returns the indices of evs in time order, then entry, then generation order (and,
// with sub, the order of a heal's restores). It sorts indices rather than the events, which
// are large.
func byTime(evs []pending, sub bool) []int32 {
	order := make([]int32, len(evs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &evs[i], &evs[j]
		if c := cmp.Compare(a.At, b.At); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Entry, b.Entry); c != 0 {
			return c
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 || !sub {
			return c
		}
		return cmp.Compare(a.sub, b.sub)
	})
	return order
}

// pending is an event being built, with its generation order for a stable sort.
type pending struct {
	Event
	seq  int   // generation order
	sub  int32 // order among the restores one heal resolved to
	heal int32 // the target of an opHeal: an index in expander.heals
}

// element is one matched target with what the entry's action acts on.
type element struct {
	name  string
	node  int32      // the switch (blackhole; heal of a switch); -1
	links []int32    // named ends of the links acted on (link ops; heal)
	ports []int32    // ports acted on (loss, ber; heal: both ends of every link)
	rates []sim.Rate // degrade: the new rate of each link
}

// unit is one random failure with its restore: accepted or skipped as a whole.
type unit struct {
	entry, el  int
	start, end sim.Time // end is MaxTime when never restored
	lo, hi     int      // its events: expander.rev[lo:hi]
	keys       []akey
}

type expander struct {
	inv     *Inventory
	opt     Options
	prefix  string
	specs   []Spec
	sch     *Schedule
	evs     []pending // explicit events
	rev     []pending // random events, unit by unit
	seq     int
	count   int
	spans   bool      // a random process needs the explicit events' spans
	heals   []element // targets of heal events
	checker *checker
}

func (x *expander) path(i int) string { return x.prefix + "[" + strconv.Itoa(i) + "]" }

// linkID identifies the link of port p: the lower port ID of its two ends.
func (x *expander) linkID(p int32) int32 { return min(p, x.inv.Ports[p].Peer) }

// linkName names the link of port p after its lower end, as topo names links.
func (x *expander) linkName(p int32) string { return x.inv.Ports[x.linkID(p)].Name }

// elements resolves entry i's target into the elements its action acts on, each link, port
// or switch once per entry even when the pattern matches it through several names.
func (x *expander) elements(i int) ([]element, error) {
	s := &x.specs[i]
	kind, pat := s.Target()
	ts := x.inv.match(kind, pat, s.Breakout)
	if len(ts) == 0 {
		return nil, x.inv.noMatch(x.path(i), kind, pat, s.Breakout)
	}
	seenLink := make(map[int32]bool)
	seenPort := make(map[int32]bool)
	addLink := func(el *element, p int32) {
		if k := x.linkID(p); !seenLink[k] {
			seenLink[k] = true
			el.links = append(el.links, p)
		}
	}
	addPort := func(el *element, p int32) {
		if !seenPort[p] {
			seenPort[p] = true
			el.ports = append(el.ports, p)
		}
	}
	var els []element
	for _, t := range ts {
		el := element{name: t.name, node: -1}
		switch s.Action {
		case ActionDown, ActionUp, ActionFlap, ActionDegrade, ActionUndegrade:
			for _, p := range t.ports {
				addLink(&el, p)
			}
		case ActionLoss, ActionBER:
			for _, p := range t.ports {
				peer := x.inv.Ports[p].Peer
				switch s.Direction {
				case DirOut:
					addPort(&el, p)
				case DirIn:
					addPort(&el, peer)
				case DirBoth:
					addPort(&el, p)
					addPort(&el, peer)
				}
			}
		case ActionBlackhole:
			el.node = t.node
		case ActionHeal:
			for _, p := range t.ports {
				addLink(&el, p)
			}
			for _, p := range el.links {
				addPort(&el, p)
				addPort(&el, x.inv.Ports[p].Peer)
			}
			el.node = t.node
		}
		if len(el.links) == 0 && len(el.ports) == 0 && el.node < 0 {
			continue // every link of this match was already matched through another name
		}
		if s.Action == ActionDegrade {
			for _, p := range el.links {
				built := x.inv.Ports[p].Rate
				r := s.Rate
				field := ".rate"
				if s.Factor != 0 {
					r, field = sim.Rate(float64(built)*s.Factor), ".factor"
				}
				switch {
				case r < 1:
					return nil, errorf(x.path(i)+field, "%v of link %s (%v) is below 1 bps; allowed a fraction that leaves a positive rate", s.Factor, x.linkName(p), built)
				case r >= built:
					return nil, errorf(x.path(i)+field, "%v is not below the rate of link %s (%v); a degrade lowers a link's rate (undegrade restores it)", r, x.linkName(p), built)
				}
				el.rates = append(el.rates, r)
			}
		}
		els = append(els, el)
	}
	return els, nil
}

// estimate bounds the events entry i makes on els: exactly for an explicit entry, and a
// lower estimate for a random process (which checks the exact bound as it draws).
func (x *expander) estimate(i int, els []element) int {
	s := &x.specs[i]
	per := 2 // the action and its restore
	if s.Action == ActionFlap {
		per = 2 * s.Count
	}
	if r := s.Random; r != nil {
		// Half the expected number of failures (ignoring repair times), so a process whose
		// draws would surely exceed the bound is rejected before drawing; the draw loop
		// enforces the exact bound.
		mean := float64(r.MTBF)
		if r.PerDay > 0 {
			mean = psPerDay / r.PerDay
		}
		n := 0.0
		for e := range els {
			n += float64(per*(len(els[e].links)+len(els[e].ports)+1)) * float64(r.Until-s.At) / mean / 2
		}
		return int(min(n, 2*MaxEvents))
	}
	n := 0
	for e := range els {
		n += per * (len(els[e].links) + len(els[e].ports) + 1)
		if n > MaxEvents {
			break
		}
	}
	return n
}

// emit appends one event of entry i to dst.
func (x *expander) emit(dst *[]pending, ev Event) {
	x.seq++
	x.count++
	*dst = append(*dst, pending{Event: ev, seq: x.seq})
}

// act emits entry i's action on el at t: the failure (or the explicit restore it names).
func (x *expander) act(dst *[]pending, i int, el *element, t sim.Time, cycle int, random bool) {
	s := &x.specs[i]
	base := Event{At: t, Port: -1, Node: -1, Entry: i, Action: s.Action, Target: el.name, Cycle: cycle, Random: random}
	port := func(op Op, p int32) Event {
		ev := base
		ev.Op, ev.Port, ev.Name = op, p, x.inv.Ports[p].Name
		return ev
	}
	switch s.Action {
	case ActionDown, ActionFlap:
		for _, p := range el.links {
			x.emit(dst, port(OpDown, p))
		}
	case ActionUp:
		for _, p := range el.links {
			x.emit(dst, port(OpUp, p))
		}
	case ActionDegrade:
		for j, p := range el.links {
			ev := port(OpDegrade, p)
			ev.Rate = el.rates[j]
			x.emit(dst, ev)
		}
	case ActionUndegrade:
		for _, p := range el.links {
			ev := port(OpUndegrade, p)
			ev.Rate = x.inv.Ports[p].Rate
			x.emit(dst, ev)
		}
	case ActionLoss, ActionBER:
		op, prob := OpLoss, s.Loss
		if s.Action == ActionBER {
			op, prob = OpBER, s.BER
		}
		for _, p := range el.ports {
			ev := port(op, p)
			ev.Prob = prob
			if s.Entropy != nil {
				ev.Entropy, ev.HasEntropy = *s.Entropy, true
			}
			x.emit(dst, ev)
		}
	case ActionBlackhole:
		ev := base
		ev.Op, ev.Node, ev.Name = OpBlackhole, el.node, x.inv.Nodes[el.node].Name
		x.emit(dst, ev)
	case ActionHeal:
		ev := base
		ev.Op, ev.Name = opHeal, el.name
		x.emit(dst, ev)
		(*dst)[len(*dst)-1].heal = int32(len(x.heals))
		x.heals = append(x.heals, *el)
	}
}

// restore emits the restore of entry i's failure on el at t.
func (x *expander) restore(dst *[]pending, i int, el *element, t sim.Time, cycle int, random bool) {
	s := &x.specs[i]
	start := len(*dst)
	switch s.Action {
	case ActionDown, ActionFlap:
		for _, p := range el.links {
			x.emit(dst, Event{At: t, Op: OpUp, Port: p, Node: -1, Name: x.inv.Ports[p].Name})
		}
	case ActionDegrade:
		for _, p := range el.links {
			x.emit(dst, Event{At: t, Op: OpUndegrade, Port: p, Node: -1, Name: x.inv.Ports[p].Name, Rate: x.inv.Ports[p].Rate})
		}
	case ActionLoss, ActionBER:
		op := OpLoss
		if s.Action == ActionBER {
			op = OpBER
		}
		for _, p := range el.ports {
			ev := Event{At: t, Op: op, Port: p, Node: -1, Name: x.inv.Ports[p].Name}
			if s.Entropy != nil {
				ev.Entropy, ev.HasEntropy = *s.Entropy, true
			}
			x.emit(dst, ev)
		}
	case ActionBlackhole:
		x.emit(dst, Event{At: t, Op: OpUnblackhole, Port: -1, Node: el.node, Name: x.inv.Nodes[el.node].Name})
	}
	for j := start; j < len(*dst); j++ {
		ev := &(*dst)[j]
		ev.Entry, ev.Action, ev.Target, ev.Cycle, ev.Restore, ev.Random = i, s.Action, el.name, cycle, true, random
	}
}

// explicit emits entry i's timed events on el: the action at At, a flap's train, a For
// restore.
func (x *expander) explicit(i int, el *element) {
	s := &x.specs[i]
	if s.Action == ActionFlap {
		x.flap(&x.evs, i, el, s.At, false)
		return
	}
	x.act(&x.evs, i, el, s.At, 0, false)
	if s.For > 0 {
		x.restore(&x.evs, i, el, addTime(s.At, s.For), 0, false)
	}
}

// flap emits a flap train starting at t and returns when its last cycle ends.
func (x *expander) flap(dst *[]pending, i int, el *element, t sim.Time, random bool) sim.Time {
	s := &x.specs[i]
	var end sim.Time
	for c := 0; c < s.Count; c++ {
		down := t + sim.Time(c)*s.Period // Validate bounds At + Count x Period
		end = addTime(down, s.DownFor)
		x.act(dst, i, el, down, c, random)
		x.restore(dst, i, el, end, c, random)
	}
	return end
}

// random draws entry i's failures on each element: an alternating renewal process with
// exponential times to failure and the entry's repair times (or flap trains).
func (x *expander) random(i int, els []element) []unit {
	s := &x.specs[i]
	r := s.Random
	mean := float64(r.MTBF)
	if r.PerDay > 0 {
		mean = psPerDay / r.PerDay
	}
	var units []unit
	for e := range els {
		el := &els[e]
		rng := sim.Stream(x.opt.Seed, x.path(i)+" "+el.name)
		keys := x.keys(i, el)
		t := float64(s.At)
		for x.count <= MaxEvents {
			t += rng.ExpFloat64() * mean
			if !(t < float64(r.Until)) {
				break
			}
			at := sim.Time(t)
			x.sch.Entries[i].Arrivals++
			u := unit{entry: i, el: e, start: at, end: sim.MaxTime, keys: keys, lo: len(x.rev)}
			switch {
			case s.Action == ActionFlap:
				u.end = x.flap(&x.rev, i, el, at, true)
			case r.Repair != nil:
				x.act(&x.rev, i, el, at, 0, true)
				u.end = addTime(at, r.Repair.draw(rng))
				x.restore(&x.rev, i, el, u.end, 0, true)
			default:
				x.act(&x.rev, i, el, at, 0, true)
			}
			u.hi = len(x.rev)
			units = append(units, u)
			if u.end == sim.MaxTime {
				break // never repaired: the element fails no more
			}
			t = float64(u.end)
		}
	}
	return units
}

// aspect is one independent piece of an element's fault state.
type aspect uint8

const (
	aState aspect = iota // link down (id: link)
	aRate                // link degraded (id: link)
	aLoss                // port's random loss (id: port)
	aBER                 // port's bit error rate (id: port)
	aEnt                 // port's entropy filter for ev (id: port); spans lump every ev as ev 0
	aHole                // switch blackholed (id: node)
)

// akey is one aspect of one element.
type akey struct {
	a  aspect
	id int32
	ev uint32
}

// keys returns the aspects entry i's random failures on el hold for their duration.
func (x *expander) keys(i int, el *element) []akey {
	s := &x.specs[i]
	var ks []akey
	switch s.Action {
	case ActionDown, ActionFlap, ActionDegrade:
		a := aState
		if s.Action == ActionDegrade {
			a = aRate
		}
		for _, p := range el.links {
			ks = append(ks, akey{a: a, id: x.linkID(p)})
		}
	case ActionLoss, ActionBER:
		a := aLoss
		switch {
		case s.Action == ActionBER:
			a = aBER
		case s.Entropy != nil:
			a = aEnt
		}
		for _, p := range el.ports {
			ks = append(ks, akey{a: a, id: p})
		}
	case ActionBlackhole:
		ks = append(ks, akey{a: aHole, id: el.node})
	}
	return ks
}

// state is one aspect's state during the check.
type state struct {
	on       bool // faulty
	set, clr int  // index in out of the event that last made it faulty / healthy; -1 none
	openAt   sim.Time
}

// touched is the last event on a key, for the same-instant check.
type touched struct {
	at     sim.Time
	entry  int
	action string
	cycle  int
	undo   bool
}

func touchOf(ev *Event) touched {
	return touched{at: ev.At, entry: ev.Entry, action: ev.Action, cycle: ev.Cycle, undo: ev.Restore}
}

// checker replays the explicit events in time order.
type checker struct {
	x      *expander
	out    []pending
	st     map[akey]*state
	loss   map[akey]float64          // aLoss, aBER: the current value
	ent    map[int32]map[uint32]bool // port -> entropy values with a filter
	touch  map[akey]touched
	spans  map[akey][]span // spans of explicit activity, for random admission; nil if unused
	healed map[int]int     // heal entry -> restores it resolved to
	sorted map[akey]*sortedSpans
	rnd    map[akey]sim.Time // latest end of an admitted random failure per key
}

type span struct{ from, to sim.Time }

type sortedSpans struct {
	from  []sim.Time
	maxTo []sim.Time // maxTo[j] = max of to over spans 0..j
}

// check replays the explicit events: it rejects contradictions, resolves heals into restores
// and records when each aspect of each element is busy, for admitting random failures.
func (x *expander) check() ([]pending, error) {
	c := &checker{x: x, st: map[akey]*state{}, loss: map[akey]float64{}, ent: map[int32]map[uint32]bool{},
		touch: map[akey]touched{}, healed: map[int]int{}}
	x.checker = c
	if x.spans {
		c.spans = map[akey][]span{}
	}
	c.out = make([]pending, 0, len(x.evs))
	for _, j := range byTime(x.evs, false) {
		ev := x.evs[j]
		if ev.Op == opHeal {
			if err := c.heal(ev); err != nil {
				return nil, err
			}
			continue
		}
		if err := c.step(ev); err != nil {
			return nil, err
		}
	}
	for i := range x.specs {
		if x.specs[i].Action == ActionHeal && c.healed[i] == 0 {
			_, pat := x.specs[i].Target()
			return nil, errorf(x.path(i)+".action", "heal at %v finds nothing to heal on %q: no fault from an earlier entry is active there then", x.specs[i].At, pat)
		}
	}
	if x.spans {
		for k, s := range c.st {
			if s.on {
				c.span(k, s.openAt, sim.MaxTime)
			}
		}
		c.sorted = make(map[akey]*sortedSpans, len(c.spans))
		for k, sp := range c.spans {
			slices.SortFunc(sp, func(a, b span) int { return cmp.Compare(a.from, b.from) })
			ss := &sortedSpans{from: make([]sim.Time, len(sp)), maxTo: make([]sim.Time, len(sp))}
			for j, s := range sp {
				ss.from[j] = s.from
				ss.maxTo[j] = s.to
				if j > 0 {
					ss.maxTo[j] = max(ss.maxTo[j], ss.maxTo[j-1])
				}
			}
			c.sorted[k] = ss
		}
	}
	return c.out, nil
}

// spanKey is the key a random failure's overlap is judged on (entropy filters lumped).
func spanKey(k akey) akey {
	if k.a == aEnt {
		k.ev = 0
	}
	return k
}

func (c *checker) span(k akey, from, to sim.Time) {
	if c.spans != nil {
		k = spanKey(k)
		c.spans[k] = append(c.spans[k], span{from, to})
	}
}

func (c *checker) get(k akey) *state {
	s := c.st[k]
	if s == nil {
		s = &state{set: -1, clr: -1}
		c.st[k] = s
	}
	return s
}

// who names an entry for a message: "faults[3]", "faults[3] (flap cycle 2)".
func (c *checker) who(t touched) string {
	s := c.x.path(t.entry)
	switch {
	case t.action == ActionFlap:
		s += " (flap cycle " + strconv.Itoa(t.cycle) + ")"
	case t.action == ActionHeal:
		s += " (heal)"
	case t.undo:
		s += " (its restore after for)"
	}
	return s
}

// ctx is the context of the entry's own event in a message: " (flap cycle 2)".
func ctx(ev *Event) string {
	switch {
	case ev.Action == ActionFlap:
		return " (flap cycle " + strconv.Itoa(ev.Cycle) + ")"
	case ev.Action == ActionHeal:
		return " (heal)"
	case ev.Restore:
		return " (the restore after for)"
	}
	return ""
}

// use records that ev acts on k: an error if another entry acts on k at the same instant
// (their order would be arbitrary).
func (c *checker) use(k akey, ev *Event, what string) error {
	if last, ok := c.touch[k]; ok && last.at == ev.At && last.entry != ev.Entry {
		return errorf(c.x.path(ev.Entry), "acts on %s at %v%s, and so does %s at the same instant; their order would be arbitrary: move one of them", what, ev.At, ctx(ev), c.who(last))
	}
	c.touch[k] = touchOf(ev)
	c.span(k, ev.At, ev.At)
	return nil
}

// verbs word the messages about one kind of on/off state.
type verbs struct {
	fail, restore       string // "takes %s down", "brings %s up"
	failed, restored    string // "took it down", "brought it up"
	state               string // "down"
	failsIt, restoresIt string // "takes it down", "brings it up"
}

var (
	linkVerbs = verbs{"takes %s down", "brings %s up", "took it down", "brought it up", "down", "takes it down", "brings it up"}
	rateVerbs = verbs{"degrades %s", "restores the rate of %s", "degraded it", "restored its rate", "degraded", "degrades it", "restores its rate"}
	holeVerbs = verbs{"blackholes %s", "ends the blackhole of %s", "blackholed it", "ended its blackhole", "blackholed", "blackholes it", "ends its blackhole"}
)

// toggle applies an on/off op (out[j]) to k's state, rejecting a failure of a failed element
// and a restore of a healthy one.
func (c *checker) toggle(k akey, j int, on bool, what string, v verbs) error {
	ev := &c.out[j].Event
	if err := c.use(k, ev, what); err != nil {
		return err
	}
	s := c.get(k)
	switch {
	case on && s.on:
		prev := &c.out[s.set].Event
		return errorf(c.x.path(ev.Entry), "%s at %v%s, but %s already %s at %v and nothing %s in between",
			fmt.Sprintf(v.fail, what), ev.At, ctx(ev), c.who(touchOf(prev)), v.failed, prev.At, v.restoresIt)
	case !on && !s.on:
		why := "nothing " + v.failsIt + " before"
		if s.clr >= 0 {
			prev := &c.out[s.clr].Event
			why = fmt.Sprintf("%s %s at %v", c.who(touchOf(prev)), v.restored, prev.At)
		}
		return errorf(c.x.path(ev.Entry), "%s at %v%s, but it is not %s then (%s)", fmt.Sprintf(v.restore, what), ev.At, ctx(ev), v.state, why)
	case on:
		s.on, s.set, s.openAt = true, j, ev.At
	default:
		s.on, s.clr = false, j
		c.span(k, s.openAt, ev.At)
	}
	return nil
}

// step checks and applies one concrete explicit event.
func (c *checker) step(p pending) error {
	c.out = append(c.out, p)
	j := len(c.out) - 1
	ev := &c.out[j].Event
	switch ev.Op {
	case OpDown, OpUp:
		k := akey{a: aState, id: c.x.linkID(ev.Port)}
		return c.toggle(k, j, ev.Op == OpDown, "link "+c.x.linkName(ev.Port), linkVerbs)
	case OpDegrade:
		k := akey{a: aRate, id: c.x.linkID(ev.Port)}
		if err := c.use(k, ev, "link "+c.x.linkName(ev.Port)); err != nil {
			return err
		}
		s := c.get(k)
		if !s.on {
			s.on, s.openAt = true, ev.At
		}
		s.set = j // a second degrade changes the rate again
	case OpUndegrade:
		k := akey{a: aRate, id: c.x.linkID(ev.Port)}
		return c.toggle(k, j, false, "link "+c.x.linkName(ev.Port), rateVerbs)
	case OpLoss, OpBER:
		k := akey{a: aLoss, id: ev.Port}
		what := "the loss of port " + ev.Name
		switch {
		case ev.Op == OpBER:
			k.a, what = aBER, "the bit error rate of port "+ev.Name
		case ev.HasEntropy:
			k.a, k.ev, what = aEnt, ev.Entropy, fmt.Sprintf("entropy %d's loss on port %s", ev.Entropy, ev.Name)
		}
		if err := c.use(k, ev, what); err != nil {
			return err
		}
		s := c.get(k)
		on := ev.Prob > 0
		if ev.HasEntropy {
			m := c.ent[ev.Port]
			if m == nil {
				m = map[uint32]bool{}
				c.ent[ev.Port] = m
			}
			if on {
				m[ev.Entropy] = true
			} else {
				delete(m, ev.Entropy)
			}
			if len(m) > fabric.MaxEntropyFilters {
				return errorf(c.x.path(ev.Entry)+".entropy", "entropy %d on port %s at %v would be the port's %d-th active entropy filter; a port holds at most %d (clear one first with loss 0 or heal)", ev.Entropy, ev.Name, ev.At, len(m), fabric.MaxEntropyFilters)
			}
		} else {
			c.loss[k] = ev.Prob
		}
		switch {
		case on && !s.on:
			s.on, s.set, s.openAt = true, j, ev.At
		case !on && s.on:
			s.on, s.clr = false, j
			c.span(k, s.openAt, ev.At)
		case !on && !ev.Restore && !ev.Random:
			// An explicit zero that clears nothing: most likely a loss: or ber: left out.
			field := "loss"
			if ev.Op == OpBER {
				field = "ber"
			}
			return errorf(c.x.path(ev.Entry)+"."+field, "0 at %v clears %s, which is not set then; give %s > 0 to lose packets (0 only clears an earlier entry's)", ev.At, what, field)
		}
	case OpBlackhole, OpUnblackhole:
		k := akey{a: aHole, id: ev.Node}
		return c.toggle(k, j, ev.Op == OpBlackhole, "switch "+ev.Name, holeVerbs)
	}
	return nil
}

// heal resolves a heal (h, an opHeal) into the restores its target needs at h.At and
// applies them.
func (c *checker) heal(h pending) error {
	el := &c.x.heals[h.heal]
	base := h.Event
	var sub int32
	emit := func(ev Event) error {
		sub++
		c.healed[h.Entry]++
		c.x.count++
		return c.step(pending{Event: ev, seq: h.seq, sub: sub})
	}
	// Another entry acting at the same instant on any aspect the heal covers is ambiguous,
	// whether or not the heal finds something to restore there.
	mark := func(k akey, what string) error { return c.use(k, &h.Event, what) }
	for _, p := range el.links {
		what := "link " + c.x.linkName(p)
		for _, a := range [...]aspect{aState, aRate} {
			k := akey{a: a, id: c.x.linkID(p)}
			if err := mark(k, what); err != nil {
				return err
			}
			if s := c.st[k]; s != nil && s.on {
				ev := base
				ev.Port, ev.Name = p, c.x.inv.Ports[p].Name
				if a == aState {
					ev.Op = OpUp
				} else {
					ev.Op, ev.Rate = OpUndegrade, c.x.inv.Ports[p].Rate
				}
				if err := emit(ev); err != nil {
					return err
				}
			}
		}
	}
	for _, p := range el.ports {
		name := c.x.inv.Ports[p].Name
		for _, a := range [...]aspect{aLoss, aBER} {
			k := akey{a: a, id: p}
			if err := mark(k, "port "+name); err != nil {
				return err
			}
			if c.loss[k] > 0 {
				ev := base
				ev.Op, ev.Port, ev.Name = OpLoss, p, name
				if a == aBER {
					ev.Op = OpBER
				}
				if err := emit(ev); err != nil {
					return err
				}
			}
		}
		evs := make([]uint32, 0, len(c.ent[p]))
		for e := range c.ent[p] {
			evs = append(evs, e)
		}
		slices.Sort(evs)
		c.span(akey{a: aEnt, id: p}, h.At, h.At)
		for _, e := range evs {
			ev := base
			ev.Op, ev.Port, ev.Name, ev.Entropy, ev.HasEntropy = OpLoss, p, name, e, true
			if err := emit(ev); err != nil {
				return err
			}
		}
	}
	if el.node >= 0 {
		k := akey{a: aHole, id: el.node}
		if err := mark(k, "switch "+el.name); err != nil {
			return err
		}
		if s := c.st[k]; s != nil && s.on {
			ev := base
			ev.Op, ev.Node, ev.Port, ev.Name = OpUnblackhole, el.node, -1, c.x.inv.Nodes[el.node].Name
			if err := emit(ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// admit accepts each random failure that overlaps no explicit activity and no failure
// already admitted on any aspect it holds, in time order, and appends its events to out.
func (x *expander) admit(units []unit, out []pending) []pending {
	if len(units) == 0 {
		return out
	}
	c := x.checker
	c.rnd = map[akey]sim.Time{}
	out = slices.Grow(out, len(x.rev))
	order := make([]int32, len(units))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(i, j int32) int {
		a, b := &units[i], &units[j]
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.entry, b.entry); c != 0 {
			return c
		}
		return cmp.Compare(a.el, b.el)
	})
	for _, ui := range order {
		u := &units[ui]
		if c.busy(u) {
			x.sch.Entries[u.entry].Skipped++
			continue
		}
		for _, k := range u.keys {
			c.rnd[spanKey(k)] = u.end // units come in start order, so this is the latest end
		}
		out = append(out, x.rev[u.lo:u.hi]...)
	}
	return out
}

// busy reports whether any aspect u holds is busy during [u.start, u.end].
func (c *checker) busy(u *unit) bool {
	for _, k := range u.keys {
		k = spanKey(k)
		if end, ok := c.rnd[k]; ok && end >= u.start {
			return true
		}
		if ss := c.sorted[k]; ss != nil {
			j := sort.Search(len(ss.from), func(j int) bool { return ss.from[j] > u.end }) - 1
			if j >= 0 && ss.maxTo[j] >= u.start {
				return true
			}
		}
	}
	return false
}
