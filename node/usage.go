package node

import "time"

// Usage is a process's CPU time, involuntary context switches and time
// runnable but waiting for a CPU so far (ProcessUsage: getrusage(2) where
// the system has it; the wait from Linux's per-thread schedstat).
type Usage struct {
	CPU       time.Duration
	Preempted uint64
	Runq      time.Duration
}

// Since is u less an earlier reading.
func (u Usage) Since(earlier Usage) Usage {
	return Usage{CPU: u.CPU - earlier.CPU, Preempted: u.Preempted - earlier.Preempted, Runq: u.Runq - earlier.Runq}
}
