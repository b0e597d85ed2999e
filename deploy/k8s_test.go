package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/lockstep-sim/lockstep/deploy/internal/k8sobj"
)

// exampleK8s is what deploy/k8s/base is rendered from:
// lockstep deploy k8s examples/fattree-k8-permutation.yaml --partitions 4 --run-id example --no-auth --out deploy/k8s/base
func exampleK8s(t *testing.T) K8s {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "fattree-k8-permutation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return K8s{Scenario: string(b), ScenarioName: "fattree-k8-permutation.yaml", Partitions: 4, Run: "example"}
}

// renderedObjects renders k and decodes every manifest strictly.
func renderedObjects(t *testing.T, k K8s) []any {
	t.Helper()
	files, err := k.Render()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := k8sobj.DecodeAll(files.Stream())
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestK8s_RenderedManifestsDecodeStrictlyAndSayWhatTheyShould(t *testing.T) {
	objs := renderedObjects(t, exampleK8s(t))
	byKind := map[string]int{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.StatefulSet:
			byKind["StatefulSet"]++
			spec := o.Spec.Template.Spec
			if len(spec.Containers) != 1 || spec.Containers[0].ReadinessProbe == nil || spec.Containers[0].Resources.Requests.Cpu().IsZero() {
				t.Errorf("%s: want one container with a readiness probe and a CPU request", o.Name)
			}
			if o.Name == "coord" {
				if *o.Spec.Replicas != 3 || o.Spec.ServiceName != "coord" || o.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
					t.Errorf("coord: replicas %d, service %q, policy %q", *o.Spec.Replicas, o.Spec.ServiceName, o.Spec.PodManagementPolicy)
				}
				args := strings.Join(spec.Containers[0].Args, " ")
				for _, w := range []string{"--peers=coord-0=coord-0.coord:7000,coord-1=coord-1.coord:7000,coord-2=coord-2.coord:7000",
					"--id=$(POD_NAME)", "--raft-addr=$(POD_IP):7000", "--partitions=4", "--metrics=0.0.0.0:9100"} {
					if !strings.Contains(args, w) {
						t.Errorf("coord args %q lack %q", args, w)
					}
				}
			}
		case *batchv1.Job:
			byKind["Job"]++
			if o.Spec.CompletionMode == nil || *o.Spec.CompletionMode != batchv1.IndexedCompletion || *o.Spec.Completions != 4 || *o.Spec.Parallelism != 4 {
				t.Errorf("nodes: want an Indexed Job of 4 completions, 4 in parallel")
			}
			if c := o.Spec.Template.Spec.Containers[0]; c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("nodes: readiness is /readyz (joined the run)")
			}
		case *corev1.Service:
			byKind["Service"]++
			if o.Name == "coord" && (o.Spec.ClusterIP != corev1.ClusterIPNone || !o.Spec.PublishNotReadyAddresses) {
				t.Errorf("coord: want a headless Service publishing not-ready addresses")
			}
		case *policyv1.PodDisruptionBudget:
			byKind["PodDisruptionBudget"]++
			if o.Spec.MinAvailable.IntValue() != 2 {
				t.Errorf("coord PDB: minAvailable %v, want 2", o.Spec.MinAvailable)
			}
		case *corev1.Secret:
			byKind["Secret"]++
		case *corev1.ConfigMap:
			byKind["ConfigMap"]++
			if o.Name == "lockstep-scenario" && o.Data["fattree-k8-permutation.yaml"] != exampleK8s(t).Scenario {
				t.Errorf("the scenario ConfigMap does not hold the scenario verbatim")
			}
		}
	}
	want := map[string]int{"StatefulSet": 2, "Job": 1, "Service": 2, "PodDisruptionBudget": 1, "Secret": 1, "ConfigMap": 2}
	for k, n := range want {
		if byKind[k] != n {
			t.Errorf("%d %s, want %d", byKind[k], k, n)
		}
	}
}

