//go:build linux || darwin

package node

import (
	"syscall"
	"time"
)

// ProcessUsage reads this process's usage (getrusage(2), and runqWait).
func ProcessUsage() (Usage, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Usage{}, false
	}
	return Usage{CPU: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), Preempted: uint64(ru.Nivcsw), Runq: runqWait()}, true
}
