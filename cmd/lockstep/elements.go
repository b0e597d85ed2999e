package main

import (
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/lockstep-sim/lockstep/internal/liveness"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/scenario"
)

// A scenario's external elements (docs/external-elements.md) serve on
// the run's NATS server: --nats names it and --run-id scopes their
// subjects (lockstep.ID.element.NAME). With such a scenario these flags
// (and --peer-timeout, which bounds every answer) describe how to reach
// the elements, not a distributed run: `lockstep run s.yaml --nats URL
// --run-id ID` runs in one process; --partitions, --transport or
// --procs ask for partitions as usual.

// elementFlags are the distributed-run flags that, with external
// elements, only say how to reach them.
var elementFlags = []string{"nats", "run-id", "peer-timeout"}

// asksDistribution reports whether the distributed flag n, given,
// asks for a distributed run for scenario b.
func asksDistribution(n string, b *scenario.Built) bool {
	return b == nil || len(b.External) == 0 || !slices.Contains(elementFlags, n)
}

// connectElements connects the external elements of b for a run in this
// process (one partition, or in-memory partitions: inProcess), on
// --nats with --run-id; the returned function closes the connection. A
// run over NATS leaves it to its nodes (node.Run), which need the
// server to be --nats: the elements cannot reach an embedded one.
func connectElements(cmd *cobra.Command, v *viper.Viper, b *scenario.Built, inProcess bool) (func(), error) {
	none := func() {}
	if len(b.External) == 0 {
		return none, nil
	}
	url, run := v.GetString("run.nats"), v.GetString("run.run-id")
	if v.GetString("run.element-keys") != "" {
		// On the embedded server, whose URL and the elements' keys the
		// launcher writes (deploy.Options.ElementKeys).
		if inProcess || url != "" {
			return none, badInput(fmt.Errorf("--element-keys: for a run over the embedded NATS server (no --nats, no --transport memory)"))
		}
		return none, nil
	}
	if url == "" || run == "" {
		return none, badInput(fmt.Errorf("%s: external: %d switches run as external elements, which serve on NATS: give --nats URL and --run-id ID "+
			"(their subjects are lockstep.ID.element.NAME), or --element-keys DIR for a run over the embedded server (docs/external-elements.md)",
			b.File, len(b.External)))
	}
	if _, err := wire.NewSubjects(run); err != nil {
		return none, badInput(fmt.Errorf("--run-id %q: %v", run, err))
	}
	if v.GetBool("run.external") || !inProcess {
		return none, nil
	}
	auth, err := natsAuthOptions(cmd)
	if err != nil {
		return none, badInput(err)
	}
	nc, err := nats.Connect(url, append(append([]nats.Option{nats.Name("lockstep run (external elements)")}, liveness.ClientOptions()...), auth...)...)
	if err != nil {
		return none, fmt.Errorf("external elements: connect to NATS %s: %w", url, err)
	}
	node.ConnectElements(b, nc, run, node.ElementTimeout(v.GetDuration("run.peer-timeout")))
	return nc.Close, nil
}