func TestK8s_StrictDecodingRejects(t *testing.T) {
	good := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n"
	if _, err := k8sobj.Decode([]byte(good)); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  nmae: y\n",
		"wrong type":    "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: x\nspec:\n  replicas: three\n",
		"duplicate key": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  name: y\n",
		"unknown kind":  "apiVersion: v1\nkind: Frobnicator\nmetadata:\n  name: x\n",
	} {
		if _, err := k8sobj.Decode([]byte(doc)); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// TestK8s_BaseIsRendered: deploy/k8s/base is exactly what `lockstep
// deploy k8s` renders for the example (regenerate it with the command in
// exampleK8s's comment).
func TestK8s_BaseIsRendered(t *testing.T) {
	files, err := exampleK8s(t).Render()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join("k8s", "base")
	ents, err := os.ReadDir(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(files) {
		t.Errorf("deploy/k8s/base has %d files, the renderer %d", len(ents), len(files))
	}
	for n, want := range files {
		got, err := os.ReadFile(filepath.Join(base, n))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("deploy/k8s/base/%s is not what the renderer writes (%v): run the command in exampleK8s's comment", n, err)
		}
	}
}

// TestK8s_KustomizeRendersBaseAndOverlays runs `kubectl kustomize` on the
// base and every overlay and decodes what it prints strictly.
func TestK8s_KustomizeRendersBaseAndOverlays(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("kubectl is not installed: %v", err)
		}
		t.Skip("kubectl is not installed")
	}
	dirs := []string{filepath.Join("k8s", "base")}
	overlays, _ := filepath.Glob(filepath.Join("k8s", "overlays", "*"))
	if len(overlays) < 2 {
		t.Fatalf("want at least two overlays, found %v", overlays)
	}
	for _, d := range append(dirs, overlays...) {
		out, err := exec.Command(kubectl, "kustomize", d).Output()
		if err != nil {
			t.Errorf("kubectl kustomize %s: %v", d, err)
			continue
		}
		objs, err := k8sobj.DecodeAll(out)
		if err != nil {
			t.Errorf("kubectl kustomize %s: %v", d, err)
			continue
		}
		t.Logf("%s: %d objects", d, len(objs))
		if strings.HasSuffix(d, "large") {
			checkOwnNamespace(t, d, objs, "lockstep")
		}
		if strings.HasSuffix(d, "external-nats") {
			for _, o := range objs {
				if s, ok := o.(*appsv1.StatefulSet); ok && s.Name == "nats" {
					t.Errorf("external-nats still has the NATS StatefulSet")
				}
			}
		}
	}
}

// checkOwnNamespace: the overlay in dir creates its namespace ns (a
// Namespace object, first, as kubectl apply -k orders it) and puts every
// other object in it, so applying it to a cluster without ns works
// (issue 25: `namespaces "lockstep" not found` before).
func checkOwnNamespace(t *testing.T, dir string, objs []any, ns string) {
	t.Helper()
	if len(objs) == 0 {
		t.Errorf("%s: no objects", dir)
		return
	}
	if n, ok := objs[0].(*corev1.Namespace); !ok || n.Name != ns {
		t.Errorf("%s: the first object is %T, want the Namespace %q", dir, objs[0], ns)
	}
	for _, o := range objs[1:] {
		m, ok := o.(interface{ GetNamespace() string })
		if !ok {
			t.Errorf("%s: %T has no namespace", dir, o)
			continue
		}
		if _, isNS := o.(*corev1.Namespace); isNS || m.GetNamespace() != ns {
			t.Errorf("%s: %T in namespace %q, want %q", dir, o, m.GetNamespace(), ns)
		}
	}
}

