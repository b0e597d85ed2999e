// Package node runs one partition of a fabric (docs/design.md §3): a node
// process builds only its partition's elements, runs them window by window
// as the lockstep barrier grants, batches the packets that cross a cut per
// destination and window, and reports after each window.
//
// Core is the pure part (no I/O, goroutines or clock), in the Step/Ready
// shape of docs/style.md §3c; RunLocal drives P cores and a barrier in one process
// with an in-memory transport; the NATS shell (nats.go) is a thin loop
// around a Core. A node's result (PartResult) wraps its results.Part,
// which results.Merge combines into the outputs a single-process run
// writes, byte for byte. Setting a run up (deploy.NewSetup) and
// collecting its results over NATS (deploy.Collector) belong to whoever
// starts the run, in package deploy; FromSetup is the node's side.
//
// A node holds no state of other partitions' elements: their slots in the
// engine's element table are empty, and their flows' endpoints do not
// exist here.
package node
