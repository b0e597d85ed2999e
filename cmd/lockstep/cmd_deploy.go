package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/partition"
)

func newDeployCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "deploy",
		Short: "Render deployment manifests for a scenario (k8s)",
	}
	k8s := &cobra.Command{
		Use:   "k8s FILE --partitions P [--out DIR]",
		Short: "Render the Kubernetes manifests of a run of FILE",
		Long: `Render the Kubernetes manifests of one run of FILE: NATS with JetStream
(a StatefulSet running 'lockstep nats'), three coordinators (a StatefulSet
with stable raft peer names behind a headless Service, and a
PodDisruptionBudget), the P nodes (an Indexed Job: the completion index is
the partition), the scenario and the run's settings (ConfigMaps) and a
Secret for the run's NATS credentials: a random token per rendering, which
NATS requires of every client and every member presents (--no-auth: none). Without --out they go to stdout as
one stream ('kubectl apply -f -'); with --out, DIR gets one file each and a
kustomization.yaml, a base for overlays (see deploy/k8s/overlays and
docs/deploy.md). The scenario must be self-contained (no files it refers
to are shipped). A new run where another was applied: 'kubectl replace
--force -f -' (kubectl apply cannot change the StatefulSets' selectors or
the Job's pod template, which name the run).`,
		Example: "  lockstep deploy k8s examples/fattree-k8-permutation.yaml --partitions 4 --image lockstep:v0.3.0 --run-id exp1 | kubectl apply -f -",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDeployK8s(cmd, args[0], stdout)
		},
	}
	f := k8s.Flags()
	f.Int("partitions", 0, "number of partitions, one node pod each (default: the scenario's placement, else 2)")
	f.Uint64("seed", 0, "seed (default: the scenario's)")
	f.String("image", "lockstep:dev", "the lockstep image (make image builds lockstep:VERSION)")
	f.String("run-id", "lockstep", "run id (a DNS label): names the run on NATS and labels every object")
	f.String("peer-timeout", "20s", "every member's --peer-timeout")
	f.String("out", "", "write one file per manifest and a kustomization.yaml into this directory")
	f.String("checkpoint-every", "", "the nodes checkpoint every this long of virtual time (e.g. 100us) into the NATS server's JetStream; a node pod that dies is replaced and the run rolls back to the last checkpoint instead of failing")
	f.Int("max-restarts", 3, "with --checkpoint-every: how many node pods may die (the node Job's backoffLimit) before the run fails")
	f.Bool("no-auth", false, "leave the Secret's NATS token empty (default: a random per-run token that NATS requires of every member)")
	f.Bool("nats-per-node", false, "NATS as a DaemonSet: a server on every Kubernetes node, joined by routes, each member on its own node's (no JetStream, so no --checkpoint-every)")
	f.Bool("nodes-serve", false, "no NATS pod: every node pod runs the NATS server itself (lockstep node --serve), joined to the others' by routes to their stable names nodes-I.nodes (no JetStream, so no --checkpoint-every; not with --nats-per-node)")
	cmd.AddCommand(k8s)
	return cmd
}

func runDeployK8s(cmd *cobra.Command, file string, stdout io.Writer) error {
	f := cmd.Flags()
	text, err := os.ReadFile(file)
	if err != nil {
		return badInput(fmt.Errorf("deploy k8s: %w", unwrapPathErr(err)))
	}
	b, err := loadScenario(file)
	if err != nil {
		return err
	}
	p, _ := f.GetInt("partitions")
	pl, err := partition.ForScenario(b, p)
	if err != nil {
		return badInput(err)
	}
	k := deploy.K8s{Scenario: string(text), ScenarioName: filepath.Base(file), Partitions: pl.P}
	k.Seed, _ = f.GetUint64("seed")
	k.Image, _ = f.GetString("image")
	k.Run, _ = f.GetString("run-id")
	k.PeerTimeout, _ = f.GetString("peer-timeout")
	k.CheckpointEvery, _ = f.GetString("checkpoint-every")
	k.MaxRestarts, _ = f.GetInt("max-restarts")
	k.NATSPerNode, _ = f.GetBool("nats-per-node")
	k.NodesServe, _ = f.GetBool("nodes-serve")
	if k.CheckpointEvery != "" {
		if d, err := time.ParseDuration(k.CheckpointEvery); err != nil || d <= 0 || k.MaxRestarts < 0 {
			return badInput(fmt.Errorf("deploy k8s: --checkpoint-every %q, --max-restarts %d: want a positive duration and a count", k.CheckpointEvery, k.MaxRestarts))
		}
	}
	if noAuth, _ := f.GetBool("no-auth"); !noAuth {
		var tok [24]byte
		if _, err := rand.Read(tok[:]); err != nil {
			return err
		}
		k.Token = hex.EncodeToString(tok[:])
	}
	files, err := k.Render()
	if err != nil {
		return badInput(err)
	}
	out, _ := f.GetString("out")
	if out == "" {
		_, err := stdout.Write(files.Stream())
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(out, n), files[n], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: %d partitions -> %s (kubectl apply -k %s)\n", file, pl.P, out, out)
	return nil
}
