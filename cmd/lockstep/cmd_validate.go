package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/topologies"
)

func newValidateCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:     "validate FILE",
		Short:   "Check a scenario (and the files it names) without running it",
		Long:    "Parse the scenario strictly, build its topology and workload, and report the first problem as one line naming the file and the field. Exit status 2 on a problem.",
		Example: "  lockstep validate examples/leafspine.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := loadScenario(args[0])
			if err != nil {
				return err
			}
			// What fabric.New will compile: a topology that does not
			// validate, or whose forwarding table is too large, fails here.
			ix, err := topologies.Compile(b.Topo)
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(stdout, "%s: ok: %d hosts, %d switches, %d links, %d flows, digest %s\n", args[0],
				ix.NumHosts(), ix.NumSwitches(), len(b.Topo.Links), len(b.Fabric.Flows), b.Digest()[:16])
			return nil
		},
	}
}
