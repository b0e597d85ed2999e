//go:build !(linux || darwin)

package node

import "time"

// usage is a process's CPU time and involuntary context switches so far.
type usage struct {
	cpu       time.Duration
	preempted uint64
}

// processUsage is not measured on this system.
func processUsage() (usage, bool) { return usage{}, false }
