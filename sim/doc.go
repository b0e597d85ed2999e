// Package sim is lockstep's core: virtual time in picoseconds, the event
// queue with its partition-independent ordering key, the packet pool, and
// links (serialisation, propagation and impairments).
//
// It models one direction of a link as a transmitter plus a wire. It does not
// model elements: switches (package switchsim) and hosts (package hostsim)
// own their queues and call Engine.Transmit when a link is idle; the event
// loop that dispatches events to them lives in package fabric.
//
// Determinism contract (docs/design.md §2): events are ordered by
// (time, destination element, source element, source's sequence number);
// every element numbers the events it creates; every element and every link
// draws from its own random stream seeded from (run seed, id). Nothing here
// reads the wall clock or a global random source.
package sim
