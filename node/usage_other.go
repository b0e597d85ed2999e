//go:build !(linux || darwin)

package node

// processUsage is not measured on this system.
func processUsage() (usage, bool) { return usage{}, false }
