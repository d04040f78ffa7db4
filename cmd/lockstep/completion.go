package main

import (
	"strings"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/spf13/cobra"
)

// Shell completion: cobra's default completion command (lockstep completion bash|zsh|fish|
// powershell) writes the script; these functions give it the values: presets (and files)
// for scenario arguments, topology kinds for topo --kind, and for nccl its ops, transport
// kinds (--transport), engines, reduction operators and algorithms. No command takes a port
// name on its command line (ports are named in scenario files, whose keys lockstep schema
// gives editors), so nothing completes one here.

// completeScenarioArg completes a scenario argument: the embedded presets matching what was
// typed, and files (the shell's own completion).
func completeScenarioArg(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return presetsWithPrefix(toComplete), cobra.ShellCompDirectiveDefault
}

// completePresets completes bench's arguments: presets only, any number of them.
func completePresets(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return presetsWithPrefix(toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeScenarioArgs completes compare's arguments: presets and files, any number.
func completeScenarioArgs(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return presetsWithPrefix(toComplete), cobra.ShellCompDirectiveDefault
}

// presetsWithPrefix lists the presets starting with prefix.
func presetsWithPrefix(prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, p := range scenario.Presets() {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// fixedValues completes a flag from a fixed list.
func fixedValues(vals ...string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		var out []cobra.Completion
		for _, v := range vals {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// addCompletions attaches the argument and flag completions to root's commands.
func addCompletions(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "validate", "sweep":
			c.ValidArgsFunction = completeScenarioArg
		case "compare":
			c.ValidArgsFunction = completeScenarioArgs
		case "bench":
			c.ValidArgsFunction = completePresets
		case "topo":
			_ = c.RegisterFlagCompletionFunc("kind", fixedValues(topoKinds...))
			_ = c.RegisterFlagCompletionFunc("routing", fixedValues("minimal", "dor"))
		case "nccl":
			var ops []string
			for _, o := range ncclOps {
				ops = append(ops, o.name)
			}
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return fixedValues(ops...)(cmd, args, toComplete)
			}
			_ = c.RegisterFlagCompletionFunc("transport", fixedValues(append(transport.Kinds(), scenario.TransportIdeal)...))
			_ = c.RegisterFlagCompletionFunc("engine", fixedValues(scenario.EnginePacket, scenario.EngineFlow, "analytic"))
			_ = c.RegisterFlagCompletionFunc("scenario", completeScenarioArgs)
			_ = c.RegisterFlagCompletionFunc("op", fixedValues(ncclRedOps...))
			_ = c.RegisterFlagCompletionFunc("algorithm", fixedValues(collective.AlgorithmNames()...))
		}
	}
}
