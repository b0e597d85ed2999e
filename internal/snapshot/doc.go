// Package snapshot encodes a live object graph and restores it in place
// into another build of the same graph: the state of a partition at a
// window boundary (docs/design.md §12), whatever types it holds. It is
// generic on purpose: it walks values by reflection, so a field added to
// any element, controller or queue is checkpointed without code here, and
// a field it could not restore is an error, never dropped.
//
// What it models:
//
//   - Memory as regions: the target of a pointer (one element) or the
//     backing array of a slice (its capacity). Overlapping regions merge
//     into the outermost, so a pointer into an array (&s[i]), a pointer to
//     a struct's field and two slices of one array keep pointing where they
//     did. Each region is encoded once; references are (region, byte
//     offset), so shared pointers and cycles survive.
//   - Dead cells: a type may declare which cells of its slices are live
//     (Sparse: a ring's between head and tail, a pool's slots in use);
//     only those are encoded, and a restore zeroes the others.
//   - Values field by field, plain data (no pointer of any kind) as its
//     bytes: a snapshot is in this build's memory layout. The type table
//     records every type's layout digest, and Decode refuses a snapshot
//     whose types differ (another build, another GOARCH).
//   - Maps in the order of their keys' encoding (keys are plain data and
//     strings), so a snapshot does not depend on map iteration order.
//   - Interfaces by their concrete type, looked up among the types the
//     graph's static types name, the concrete types a fresh build holds and
//     those given to Codec.Register.
//   - Anchors: immutable structure (topology, routes, flow list) that a
//     build from the same scenario makes identically. Their memory is not
//     encoded; references into it are, by the anchors' regions in the order
//     a walk finds them, and Decode points them into the fresh anchors
//     (refusing anchors that differ in shape).
//   - Restoring in place: Decode overwrites each root, and restores what a
//     reference reaches into the fresh build's object at the same place
//     when it is there (same type, size and offset 0, not claimed by
//     another), new memory otherwise. A func cannot be encoded: a snapshot
//     records whether it was set, a fresh object keeps its own (the build
//     set it: a method value such as a pcap tap), and one the fresh build
//     does not set is an error naming the field's path. Channels and
//     unsafe.Pointers that are not nil are refused when encoding.
//
// How it is fast enough for 10^5 regions (docs/decisions.md, "Checkpoints
// (issue 22)"): the addresses met are kept in an open-addressing table,
// the regions sorted by a radix sort of their starts, and discovery logs
// what each reference it meets refers to, so that encoding a region
// replays its block of the log instead of looking references up.
//
// What it does not model: pointers to memory outside the graph's regions
// (a package variable) are copied, not shared; funcs inside interfaces and
// maps keyed by pointers are refused.
//
// It uses package unsafe, and is the only package of lockstep that does
// (docs/decisions.md, "Checkpoints"): to read and write unexported fields
// and plain data in place, and to point references into restored regions
// (unsafe.Add within one allocation). The garbage collector does not move
// heap objects, and every region is kept alive by the graph or by the
// codec while it runs.
package snapshot
