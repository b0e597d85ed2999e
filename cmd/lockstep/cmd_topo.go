package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

func newTopoCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:     "topo FILE",
		Short:   "Describe a scenario's fabric: hosts, switches, links, diameter, path lengths",
		Example: "  lockstep topo examples/fattree-k8-permutation.yaml",
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
			t := b.Topo
			ix, err := topologies.Compile(t)
			if err != nil {
				return badInput(err)
			}
			st := ix.Stats()
			fmt.Fprintf(stdout, "hosts:     %d\n", st.Hosts)
			fmt.Fprintf(stdout, "switches:  %d\n", st.Switches)
			fmt.Fprintf(stdout, "links:     %d\n", st.Links)
			fmt.Fprintf(stdout, "diameter:  %d hops\n", st.Diameter)
			fmt.Fprintf(stdout, "host-to-host path length: min %d, max %d hops\n", st.MinHostPath, st.MaxHostPath)
			type tierKey struct {
				tier  int
				rate  sim.Bandwidth
				delay sim.Time
			}
			count := map[tierKey]int{}
			for _, l := range t.Links {
				count[tierKey{l.Tier, l.Rate, l.Delay}]++
			}
			keys := make([]tierKey, 0, len(count))
			for k := range count {
				keys = append(keys, k)
			}
			sort.Slice(keys, func(i, j int) bool {
				a, b := keys[i], keys[j]
				if a.tier != b.tier {
					return a.tier < b.tier
				}
				if a.rate != b.rate {
					return a.rate < b.rate
				}
				return a.delay < b.delay
			})
			for _, k := range keys {
				fmt.Fprintf(stdout, "tier %d links: %d x %s, %s\n", k.tier, count[k], k.rate, k.delay)
			}
			return printPartitions(cmd, b, stdout)
		},
	}
	addTopoPartitionFlags(c)
	addInputFlags(c)
	return c
}
