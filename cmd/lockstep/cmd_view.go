package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/cmd/lockstep/internal/ui"
)

func newViewCmd(stderr io.Writer) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "view DIR",
		Short: "Serve the live view's page for a finished run's directory",
		Long: `Serve the page of 'lockstep run --ui' for a finished run: the fabric drawn by
tier with links coloured by average utilisation and switches by buffer
occupancy over virtual time (a time slider; occupancy needs queue_depth.csv,
i.e. a run with --queues), the FCT CDF, slowdown by size, and the cwnd of
flows 0-7 (needs cwnd.csv). It reads fct.csv, queues.csv and, when present,
queue_depth.csv, cwnd.csv and summary.json; the API is in docs/ui.md. It
serves until interrupted, on loopback only.`,
		Example: "  lockstep run examples/dumbbell.yaml --out out/d --cwnd --queues 10us\n  lockstep view out/d --addr 127.0.0.1:8080",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := ui.FromDir(args[0])
			if err != nil {
				return badInput(err)
			}
			ctx, stop := signal.NotifyContext(cmdContext(cmd), os.Interrupt, syscall.SIGTERM)
			defer stop()
			at, wait, err := ui.Serve(ctx, addr, m)
			if err != nil {
				return badInput(err)
			}
			fmt.Fprintf(stderr, "view: http://%s/ (Ctrl-C to stop)\n", at)
			wait()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "loopback address to serve on")
	return cmd
}
