package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
)

// TestBuildVersionUnderTest: a test binary carries no VCS stamps, so the block is the same on
// every machine (the golden summaries rely on it), and lockstep version says so.
func TestBuildVersionUnderTest(t *testing.T) {
	v := buildVersion()
	if v.Module != "github.com/lockstepsim/lockstep" || v.Version != "(devel)" || v.Revision != "" || v.Modified != nil {
		t.Errorf("buildVersion() under go test = %+v; want module github.com/lockstepsim/lockstep, version (devel), no VCS fields", v)
	}
	js, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"module":"github.com/lockstepsim/lockstep","version":"(devel)"}`; string(js) != want {
		t.Errorf("version block %s; want %s", js, want)
	}
	out := mustRun(t, "version")
	for _, want := range []string{"lockstep (devel)\n", "module   github.com/lockstepsim/lockstep\n", "revision unknown", "go       go1."} {
		if !strings.Contains(out, want) {
			t.Errorf("lockstep version printed %q; want it to contain %q", out, want)
		}
	}
}

// TestWriteVersionVCS: a binary built in a git checkout prints its revision, marked when the
// tree was modified, and its commit time; -ldflags' version replaces the module version.
func TestWriteVersionVCS(t *testing.T) {
	yes := true
	var b bytes.Buffer
	writeVersion(&b, &runner.BuildVersion{Module: "m", Version: "v1.2.3", VCS: "git", Revision: "abc123", Time: "2026-01-02T03:04:05Z", Modified: &yes})
	want := "lockstep v1.2.3\nmodule   m\nrevision abc123 (modified)\ntime     2026-01-02T03:04:05Z\n"
	if got := b.String(); !strings.HasPrefix(got, want) {
		t.Errorf("writeVersion printed\n%s\nwant it to start with\n%s", got, want)
	}
	old := version
	version = "v9.9.9-custom"
	defer func() { version = old }()
	if v := buildVersion(); v.Version != "v9.9.9-custom" {
		t.Errorf("with main.version set, Version = %q; want v9.9.9-custom", v.Version)
	}
}
