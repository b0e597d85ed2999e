// Package k8sapi holds the tests that check lockstep's Kubernetes
// manifests against a real control plane (make test-k8s): etcd (Debian's
// etcd-server), kube-apiserver and kube-controller-manager built from
// k8s.io/kubernetes in tools/k8s, all on loopback, started and stopped by
// the tests. Server-side dry-run of every rendering of `lockstep deploy
// k8s` and of the kustomize base and overlays, real applies, and the
// controllers' work (pods, completion indexes, endpoint slices, the
// PodDisruptionBudget's status, a new run replacing the Job). They are
// behind the build tag k8sapi, off the plain `go test ./...`.
package k8sapi