// TestK8s_CheckpointsLetNodePodsBeReplaced: with --checkpoint-every the
// coordinators get the checkpoint flags and the node Job replaces up to
// --max-restarts failed pods (same completion index, which rejoins);
// without, none.
func TestK8s_CheckpointsLetNodePodsBeReplaced(t *testing.T) {
	for _, c := range []struct {
		every   string
		backoff int32
	}{{"", 0}, {"100us", 5}} {
		k := exampleK8s(t)
		k.CheckpointEvery, k.MaxRestarts = c.every, 5
		objs := renderedObjects(t, k)
		var jobs, coords int
		for _, o := range objs {
			switch o := o.(type) {
			case *batchv1.Job:
				jobs++
				if o.Spec.BackoffLimit == nil || *o.Spec.BackoffLimit != c.backoff {
					t.Errorf("--checkpoint-every %q: node Job backoffLimit %v, want %d", c.every, o.Spec.BackoffLimit, c.backoff)
				}
			case *appsv1.StatefulSet:
				if o.Name != "coord" {
					continue
				}
				coords++
				args := strings.Join(o.Spec.Template.Spec.Containers[0].Args, " ")
				if has := strings.Contains(args, "--checkpoint-every=100us --max-restarts=5"); has != (c.every != "") {
					t.Errorf("--checkpoint-every %q: coordinator args %q", c.every, args)
				}
			}
		}
		if jobs != 1 || coords != 1 {
			t.Fatalf("%d jobs, %d coordinator sets", jobs, coords)
		}
	}
}

