//go:build !(linux || darwin)

package node

// ProcessUsage is not measured on this system.
func ProcessUsage() (Usage, bool) { return Usage{}, false }
