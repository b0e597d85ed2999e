package node

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// runqWait is how long this process's threads have been runnable but
// waiting for a CPU: the second field of each /proc/self/task/*/schedstat
// (nanoseconds on a run queue; the kernel's CONFIG_SCHED_INFO), summed. A
// thread that has exited no longer counts; the Go runtime keeps its
// threads. 0 where the files cannot be read.
func runqWait() time.Duration {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := bytes.Fields(b)
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
			sum += time.Duration(ns)
		}
	}
	return sum
}
