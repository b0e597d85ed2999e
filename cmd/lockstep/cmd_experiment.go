package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/cmd/lockstep/internal/experiments"
)

func newExperimentCmd(stdout, stderr io.Writer) *cobra.Command {
	var list []string
	for _, x := range experiments.All() {
		list = append(list, fmt.Sprintf("  %-12s %s", x.Name, x.Summary))
	}
	cmd := &cobra.Command{
		Use:   "experiment NAME",
		Short: "Reproduce one of lockstep's experiments (tables, CSV and PNG figures)",
		Long: "Run every variant of an experiment and write NAME.md (result tables) and NAME/ (CSV data,\n" +
			"PNG figures) into --out (default docs/experiments). Experiments:\n" + strings.Join(list, "\n"),
		Example: "  lockstep experiment multi-loss --seeds 20",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			x, err := experiments.Find(args[0])
			if err != nil {
				return badInput(err)
			}
			out, _ := cmd.Flags().GetString("out")
			ex, _ := cmd.Flags().GetString("examples")
			seeds, _ := cmd.Flags().GetInt("seeds")
			quiet, _ := cmd.Flags().GetBool("quiet")
			env := &experiments.Env{Examples: ex, Out: out, Seeds: seeds}
			if !quiet {
				env.Log = stderr
			}
			if err := x.Run(env); err != nil {
				return fmt.Errorf("experiment %s: %w", x.Name, err)
			}
			fmt.Fprintf(stdout, "experiment %s: wrote %s\n", x.Name, out)
			return nil
		},
	}
	cmd.Flags().String("out", "docs/experiments", "directory for NAME.md and NAME/")
	cmd.Flags().String("examples", "examples", "the examples directory")
	cmd.Flags().Int("seeds", 0, "seeds for spreads (default: the experiment's)")
	cmd.Flags().Bool("quiet", false, "no progress lines")
	return cmd
}
