package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/topologies"
)

func newTopoCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{
		Use:   "topo FILE",
		Short: "Describe a scenario's fabric: hosts, switches, links, diameter, path lengths, node names",
		Long: `Describe a scenario's fabric: hosts, switches, links, diameter, path lengths
and the links per tier. A fabric of at most ` + fmt.Sprint(topoNamesUpTo) + ` nodes also gets its node
names by tier; --nodes lists every node with its kind, tier and neighbours
(the names an impairment's link: [a, b] and placement.map take).`,
		Example: "  lockstep topo examples/fattree-k8-permutation.yaml\n  lockstep topo examples/dumbbell.yaml --nodes",
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
			all, _ := cmd.Flags().GetBool("nodes")
			printNodes(stdout, t, all)
			return printPartitions(cmd, b, stdout)
		},
	}
	c.Flags().Bool("nodes", false, "list every node: name, kind, tier and neighbours (the names impairments' link: [a, b] and placement.map take)")
	addTopoPartitionFlags(c)
	addInputFlags(c)
	return c
}

// topoNamesUpTo is the largest fabric whose node names lockstep topo
// prints without --nodes.
const topoNamesUpTo = 64

// printNodes prints the node names: by tier for a small fabric, one line
// per node with its kind, tier and neighbours when all, and otherwise a
// hint.
func printNodes(w io.Writer, t *topologies.Topology, all bool) {
	if all {
		nb := make([][]string, len(t.Nodes))
		for _, l := range t.Links {
			nb[l.A] = append(nb[l.A], t.Nodes[l.B].Name)
			nb[l.B] = append(nb[l.B], t.Nodes[l.A].Name)
		}
		fmt.Fprintln(w, "nodes (name, kind, tier: neighbours):")
		for i, n := range t.Nodes {
			fmt.Fprintf(w, "  %s %s %d: %s\n", n.Name, n.Kind, n.Tier, strings.Join(nb[i], " "))
		}
		return
	}
	if len(t.Nodes) > topoNamesUpTo {
		fmt.Fprintf(w, "nodes: %d (lockstep topo --nodes lists their names)\n", len(t.Nodes))
		return
	}
	byTier := map[int][]string{}
	var tiers []int
	for _, n := range t.Nodes {
		if _, ok := byTier[n.Tier]; !ok {
			tiers = append(tiers, n.Tier)
		}
		byTier[n.Tier] = append(byTier[n.Tier], n.Name)
	}
	sort.Ints(tiers)
	for _, tr := range tiers {
		fmt.Fprintf(w, "tier %d nodes: %s\n", tr, strings.Join(byTier[tr], " "))
	}
}
