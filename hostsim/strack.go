package hostsim

import "github.com/lockstep-sim/lockstep/cc"

// STrack's path manager lives in package cc beside the endpoint that uses
// it (cc/pathmgr.go); these names keep the scenario-facing API.
type (
	// STrackConfig configures STrack's path manager.
	STrackConfig = cc.PathConfig
	// PathMode selects how an STrack sender picks entropies.
	PathMode = cc.PathMode
	// PathManager chooses entropies for one STrack sender.
	PathManager = cc.PathManager
)

// Path selection modes (cc.PathMode).
const (
	PathSkip  = cc.PathSkip
	PathReuse = cc.PathReuse
)

// ParsePathMode maps a scenario name to a PathMode.
func ParsePathMode(s string) (PathMode, error) { return cc.ParsePathMode(s) }

// NewPathManager returns a path manager for a flow whose entropies start
// at base.
func NewPathManager(cfg STrackConfig, base uint16) *PathManager { return cc.NewPathManager(cfg, base) }
