package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..."; "dev" otherwise, when
// the module version of the build information stands (buildVersion).
var version = "dev"

// buildVersion returns the binary's version block for summary.json and lockstep version,
// from runtime/debug.ReadBuildInfo: the main module's path and version and, when the build
// stamped them (go build in a git checkout), vcs, vcs.revision, vcs.time and vcs.modified.
// A version set with -ldflags replaces the module version. A test binary has no VCS
// stamps, so under go test the block is the same on every machine.
func buildVersion() *runner.BuildVersion {
	v := &runner.BuildVersion{Module: "github.com/lockstepsim/lockstep", Version: "(devel)"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			v.Module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs":
				v.VCS = s.Value
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				m := s.Value == "true"
				v.Modified = &m
			}
		}
	}
	if version != "dev" {
		v.Version = version
	}
	return v
}

// writeVersion prints the version block as lockstep version shows it: "lockstep <version>"
// first, then one "key value" line per known field and the Go toolchain.
func writeVersion(w io.Writer, v *runner.BuildVersion) {
	fmt.Fprintf(w, "lockstep %s\n", v.Version)
	fmt.Fprintf(w, "module   %s\n", v.Module)
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified != nil && *v.Modified {
			rev += " (modified)"
		}
		fmt.Fprintf(w, "revision %s\n", rev)
	} else {
		fmt.Fprintln(w, "revision unknown (built without VCS information)")
	}
	if v.Time != "" {
		fmt.Fprintf(w, "time     %s\n", v.Time)
	}
	fmt.Fprintf(w, "go       %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the lockstep version, its VCS revision and the Go toolchain",
		Long: `Print the lockstep version: the module version (or "(devel)" for a build from a source
tree), the git revision and commit time the binary was built from (when built in a git
checkout), and the Go toolchain. summary.json carries the same block under "version".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			writeVersion(stdout, buildVersion())
			return nil
		},
	}
}
