package node

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/scenario"
	"github.com/lockstep-sim/lockstep/sim"
)

// FromSetup builds the effective scenario and the placement a Setup
// carries, exactly as the launcher built them, and refuses a Setup whose
// scenario does not give its digest or whose placement does not give its
// lookahead and stop time.
func FromSetup(su *wire.Setup) (*scenario.Built, *partition.Placement, error) {
	files, err := wire.FileMap(su.Files)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %w", err)
	}
	b, err := scenario.Rebuild(su.File, su.Scenario, files, su.Digest)
	if err != nil {
		return nil, nil, fmt.Errorf("node: %w", err)
	}
	if b.Seed() != su.Seed {
		return nil, nil, fmt.Errorf("node: scenario %s has seed %d here, %d at the coordinator", su.File, b.Seed(), su.Seed)
	}
	pl, err := partition.MakeFlows(b.Topo, b.Fabric.Impairments, b.Fabric.Flows, b.Fabric.Tasks, su.Part)
	if err != nil {
		return nil, nil, err
	}
	pl = partition.WithExternal(pl, b)
	if int64(b.Fabric.Watchdog()) != su.Deadlock || int64(DeadlockEvery(b)) != su.DeadlockEvery {
		return nil, nil, fmt.Errorf("node: the PFC deadlock search has threshold %v, grid %v here; the coordinator says %v, %v",
			b.Fabric.Watchdog(), DeadlockEvery(b), sim.Time(su.Deadlock), sim.Time(su.DeadlockEvery))
	}
	if pl.P != su.P || int64(pl.Lookahead) != su.Lookahead || int64(b.Limit()) != su.StopAt {
		return nil, nil, fmt.Errorf("node: placement gives P=%d, lookahead %v, stop %v here; the coordinator says P=%d, %v, %v",
			pl.P, pl.Lookahead, b.Limit(), su.P, sim.Time(su.Lookahead), sim.Time(su.StopAt))
	}
	return b, pl, nil
}
