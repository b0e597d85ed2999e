// Package prefetch asks the CPU for cache lines before the program needs
// them. A discrete-event engine's next events are known a few places
// ahead in its sorted queue, and what they touch first (the packet, its
// link, the element's state) is where a fabric that has left the caches
// misses (docs/decisions.md, "Prefetching the next events"). A prefetch
// reads nothing the program sees and never faults, so a wrong address
// costs a line, not a crash: callers may pass a stale or nil one.
package prefetch
