package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/internal/version"
	"github.com/lockstep-sim/lockstep/scenario"
)

// Exit statuses (docs/design.md §10; README "Exit statuses"; lockstep --help).
const (
	exitOK       = 0
	exitUsage    = 2 // bad input: flags, arguments, scenario, referenced files
	exitFailed   = 3 // a run that failed: a peer died or went silent, NATS gone, quorum lost, timeout, interrupted
	exitInternal = 4 // an internal error: a recovered panic (stack trace in a file), a broken invariant
)

const exitStatusHelp = `Exit statuses:
  0  success
  2  bad input or usage (flags, scenario, referenced files); nothing is written
  3  the run failed after it started (a node died or went silent, NATS or the
     coordinator unreachable, raft quorum lost, --external timed out,
     interrupted, a PFC deadlock); --out gets what was computed,
     summary.json "complete": false
  4  internal error: one line on stderr naming the file with the stack trace`

// usageError marks errors caused by the user's input (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func badInput(err error) error { return usageError{err} }

// internalError marks a broken invariant (exit status 4). Errors that are
// neither bad input nor internal are a failed run (exit status 3).
type internalError struct{ err error }

func (e internalError) Error() string { return e.err.Error() }
func (e internalError) Unwrap() error { return e.err }

func internal(err error) error { return internalError{err} }

// crash records where a recovered panic's stack trace goes: the output
// directory of the run in progress, else os.TempDir().
var crash struct {
	mu  sync.Mutex
	dir string
}

func setCrashDir(dir string) {
	crash.mu.Lock()
	crash.dir = dir
	crash.mu.Unlock()
}

// testHook, if set (by tests only), is called by every run command once
// its input is loaded: a way to reach the panic handler.
var testHook func(cmd string)

// recovered turns a panic into exit status 4: one line on stderr and the
// stack trace in a file.
func recovered(p any, stderr io.Writer) int {
	stack := debug.Stack()
	crash.mu.Lock()
	dir := crash.dir
	crash.mu.Unlock()
	if dir == "" {
		dir = os.TempDir()
	}
	text := fmt.Sprintf("lockstep %s: panic: %v\n\n%s", strings.Join(os.Args[1:], " "), p, stack)
	where := "(could not write the stack trace)"
	f, err := os.CreateTemp(dir, "lockstep-crash-*.txt")
	if err != nil && dir != os.TempDir() {
		f, err = os.CreateTemp(os.TempDir(), "lockstep-crash-*.txt")
	}
	if err == nil {
		_, werr := f.WriteString(text)
		if cerr := f.Close(); werr == nil && cerr == nil {
			where = "stack trace in " + f.Name()
		}
	}
	fmt.Fprintf(stderr, "lockstep: internal error: %s; %s\n", oneLine(fmt.Sprint(p)), where)
	return exitInternal
}

// run is the whole program; main only calls it.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = recovered(p, stderr)
		}
	}()
	setCrashDir("")
	v := newViper()
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
	var ie internalError
	switch {
	case errors.As(err, &u) || isCobraUsage(err):
		return exitUsage
	case errors.As(err, &ie):
		return exitInternal
	}
	return exitFailed
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
seed give byte-identical results. See docs/scenario.md for the format.

` + exitStatusHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Get().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newVersionCmd(stdout), newRunCmd(v, stdout, stderr), newResumeCmd(stdout, stderr), newSweepCmd(stdout, stderr), newViewCmd(stderr), newValidateCmd(stdout), newTopoCmd(stdout), newPlotCmd(stdout),
		newCCCmd(stdout, stderr), newSwitchCmd(stdout), newExperimentCmd(stdout, stderr),
		newNodeCmd(v, stdout, stderr), newCoordinatorCmd(v, stdout, stderr), newNATSCmd(stdout, stderr), newDeployCmd(stdout), newFetchResultsCmd(stdout))
	return root
}

// loadScenario reads and builds a scenario file with the edits the
// command line asks for (scenario.LoadFile). Its errors are bad input.
func loadScenario(path string, edits ...scenario.Edit) (*scenario.Built, error) {
	// Refuse a scenario that cannot fit before building it (--max-memory,
	// inputEdits, may change the limit: the last edit wins).
	edits = append([]scenario.Edit{scenario.WithMemoryLimit(defaultMemoryLimit())}, edits...)
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
