package node

import "time"

// usage is a process's CPU time and involuntary context switches so far
// (processUsage: getrusage(2) where the system has it).
type usage struct {
	cpu       time.Duration
	preempted uint64
}
