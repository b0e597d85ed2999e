// Package cluster holds the tests that run lockstep as containers (make
// test-cluster; docs/design.md §7): NATS, coordinators and nodes each in a
// container of lockstep's image on a private Docker network, killed,
// disconnected and restarted mid-run, and the Kubernetes manifests' pod
// specs run as rendered. They need a Docker daemon and are behind the
// build tag cluster, off the plain `go test ./...`.
package cluster
