package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/switchsim"
)

// newSwitchCmd is `lockstep switch`: the switch pipeline's modules.
func newSwitchCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "switch",
		Short: "Inspect the switch pipeline's modules",
	}
	cmd.AddCommand(newSwitchListCmd(stdout))
	return cmd
}

func newSwitchListCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the switch modules by stage, with their options",
		Long: `list prints the switch pipeline's stages in order (classify, forward,
buffer, aqm, schedule, trim), each stage's modules with a line on what
they do and their source, and each module's options with their defaults.
A scenario selects a module per stage in switch.modules (every switch) or
in a tier's switch.modules (that tier's switches), for example

  switch:
    modules:
      aqm: {name: codel, options: {target_us: 10, interval_us: 200}}

Without switch.modules a switch runs the modules marked "default" (or
the ones switch.forwarding, shared_buffer and trim imply). See
docs/scenario.md ("switch.modules") and docs/adding-a-switch-module.md.`,
		Example: "  lockstep switch list",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			writeSwitchModules(stdout, switchsim.Builtins())
			return nil
		},
	}
}

// writeSwitchModules prints r's modules by stage.
func writeSwitchModules(w io.Writer, r *switchsim.Registry) {
	for i, st := range switchsim.Stages {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s:\n", st)
		def := switchsim.DefaultModule(st)
		for _, m := range r.Modules(st) {
			name := m.Name
			if name == def {
				name += " (default)"
			}
			fmt.Fprintf(w, "  %-18s %s\n", name, m.Doc)
			for _, o := range m.Options {
				fmt.Fprintf(w, "  %-18s   %s = %s: %s\n", "", o.Key, o.Default, o.Doc)
			}
		}
	}
	fmt.Fprintln(w, "\nOptions are key: value in switch.modules.STAGE.options; durations in microseconds (_us), sizes in bytes (_bytes).")
}
