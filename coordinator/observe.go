package coordinator

import (
	"strconv"

	"github.com/hashicorp/raft"
)

// RaftInfo is a replica's view of raft, for metrics and probes.
type RaftInfo struct {
	Term     uint64
	State    string // Leader, Follower, Candidate, Shutdown
	Leader   string // the leader's server id ("": none known)
	Leading  bool
	Applied  uint64 // last applied log index
	Finished bool   // the run's end is applied
}

// RaftState reads the replica's raft state; it changes nothing. After
// raft shut down it is the last state before (a replica that lingers to
// be scraped still says which term it was in and whether it led).
func (c *Coordinator) RaftState() RaftInfo {
	if in := c.final.Load(); in != nil {
		return *in
	}
	st := c.raft.Stats()
	term, _ := strconv.ParseUint(st["term"], 10, 64)
	_, id := c.raft.LeaderWithID()
	in := RaftInfo{Term: term, State: c.raft.State().String(), Leader: string(id), Applied: c.raft.AppliedIndex(),
		Leading: c.raft.State() == raft.Leader}
	select {
	case <-c.fsm.Finished():
		in.Finished = true
	default:
	}
	return in
}