// TestK8s_NATSPerNode: with NATSPerNode, NATS is a DaemonSet (a server per
// Kubernetes node, no JetStream) whose servers join through the headless
// Service nats-routes with the run's token, and the Service nats keeps
// every member on its own node's server; there is no NATS StatefulSet,
// and checkpoints, which need JetStream, are refused.
func TestK8s_NATSPerNode(t *testing.T) {
	k := exampleK8s(t)
	k.NATSPerNode, k.Token = true, "t0k"
	objs := renderedObjects(t, k)
	var ds *appsv1.DaemonSet
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.DaemonSet:
			ds = o
		case *appsv1.StatefulSet:
			if o.Name == "nats" {
				t.Errorf("a NATS StatefulSet beside the DaemonSet")
			}
		case *corev1.Service:
			services[o.Name] = o
		}
	}
	if ds == nil || ds.Name != "nats" {
		t.Fatalf("no DaemonSet nats")
	}
	c := ds.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, w := range []string{"--cluster 0.0.0.0:6222", "--routes nats://nats-routes:6222", "--jetstream=false", "--name $(POD_NAME)"} {
		if !strings.Contains(args, w) {
			t.Errorf("nats args %q lack %q", args, w)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the pod's name: %+v", e)
	}
	if e := env["LOCKSTEP_NATS_TOKEN"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != "nats-token" {
		t.Errorf("the servers do not get the run's token (clients and routes need it): %+v", e)
	}
	if c.ReadinessProbe == nil || c.Resources.Requests.Cpu().IsZero() {
		t.Errorf("nats: want a readiness probe and a CPU request")
	}
	sel := ds.Spec.Template.Labels
	for _, name := range []string{"nats", "nats-routes"} {
		s := services[name]
		if s == nil {
			t.Fatalf("no Service %s", name)
		}
		for k, v := range s.Spec.Selector {
			if sel[k] != v {
				t.Errorf("Service %s selects %s=%s, which the DaemonSet's pods do not carry", name, k, v)
			}
		}
	}
	if p := services["nats"].Spec.InternalTrafficPolicy; p == nil || *p != corev1.ServiceInternalTrafficPolicyLocal {
		t.Errorf("Service nats: internalTrafficPolicy %v, want Local", p)
	}
	if r := services["nats-routes"]; r.Spec.ClusterIP != corev1.ClusterIPNone || !r.Spec.PublishNotReadyAddresses || r.Spec.Ports[0].Port != 6222 {
		t.Errorf("Service nats-routes: want headless, publishing not-ready addresses, port 6222")
	}
	k.CheckpointEvery = "100us"
	if _, err := k.Render(); err == nil || !strings.Contains(err.Error(), "--nats-per-node has no JetStream") {
		t.Errorf("per-node NATS with checkpoints: err %v, want a refusal", err)
	}
}

// TestK8s_NodesServe: with NodesServe there is no NATS pod: every node pod
// runs the server itself (--serve) with routes to every node's stable name
// (nodes-I.nodes: the Indexed Job's host names under the headless Service
// nodes, which its pods join as their subdomain), the Service nats reaches
// any node's server ready or not, and checkpoints (JetStream) and a server
// per Kubernetes node are refused with it.
func TestK8s_NodesServe(t *testing.T) {
	k := exampleK8s(t)
	k.NodesServe, k.Token = true, "t0k"
	objs := renderedObjects(t, k)
	var job *batchv1.Job
	services := map[string]*corev1.Service{}
	for _, o := range objs {
		switch o := o.(type) {
		case *batchv1.Job:
			job = o
		case *appsv1.StatefulSet:
			if o.Name == "nats" {
				t.Errorf("a NATS StatefulSet beside nodes that serve")
			}
		case *appsv1.DaemonSet:
			t.Errorf("a DaemonSet %s beside nodes that serve", o.Name)
		case *corev1.Service:
			services[o.Name] = o
		}
	}
	if job == nil {
		t.Fatal("no node Job")
	}
	ps := job.Spec.Template.Spec
	if ps.Subdomain != "nodes" {
		t.Errorf("the node pods' subdomain is %q, want nodes (their host names nodes-I resolve under the Service nodes)", ps.Subdomain)
	}
	c := ps.Containers[0]
	args := strings.Join(c.Args, " ")
	var routes []string
	for i := 0; i < k.Partitions; i++ {
		routes = append(routes, fmt.Sprintf("nats://nodes-%d.nodes:6222", i))
	}
	for _, w := range []string{"--serve=0.0.0.0:4222", "--cluster=0.0.0.0:6222", "--routes=" + strings.Join(routes, ",")} {
		if !strings.Contains(args, w) {
			t.Errorf("node args %q lack %q", args, w)
		}
	}
	if strings.Contains(args, "--nats=") {
		t.Errorf("node args %q: --nats beside --serve", args)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["client"] != 4222 || ports["routes"] != 6222 {
		t.Errorf("node ports %v, want client 4222 and routes 6222", ports)
	}
	tok := false
	for _, e := range c.Env {
		tok = tok || e.Name == "LOCKSTEP_NATS_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Key == "nats-token"
	}
	if !tok {
		t.Errorf("the node servers do not get the run's token (clients and routes need it)")
	}
	sel := job.Spec.Template.Labels
	for _, name := range []string{"nats", "nodes"} {
		s := services[name]
		if s == nil {
			t.Fatalf("no Service %s", name)
		}
		for k, v := range s.Spec.Selector {
			if sel[k] != v {
				t.Errorf("Service %s selects %s=%s, which the node pods do not carry", name, k, v)
			}
		}
		if !s.Spec.PublishNotReadyAddresses {
			t.Errorf("Service %s does not publish not-ready nodes (they are ready only once set up through it)", name)
		}
	}
	if s := services["nodes"]; s.Spec.ClusterIP != corev1.ClusterIPNone || s.Spec.Ports[0].Port != 6222 {
		t.Errorf("Service nodes: want headless, port 6222")
	}
	if s := services["nats"]; s.Spec.ClusterIP == corev1.ClusterIPNone || s.Spec.Ports[0].Port != 4222 {
		t.Errorf("Service nats: want a cluster IP on port 4222")
	}
	k.CheckpointEvery = "100us"
	if _, err := k.Render(); err == nil || !strings.Contains(err.Error(), "--nodes-serve has no JetStream") {
		t.Errorf("nodes serving with checkpoints: err %v, want a refusal", err)
	}
	k.CheckpointEvery, k.NATSPerNode = "", true
	if _, err := k.Render(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Errorf("nodes serving with NATS per node: err %v, want a refusal", err)
	}
}
