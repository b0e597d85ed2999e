package prefetch

// Two prefetches the cache lines at a and b (PREFETCHT0: into every
// level). Pass the same address twice for one line.
//
//go:noescape
func Two(a, b uintptr)
