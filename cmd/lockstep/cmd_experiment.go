package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/cmd/lockstep/internal/experiments"
)

// defaultExperimentOut is where lockstep experiment writes unless told
// otherwise: outside the checked-in docs, so that running an experiment
// does not rewrite tracked files. --docs writes the checked-in pages.
const (
	defaultExperimentOut = "out/experiments"
	docsExperimentOut    = "docs/experiments"
)

func experimentList() string {
	var list []string
	for _, x := range experiments.All() {
		list = append(list, fmt.Sprintf("  %-12s %-16s %s", x.Name, x.File+".md", x.Summary))
	}
	return strings.Join(list, "\n")
}

func newExperimentCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "experiment [NAME]",
		Short: "Reproduce one of lockstep's experiments (tables, CSV and PNG figures); no NAME lists them",
		Long: "Run every variant of an experiment and write its page FILE.md (result tables) and FILE/\n" +
			"(CSV data, PNG figures) into --out (default " + defaultExperimentOut + "; --docs: " + docsExperimentOut + ",\n" +
			"the checked-in pages). Without NAME, list the experiments. Experiments (name, page, what):\n" +
			experimentList(),
		Example: "  lockstep experiment\n  lockstep experiment multi-loss --seeds 20       # -> out/experiments/multi_loss.md, multi_loss/\n" +
			"  lockstep experiment multi-loss --docs           # rewrites docs/experiments/multi_loss.md, multi_loss/\n" +
			"  lockstep experiment nscc --quick                # a smaller run in seconds, to check the pipeline",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				fmt.Fprintln(stdout, "experiments (name, page, what); run one with lockstep experiment NAME:")
				fmt.Fprintln(stdout, experimentList())
				return nil
			}
			x, err := experiments.Find(args[0])
			if err != nil {
				return badInput(err)
			}
			out, _ := cmd.Flags().GetString("out")
			if docs, _ := cmd.Flags().GetBool("docs"); docs {
				if cmd.Flags().Changed("out") {
					return badInput(fmt.Errorf("--docs and --out: give one (--docs is --out %s)", docsExperimentOut))
				}
				out = docsExperimentOut
			}
			quick, _ := cmd.Flags().GetBool("quick")
			if quick && out == docsExperimentOut {
				return badInput(fmt.Errorf("--quick and --docs: the checked-in pages hold the full runs"))
			}
			ex, _ := cmd.Flags().GetString("examples")
			seeds, _ := cmd.Flags().GetInt("seeds")
			quiet, _ := cmd.Flags().GetBool("quiet")
			env := &experiments.Env{Examples: ex, Out: out, Seeds: seeds, Quick: quick}
			if !quiet {
				env.Log = stderr
			}
			if err := x.Run(env); err != nil {
				return fmt.Errorf("experiment %s: %w", x.Name, err)
			}
			fmt.Fprintf(stdout, "experiment %s: wrote %s and %s\n", x.Name,
				filepath.Join(out, x.File+".md"), filepath.Join(out, x.File)+string(filepath.Separator))
			return nil
		},
	}
	cmd.Flags().String("out", defaultExperimentOut, "directory for the page FILE.md and its data FILE/")
	cmd.Flags().Bool("docs", false, "write into "+docsExperimentOut+" (the checked-in pages) instead of --out")
	cmd.Flags().String("examples", "examples", "the examples directory")
	cmd.Flags().Int("seeds", 0, "seeds for spreads (default: the experiment's)")
	cmd.Flags().Bool("quiet", false, "no progress lines")
	cmd.Flags().Bool("quick", false, "smaller runs (fewer seeds, sizes and variants): checks the pipeline in seconds; its numbers are not the page's")
	return cmd
}
