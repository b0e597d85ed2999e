package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/results"
)

func newFetchResultsCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fetch-results RUN --nats URL --out DIR",
		Short: "Fetch a finished run's results from JetStream and write its outputs",
		Long: `Fetch the results the nodes of run RUN stored in JetStream (the object store
bucket lockstep-results-RUN: the setup and one object per partition, each
verified against its SHA-256 digest), merge them and write the same files
into DIR as the launcher would. The results outlive the launcher: this works
after it stopped, crashed or ran elsewhere. It needs a NATS server with
JetStream (lockstep nats has it on); without one the results only went to
the launcher, by request/reply.`,
		Example: "  lockstep fetch-results exp1 --nats nats://127.0.0.1:4222 --out out/exp1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			url, _ := f.GetString("nats")
			out, _ := f.GetString("out")
			if url == "" || out == "" {
				return badInput(fmt.Errorf("fetch-results: --nats and --out are required"))
			}
			auth, err := natsAuthOptions(cmd)
			if err != nil {
				return badInput(err)
			}
			timeout, _ := f.GetDuration("timeout")
			nc, err := nats.Connect(url, append([]nats.Option{nats.Name("lockstep fetch-results"), nats.Timeout(timeout)}, auth...)...)
			if err != nil {
				return fmt.Errorf("fetch-results: connect to %s: %w", url, err)
			}
			defer nc.Close()
			start := time.Now()
			fr, err := deploy.FetchResults(nc, args[0], timeout)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return badInput(fmt.Errorf("--out %s: %w", out, unwrapPathErr(err)))
			}
			setCrashDir(out)
			ds := node.RunStats(fr.Placement, fr.Results, fr.Outputs.End, time.Since(start).Seconds())
			ds.Transport, ds.Nodes = "jetstream", "fetched"
			if err := fr.Outputs.WriteDir(out, results.Perf{Partitions: fr.Placement.P, WallSeconds: time.Since(start).Seconds()},
				map[string]any{"distributed": ds, "fetched_from": fr.Bucket}); err != nil {
				return err
			}
			sum := fr.Outputs.Summary()
			fmt.Fprintf(stdout, "run %s: %d partitions from JetStream bucket %s, %d/%d flows finished -> %s\n",
				args[0], fr.Placement.P, fr.Bucket, sum.FlowsFinished, sum.Flows, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.String("nats", "", "NATS server URL (required)")
	f.String("out", "", "output directory (required)")
	f.Duration("timeout", 10*time.Second, "bound on each NATS request")
	addNATSAuthFlags(cmd)
	return cmd
}
