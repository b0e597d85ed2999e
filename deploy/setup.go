package deploy

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
)

// NewSetup is what the coordinators hand every node of a run of b cut by
// pl: the effective scenario b was built from (after every edit) and the
// files it read, with its digest, so that each node builds exactly b
// (node.FromSetup) and refuses anything else.
func NewSetup(b *scenario.Built, pl *partition.Placement) *wire.Setup {
	return &wire.Setup{File: b.File, Scenario: b.Effective(), Files: wire.FilesOf(b.Files()), Seed: b.Seed(), Digest: b.Digest(),
		P: pl.P, Part: slices.Clone(pl.Part), Lookahead: int64(pl.Lookahead), StopAt: int64(b.Limit()),
		Deadlock: int64(b.Fabric.Watchdog()), DeadlockEvery: int64(node.DeadlockEvery(b))}
}

// WriteSetup writes su to path (atomically, as the setup message the
// coordinators send), for coordinator processes started with --setup.
func WriteSetup(path string, su *wire.Setup) error {
	data, err := wire.NewEncoder().Control(wire.TypeSetup, su)
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// ReadSetup reads a setup WriteSetup wrote and checks it as a node does
// (node.FromSetup): the scenario must give its digest.
func ReadSetup(path string) (*wire.Setup, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := wire.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Kind != wire.KindControl || m.Control.Type != wire.TypeSetup {
		return nil, fmt.Errorf("%s: not a setup", path)
	}
	var su wire.Setup
	if err := m.Control.UnmarshalBody(&su); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, _, err := node.FromSetup(&su); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &su, nil
}
