//go:build linux || darwin

package node

import (
	"syscall"
	"time"
)

// processUsage reads this process's usage (getrusage(2)).
func processUsage() (usage, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}, false
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), preempted: uint64(ru.Nivcsw)}, true
}
