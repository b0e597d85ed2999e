package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/scenario"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the run itself failed
	exitUsage   = 2 // bad input: flags, scenario, referenced files
)

// usageError marks errors caused by the user's input (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func badInput(err error) error { return usageError{err} }

// run is the whole program; main only calls it.
func run(args []string, stdout, stderr io.Writer) int {
	v := viper.New()
	v.SetEnvPrefix("LOCKSTEP")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	root := newRoot(v, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "lockstep: %s\n", oneLine(err.Error()))
	var u usageError
	if errors.As(err, &u) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// isCobraUsage recognises cobra's own errors for bad flags and arguments.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown flag", "unknown shorthand", "unknown command", "accepts ", "requires ", "invalid argument", "flag needs"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

func newRoot(v *viper.Viper, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockstep",
		Short: "Packet-level datacenter network emulator with deterministic, distributable runs",
		Long: `lockstep emulates datacenter fabrics packet by packet: links, output-queued
switches with ECN, hosts with TCP-style transports. A scenario (YAML) and a
seed give byte-identical results. See docs/scenario.md for the format.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(v, stdout, stderr), newValidateCmd(stdout), newTopoCmd(stdout), newPlotCmd(stdout),
		newCCCmd(stdout, stderr), newExperimentCmd(stdout, stderr),
		newNodeCmd(v, stdout, stderr), newCoordinatorCmd(v, stdout, stderr))
	return root
}

// loadScenario reads and builds a scenario file with the edits the
// command line asks for (scenario.LoadFile). Its errors are bad input.
func loadScenario(path string, edits ...scenario.Edit) (*scenario.Built, error) {
	// Refuse a scenario that cannot fit before building it.
	edits = append([]scenario.Edit{scenario.WithMemoryLimit(machineMemory())}, edits...)
	b, err := scenario.LoadFile(path, edits...)
	if err != nil {
		return nil, badInput(err)
	}
	return b, nil
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
