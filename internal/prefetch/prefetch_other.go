//go:build !amd64

package prefetch

// Two is a hint; without an assembly version it does nothing.
func Two(a, b uintptr) {}
