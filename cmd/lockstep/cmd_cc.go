package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/cc/cctrace"
)

// newCCCmd is `lockstep cc`: look at congestion-control and loss-recovery
// modules in isolation (docs/cc-trace.md).
func newCCCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cc",
		Short: "Inspect congestion-control and loss-recovery modules",
	}
	cmd.AddCommand(newCCTraceCmd(stdout, stderr), newCCListCmd(stdout))
	return cmd
}

func newCCTraceCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "trace SCRIPT",
		Short: "Drive one controller and one recovery through a script and print their state after each step",
		Long: `trace runs a script of sends, ACKs, timer expiries and expectations
against one congestion controller and one loss recovery, calling them as the
host does, and prints a table with one row per step. A failed expect makes the
command exit with status 1 and name the line. See docs/cc-trace.md.`,
		Example: "  lockstep cc trace cc/cctrace/testdata/reno_fast_retransmit.trace",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			src, err := os.ReadFile(path)
			if err != nil {
				return badInput(fmt.Errorf("%s: cannot read script: %v", path, unwrapPathErr(err)))
			}
			s, err := cctrace.Parse(path, src)
			if err != nil {
				return badInput(err)
			}
			err = s.Run(stdout, cctrace.RegistryBuilder)
			var ee *cctrace.ExpectError
			if errors.As(err, &ee) {
				for _, f := range ee.Failures {
					fmt.Fprintf(stderr, "%s:%d: %s: %s\n", ee.Name, f.Line, f.Text, f.Msg)
				}
				return fmt.Errorf("%s: %d expect(s) failed, first at line %d", path, len(ee.Failures), ee.Failures[0].Line)
			}
			if err != nil {
				return badInput(err)
			}
			return nil
		},
	}
}

func newCCListCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the congestion controls and loss recoveries the registry knows",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(stdout, "cc:        %s\n", strings.Join(cc.ControllerNames, " "))
			fmt.Fprintf(stdout, "recovery:  %s\n", strings.Join(cc.RecoveryNames, " "))
			return nil
		},
	}
}
