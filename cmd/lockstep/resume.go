package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// A sweep resumes: a variant whose results folder already holds a complete, successful run
// of the same resolved scenario is not run again; its summary.json is read back and counted
// as if it had just run (the table, sweep.csv and compare.html are the same as a full run's).
// "The same" is summary.json's variant.scenario_sha256: the SHA-256 of the resolved
// scenario's YAML (scenario.yaml's content) with run.out and run.max_memory left out, so
// moving the folder keeps it and so does a machine of another size (max_memory's default is
// 80% of the machine's memory, and only guards the start: Slurm tasks on compute nodes and
// --collect on a login node agree), while any other change (a value, the seed, --trace, a default that moved with a
// new lockstep version) reruns the variant. A folder that is missing, interrupted
// ("complete": false), failed, written by a different lockstep build (summary.json's
// version block: module version, VCS revision and modified flag; a build from a modified
// tree cannot tell its own edits apart, hence --force) or unreadable is rerun. --force
// reruns every variant.
// docs/sweeps.md says the same for users.

// applyRunOpts sets what the command line overrides in sc before it runs (--seed, --trace),
// so the hash and the run see the same scenario.
func applyRunOpts(sc *scenario.Scenario, ro runOpts) {
	if ro.seeded {
		sc.Run.Seed = ro.seed
	}
	if ro.trace {
		sc.Run.Trace = true
	}
}

// scenarioHash is summary.json's variant.scenario_sha256 for sc (hex): the SHA-256 of its
// resolved YAML without run.out and run.max_memory. Errors: sc cannot be encoded (a bug), as "".
func scenarioHash(sc *scenario.Scenario) string {
	c := *sc
	c.Run.Out, c.Run.MaxMemory = "", 0
	data, err := scenario.Encode(&c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// resumeState says why a variant's folder is or is not reused.
type resumeState struct {
	sum    *runner.Summary // the summary read back, when reused
	js     []byte          // summary.json's bytes, when reused
	reason string          // why not reused ("" when reused or when there is no folder)
}

// resumable reads dir/summary.json and reports whether it is a complete, successful run of
// variant name with scenario hash: then its summary and bytes, else why not (reason "" for
// a folder that does not exist or holds no summary.json: nothing to say).
func resumable(dir, name, hash string) resumeState {
	js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return resumeState{}
	}
	var s runner.Summary
	switch err := json.Unmarshal(js, &s); {
	case err != nil:
		return resumeState{reason: "its summary.json does not parse"}
	case s.Variant == nil || s.Variant.Name != name:
		return resumeState{reason: "its summary.json is not this variant's"}
	case hash == "" || s.Variant.ScenarioSHA256 != hash:
		return resumeState{reason: "its scenario differs from this one"}
	case !s.Complete:
		return resumeState{reason: "it was interrupted"}
	case s.Failed:
		return resumeState{reason: "it failed"}
	case !sameBuild(s.Version, buildVersion()):
		return resumeState{reason: "another lockstep build wrote it (summary.json's version differs)"}
	}
	for _, f := range []string{"scenario.yaml", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return resumeState{reason: "it lacks " + f}
		}
	}
	return resumeState{sum: &s, js: js}
}

// planResume finds, for each variant of vs run into out/<name>, whether an earlier run's
// folder can be reused (nil entries run). It writes one line to stderr per variant rerun for
// a reason and one summary line when any is reused. force: reuse none.
func planResume(vs []scenario.Variant, out string, ro runOpts) []*resumeState {
	plan := make([]*resumeState, len(vs))
	if ro.force {
		return plan
	}
	reused := 0
	for i, v := range vs {
		sc := v.Scenario
		applyRunOpts(sc, ro)
		st := resumable(filepath.Join(out, sc.Name), sc.Name, scenarioHash(sc))
		switch {
		case st.sum != nil:
			plan[i] = &st
			reused++
		case st.reason != "":
			fmt.Fprintf(ro.stderr, "lockstep: variant %s: rerunning: %s\n", sc.Name, st.reason)
		}
	}
	if reused > 0 {
		fmt.Fprintf(ro.stderr, "lockstep: resuming: %d of %d variants are complete in %s from an earlier run and are not run again (--force reruns them); running %d\n",
			reused, len(vs), out, len(vs)-reused)
	}
	return plan
}

// sameBuild reports whether a and b name the same lockstep build: the same module version,
// VCS revision and modified flag. A summary without a version block (written before
// summary.json had one) matches any build.
func sameBuild(a, b *runner.BuildVersion) bool {
	if a == nil || b == nil {
		return true
	}
	mod := func(v *runner.BuildVersion) string {
		if v.Modified == nil {
			return ""
		}
		return fmt.Sprint(*v.Modified)
	}
	return a.Version == b.Version && a.Revision == b.Revision && mod(a) == mod(b)
}
