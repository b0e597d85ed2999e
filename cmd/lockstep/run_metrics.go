package main

import (
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/internal/metrics"
)

// addRunMetricsFlag adds `lockstep run --metrics HOST`.
func addRunMetricsFlag(cmd *cobra.Command) {
	cmd.Flags().String("metrics", "", "give every node and coordinator process its own Prometheus metrics listener on HOST:0 (e.g. 127.0.0.1:0; needs --procs or --coordinators 3); each says on stderr where")
}

// runMetricsArgs are the child flags `run --metrics` asks for: every child
// process serves on its own port of the host given (port 0).
func runMetricsArgs(cmd *cobra.Command, procs bool, coords int) ([]string, error) {
	addr, _ := cmd.Flags().GetString("metrics")
	if addr == "" {
		return nil, nil
	}
	if !procs && coords != 3 {
		return nil, fmt.Errorf("--metrics: the metrics are served by node and coordinator processes: add --procs (or --coordinators 3)")
	}
	a, err := metrics.LoopbackDefault(addr)
	if err != nil {
		return nil, err
	}
	if _, p, _ := net.SplitHostPort(a); p != "0" {
		return nil, fmt.Errorf("--metrics %s: every child needs a port of its own: give port 0 (HOST:0)", addr)
	}
	return []string{"--metrics", a}, nil
}
