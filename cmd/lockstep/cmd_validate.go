package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/runner"
)

func newValidateCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a scenario (and the files it names) without running it",
		Long: `Parse the scenario strictly and build everything 'lockstep run' builds before
it starts (topology, routes, workload, transport, the fabric's hosts, switches
and links, the output plans and, with a placement section, the partitions),
then stop. Whatever run would refuse, validate refuses with the same one line
naming the file and the field, and exit status 2.`,
		Example: "  lockstep validate examples/leafspine.yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			edits, err := inputEdits(cmd)
			if err != nil {
				return err
			}
			b, err := loadScenario(args[0], edits...)
			if err != nil {
				return err
			}
			var hosts, switches int
			if b.Scenario.Placement.Asks() {
				// A distributed run builds partitions, not one fabric.
				if _, err := partition.ForScenario(b, 0); err != nil {
					return badInput(err)
				}
			}
			f, err := runner.Prepare(b)
			if err != nil {
				return badInput(err)
			}
			hosts, switches = f.NumHosts(), f.Topology().NumSwitches()
			fmt.Fprintf(stdout, "%s: ok: %d hosts, %d switches, %d links, %d flows, digest %s\n", args[0],
				hosts, switches, len(b.Topo.Links), len(b.Fabric.Flows), b.Digest()[:16])
			return nil
		},
	}
	addInputFlags(cmd)
	return cmd
}
