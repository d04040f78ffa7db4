package collective

import (
	"fmt"
	"strings"
)

// Stuck describes, one line per rank, what the unfinished collectives wait for. With max > 0
// every unfinished collective gets an equal share of max lines (at least 2), followed by
// "... and K more ranks of <name>" when cut, so none goes unnamed; max <= 0: no limit. It is meant for the
// progress watchdog (docs/architecture.md, Conventions, "Progress"): call it when the simulation
// stops or its event queue empties with Done() false. For each rank with work left it names the
// first op in the rank's program order that is under way, or else the first op still waiting for
// dependencies and the first dependency it waits for:
//
//	all_reduce#0 rank 5 (host 12): waits for recv from rank 4 (host 11), chunk 3 step 7 (524288 B); 130/260 ops done
//
// It returns "" when every collective is done. Cost: one pass over each unfinished
// collective's ops.
func (e *Executor) Stuck(max int) string {
	var lines []string
	unfinished := 0
	for _, in := range e.insts {
		if !in.done {
			unfinished++
		}
	}
	// Every unfinished collective is named: each gets an equal share of max lines (at least 2).
	quota := max
	if max > 0 && unfinished > 0 {
		quota = max / unfinished
		if quota < 2 {
			quota = 2
		}
	}
	var used, more int
	add := func(s string) {
		if quota > 0 && used >= quota {
			more++
			return
		}
		used++
		lines = append(lines, s)
	}
	for _, in := range e.insts {
		if in.done {
			continue
		}
		used, more = 0, 0
		if !in.started {
			add(fmt.Sprintf("%s: not started (starts at %v)", in.name, in.at))
			continue
		}
		n := in.sch.Ranks()
		active := make([]int32, n) // first op under way per rank, -1
		waiting := make([]int32, n)
		total := make([]int32, n)
		for r := range active {
			active[r], waiting[r] = -1, -1
		}
		for i := range in.sch.ops {
			r := in.sch.ops[i].Rank
			total[r]++
			st := in.st[i]
			switch {
			case st&stDone != 0:
			case st&stReady != 0:
				if active[r] < 0 {
					active[r] = int32(i)
				}
			default:
				if waiting[r] < 0 {
					waiting[r] = int32(i)
				}
			}
		}
		for r := 0; r < n; r++ {
			if in.rankLeft[r] == 0 {
				continue
			}
			who := fmt.Sprintf("%s rank %d (host %d)", in.name, r, in.comm.Host(r))
			done := fmt.Sprintf("%d/%d ops done", total[r]-in.rankLeft[r], total[r])
			if i := active[r]; i >= 0 {
				add(fmt.Sprintf("%s: %s; %s", who, e.underWay(in, i), done))
				continue
			}
			i := waiting[r]
			dep := ""
			for _, d := range in.sch.Deps(int(i)) {
				if in.st[d]&stDone == 0 {
					o := &in.sch.ops[d]
					dep = fmt.Sprintf(" after %s", in.sch.describe(int(d), &in.comm))
					if o.Rank != int32(r) {
						dep += fmt.Sprintf(" at rank %d", o.Rank)
					}
					break
				}
			}
			add(fmt.Sprintf("%s: %s waits%s; %s", who, in.sch.describe(int(i), &in.comm), dep, done))
		}
		if more > 0 {
			lines = append(lines, fmt.Sprintf("... and %d more ranks of %s", more, in.name))
		}
	}
	return strings.Join(lines, "\n")
}

// underWay describes op i whose dependencies are done but which has not completed.
func (e *Executor) underWay(in *instance, i int32) string {
	d := in.sch.describe(int(i), &in.comm)
	switch in.sch.ops[i].Kind {
	case OpSend:
		return "waits for delivery of " + d
	case OpRecv:
		return "waits for " + d
	default:
		return "reducing: " + d
	}
}
