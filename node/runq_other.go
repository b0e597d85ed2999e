//go:build !linux

package node

import "time"

// runqWait is not measured on this system.
func runqWait() time.Duration { return 0 }
