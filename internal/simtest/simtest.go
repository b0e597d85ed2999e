// Package simtest holds test fixtures shared by several packages' tests.
package simtest

// RandomScenario draws from every random stream of the engine: random loss,
// Gilbert-Elliott bursts, jitter, reordering, RED ECN marking and
// per-packet spraying. Prepend "seed: N\n" to choose the seed.
const RandomScenario = `
topology:
  type: leafspine
  leafspine:
    leaves: 2
    spines: 2
    hosts_per_leaf: 4
    host: {rate: 100Gbps, delay: 1us, buffer: 128KiB, ecn: {mode: red, min: 20KB, max: 80KB, pmax: 0.2}}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 128KiB, ecn: {mode: red, min: 20KB, max: 80KB, pmax: 0.2}}
transport: {ecn: true, rto: {min: 500us}}
switch: {forwarding: spray}
impairments:
  - {link: [leaf0, spine0], loss: 0.5%, jitter: 200ns}
  - {link: [leaf1, spine1], gilbert_elliott: {p: 0.001, r: 0.3}, reorder: {prob: 2%, delay: 3us}}
workload:
  - type: permutation
    size: 1MB
`
