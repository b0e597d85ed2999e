//go:build k8sapi

package k8sapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const scenario = "examples/fattree-k8-permutation.yaml"

// render runs `lockstep deploy k8s` on the example scenario and returns
// the manifests it prints.
func render(t testing.TB, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(lockstep(t), append([]string{"deploy", "k8s", scenario}, args...)...)
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("lockstep deploy k8s %v: %v: %s", args, err, msg)
	}
	return out
}

var nsSeq struct {
	sync.Mutex
	n int
}

// namespace creates a fresh namespace for one test and waits until the
// service-account controller has made its default account (pods are
// refused without it). The test's cleanup deletes it.
func namespace(t testing.TB, prefix string) string {
	t.Helper()
	nsSeq.Lock()
	nsSeq.n++
	name := fmt.Sprintf("%s-%d-%s", prefix, nsSeq.n, randomHex(3))
	nsSeq.Unlock()
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, name)
	code, b, err := cp.do(http.MethodPost, "/api/v1/namespaces", "application/json", []byte(body))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("create namespace %s: %d %v %s", name, code, err, b)
	}
	t.Cleanup(func() {
		_, _, _ = cp.do(http.MethodDelete, "/api/v1/namespaces/"+name, "", nil)
	})
	eventually(t, "the default service account of "+name, time.Minute, func() (bool, string) {
		err := cp.get("/api/v1/namespaces/"+name+"/serviceaccounts/default", nil)
		return err == nil, fmt.Sprint(err)
	})
	return name
}

// object is what every object says of itself.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
}

// objects decodes kubectl's -o json: one object, or a List of them.
func objects(t testing.TB, out string) map[string]json.RawMessage {
	t.Helper()
	var l struct {
		object
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("kubectl -o json: %v: %.300s", err, out)
	}
	items := l.Items
	if l.Kind != "List" {
		items = []json.RawMessage{json.RawMessage(out)}
	}
	m := map[string]json.RawMessage{}
	for _, it := range items {
		var o object
		if err := json.Unmarshal(it, &o); err != nil {
			t.Fatal(err)
		}
		m[o.Kind+"/"+o.Metadata.Name] = it
	}
	return m
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func decode[T any](t testing.TB, raw json.RawMessage) *T {
	t.Helper()
	var v T
	if raw == nil {
		t.Fatalf("no %T", v)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	return &v
}

// noWarnings: the API server warns (kubectl prints "Warning: ...") on
// deprecated APIs, unknown or duplicate fields it dropped, and the like.
func noWarnings(t testing.TB, what, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "Warning") {
		t.Errorf("%s: the API server warned: %s", what, strings.TrimSpace(stderr))
	}
}

// The objects of one rendering, as the base has them.
var renderedObjects = []string{
	"ConfigMap/lockstep-run", "ConfigMap/lockstep-scenario", "Job/nodes",
	"PodDisruptionBudget/coord", "Secret/lockstep-credentials",
	"Service/coord", "Service/nats", "StatefulSet/coord", "StatefulSet/nats",
}

// perNodeObjects are those of a rendering with --nats-per-node: NATS a
// DaemonSet found by its routes' headless Service.
var perNodeObjects = []string{
	"ConfigMap/lockstep-run", "ConfigMap/lockstep-scenario", "DaemonSet/nats", "Job/nodes",
	"PodDisruptionBudget/coord", "Secret/lockstep-credentials",
	"Service/coord", "Service/nats", "Service/nats-routes", "StatefulSet/coord",
}

// servingObjects are those of a rendering with --nodes-serve: no NATS
// workload, the nodes' headless Service for their routes.
var servingObjects = []string{
	"ConfigMap/lockstep-run", "ConfigMap/lockstep-scenario", "Job/nodes",
	"PodDisruptionBudget/coord", "Secret/lockstep-credentials",
	"Service/coord", "Service/nats", "Service/nodes", "StatefulSet/coord",
}

// TestDryRun_EveryRendering renders the example for every P from 1 to 64
// with `lockstep deploy k8s` (token or --no-auth, a seed, a peer timeout
// varying with P; every fourth with --nats-per-node, every fourth from 2
// with --nodes-serve) and has the API
// server validate, default and admit all
// of it without storing it: `kubectl apply --dry-run=server` with strict
// field validation, no warning. The server's answer is checked: every
// object, the Job's P completions and its generated selector, the
// coordinators' --partitions, the Secret's token. Nothing is stored.
func TestDryRun_EveryRendering(t *testing.T) {
	ns := namespace(t, "dryrun")
	start := time.Now()
	for p := 1; p <= 64; p++ {
		args := []string{"--partitions", fmt.Sprint(p), "--run-id", fmt.Sprintf("run-%d", p), "--image", "lockstep:k8sapi"}
		noAuth := p%2 == 1
		if noAuth {
			args = append(args, "--no-auth")
		}
		if p%3 == 0 {
			args = append(args, "--seed", fmt.Sprint(1000+p))
		}
		if p%5 == 0 {
			args = append(args, "--peer-timeout", "45s")
		}
		perNode := p%4 == 0
		want := renderedObjects
		serving := p%4 == 2
		switch {
		case perNode:
			args, want = append(args, "--nats-per-node"), perNodeObjects
		case serving:
			args, want = append(args, "--nodes-serve"), servingObjects
		}
		manifests := render(t, args...)
		out, stderr, err := cp.kubectl(manifests, "apply", "--dry-run=server", "--validate=strict", "-n", ns, "-f", "-", "-o", "json")
		if err != nil {
			t.Fatalf("P=%d: %v", p, err)
		}
		noWarnings(t, fmt.Sprintf("P=%d", p), stderr)
		objs := objects(t, out)
		if got := strings.Join(keys(objs), " "); got != strings.Join(want, " ") {
			t.Fatalf("P=%d: the server returned %s, want %s", p, got, strings.Join(want, " "))
		}
		if perNode {
			svc := decode[corev1.Service](t, objs["Service/nats"])
			if tp := svc.Spec.InternalTrafficPolicy; tp == nil || *tp != corev1.ServiceInternalTrafficPolicyLocal {
				t.Errorf("P=%d: Service nats as admitted: internalTrafficPolicy %v, want Local", p, tp)
			}
			ds := decode[appsv1.DaemonSet](t, objs["DaemonSet/nats"])
			if a := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(a, "--routes nats://nats-routes:6222") {
				t.Errorf("P=%d: DaemonSet nats as admitted: args %q", p, a)
			}
		}
		job := decode[batchv1.Job](t, objs["Job/nodes"])
		if serving {
			ps := job.Spec.Template.Spec
			a := strings.Join(ps.Containers[0].Args, " ")
			if ps.Subdomain != "nodes" || !strings.Contains(a, "--serve=0.0.0.0:4222") ||
				!strings.Contains(a, fmt.Sprintf("nats://nodes-%d.nodes:6222", p-1)) || strings.Contains(a, fmt.Sprintf("nodes-%d.nodes", p)) {
				t.Errorf("P=%d: Job nodes as admitted: subdomain %q, args %q", p, ps.Subdomain, a)
			}
			svc := decode[corev1.Service](t, objs["Service/nodes"])
			if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
				t.Errorf("P=%d: Service nodes as admitted: cluster IP %q, publishes not-ready %v", p, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
			}
		}
		if job.Namespace != ns || *job.Spec.Completions != int32(p) || *job.Spec.Parallelism != int32(p) ||
			*job.Spec.CompletionMode != batchv1.IndexedCompletion || *job.Spec.BackoffLimit != 0 {
			t.Errorf("P=%d: Job as admitted: ns %s completions %d parallelism %d mode %s backoff %d", p, job.Namespace,
				*job.Spec.Completions, *job.Spec.Parallelism, *job.Spec.CompletionMode, *job.Spec.BackoffLimit)
		}
		if job.Spec.Selector == nil || job.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] == "" {
			t.Errorf("P=%d: the server generated no selector for the Job: %v", p, job.Spec.Selector)
		}
		coord := decode[appsv1.StatefulSet](t, objs["StatefulSet/coord"])
		args0 := strings.Join(coord.Spec.Template.Spec.Containers[0].Args, " ")
		if !strings.Contains(args0, fmt.Sprintf("--partitions=%d ", p)) {
			t.Errorf("P=%d: coordinator args %q", p, args0)
		}
		if seeded := strings.Contains(args0, "--seed="); seeded != (p%3 == 0) {
			t.Errorf("P=%d: coordinator args %q (seed)", p, args0)
		}
		sec := decode[corev1.Secret](t, objs["Secret/lockstep-credentials"])
		// stringData is folded into data by the server.
		if tok := string(sec.Data["nats-token"]); (tok == "") != noAuth || (!noAuth && len(tok) != 48) {
			t.Errorf("P=%d: the Secret's token %q (no-auth %v)", p, tok, noAuth)
		}
		run := decode[corev1.ConfigMap](t, objs["ConfigMap/lockstep-run"])
		if want := map[bool]string{true: "45s", false: "20s"}[p%5 == 0]; run.Data["LOCKSTEP_PEER_TIMEOUT"] != want {
			t.Errorf("P=%d: LOCKSTEP_PEER_TIMEOUT %q, want %q", p, run.Data["LOCKSTEP_PEER_TIMEOUT"], want)
		}
	}
	t.Logf("64 renderings dry-run in %.1fs", time.Since(start).Seconds())
	// A dry run stores nothing.
	for _, kind := range []string{"/apis/batch/v1/namespaces/%s/jobs", "/apis/apps/v1/namespaces/%s/statefulsets", "/api/v1/namespaces/%s/configmaps"} {
		var l struct {
			Items []object `json:"items"`
		}
		if err := cp.get(fmt.Sprintf(kind, ns), &l); err != nil {
			t.Fatal(err)
		}
		for _, o := range l.Items {
			if o.Metadata.Name != "kube-root-ca.crt" { // every namespace's, by the controller manager
				t.Errorf("stored by a dry run: %s %s", o.Kind, o.Metadata.Name)
			}
		}
	}
}

// TestDryRun_KustomizeBaseAndOverlays has the API server check the
// kustomize base and the external-nats overlay as kubectl's kustomize
// (kubectl apply -k, kubectl built from tools/k8s) renders them. The
// large overlay, which creates its own namespace, is applied for real in
// TestApply_LargeOverlayCreatesItsNamespace (a dry run cannot create the
// namespace its other objects go in).
func TestDryRun_KustomizeBaseAndOverlays(t *testing.T) {
	ns := namespace(t, "kustomize")
	for _, c := range []struct {
		dir  string
		want []string
	}{
		{"base", renderedObjects},
		{"overlays/external-nats", []string{"ConfigMap/lockstep-run", "ConfigMap/lockstep-scenario", "Job/nodes",
			"PodDisruptionBudget/coord", "Secret/lockstep-credentials", "Service/coord", "StatefulSet/coord"}},
	} {
		dir := filepath.Join(repoRoot(), "deploy", "k8s", c.dir)
		out, stderr, err := cp.kubectl(nil, "apply", "--dry-run=server", "--validate=strict", "-n", ns, "-k", dir, "-o", "json")
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		noWarnings(t, c.dir, stderr)
		objs := objects(t, out)
		if got := strings.Join(keys(objs), " "); got != strings.Join(c.want, " ") {
			t.Errorf("%s: the server returned %s, want %s", c.dir, got, strings.Join(c.want, " "))
		}
		run := decode[corev1.ConfigMap](t, objs["ConfigMap/lockstep-run"])
		t.Logf("%s: %d objects, LOCKSTEP_NATS_URL %s", c.dir, len(objs), run.Data["LOCKSTEP_NATS_URL"])
		if c.dir == "overlays/external-nats" && run.Data["LOCKSTEP_NATS_URL"] == "nats://nats:4222" {
			t.Errorf("external-nats: LOCKSTEP_NATS_URL still the in-namespace NATS")
		}
	}
}

// podsOf lists the pods of run in ns.
func podsOf(t testing.TB, ns, run string) []corev1.Pod {
	t.Helper()
	var l corev1.PodList
	if err := cp.get(fmt.Sprintf("/api/v1/namespaces/%s/pods?labelSelector=app.kubernetes.io/instance%%3D%s", ns, run), &l); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitPods waits until the controllers have made exactly the pods of a
// run of p partitions (coord-0..2, nats-0 unless noNATS, and one Job pod
// for each completion index 0..p-1, none being deleted) and returns them
// by name, Job pods as nodes-<index>.
func waitPods(t testing.TB, ns, run string, p int, noNATS bool) map[string]*corev1.Pod {
	t.Helper()
	want := []string{"coord-0", "coord-1", "coord-2"}
	if !noNATS {
		want = append(want, "nats-0")
	}
	for i := 0; i < p; i++ {
		want = append(want, fmt.Sprintf("nodes-%d", i))
	}
	sort.Strings(want)
	var got map[string]*corev1.Pod
	eventually(t, fmt.Sprintf("the pods of run %s in %s", run, ns), 2*time.Minute, func() (bool, string) {
		got = map[string]*corev1.Pod{}
		pods := podsOf(t, ns, run)
		for i := range pods {
			pd := &pods[i]
			if pd.DeletionTimestamp != nil {
				return false, pd.Name + " is being deleted"
			}
			name := pd.Name
			if ix, ok := pd.Annotations["batch.kubernetes.io/job-completion-index"]; ok {
				name = "nodes-" + ix
			}
			if _, dup := got[name]; dup {
				return false, "two pods for " + name
			}
			got[name] = pd
		}
		g := keys(got)
		return strings.Join(g, " ") == strings.Join(want, " "), fmt.Sprintf("have %v, want %v", g, want)
	})
	return got
}

func owned(refs []metav1.OwnerReference, kind, name string) bool {
	for _, o := range refs {
		if o.Controller != nil && *o.Controller && o.Kind == kind && o.Name == name {
			return true
		}
	}
	return false
}

func owner(pd *corev1.Pod) string {
	for _, o := range pd.OwnerReferences {
		if o.Controller != nil && *o.Controller {
			return o.Kind + "/" + o.Name
		}
	}
	return ""
}

// TestApply_ControllersMakeThePodsServicesSlicesAndPDB applies a
// rendering of 4 partitions for real and lets kube-controller-manager
// work: the StatefulSet controller makes coord-0..2 (all at once,
// Parallel) and nats-0 with their stable host names under the governing
// Service; the Job controller makes one pod per completion index 0..3,
// each with the index in its annotation, its label, its host name and its
// JOB_COMPLETION_INDEX (what the node reads as its partition); the
// EndpointSlice controller makes the Services' slices with their ports;
// the disruption controller computes the PDB's status. No kubelet runs
// here, so the pods stay Pending and unscheduled.
func TestApply_ControllersMakeThePodsServicesSlicesAndPDB(t *testing.T) {
	ns := namespace(t, "apply")
	const run, p = "ctl", 4
	out, stderr, err := cp.kubectl(render(t, "--partitions", fmt.Sprint(p), "--run-id", run, "--image", "lockstep:k8sapi"),
		"apply", "-n", ns, "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	noWarnings(t, "apply", stderr)
	t.Logf("kubectl apply:\n%s", strings.TrimSpace(out))
	pods := waitPods(t, ns, run, p, false)

	for i := 0; i < 3; i++ {
		pd := pods[fmt.Sprintf("coord-%d", i)]
		if owner(pd) != "StatefulSet/coord" || pd.Spec.Hostname != pd.Name || pd.Spec.Subdomain != "coord" ||
			pd.Labels["statefulset.kubernetes.io/pod-name"] != pd.Name || pd.Labels["apps.kubernetes.io/pod-index"] != fmt.Sprint(i) {
			t.Errorf("%s: owner %s, hostname %q, subdomain %q, labels %v", pd.Name, owner(pd), pd.Spec.Hostname, pd.Spec.Subdomain, pd.Labels)
		}
	}
	if pd := pods["nats-0"]; owner(pd) != "StatefulSet/nats" || pd.Spec.Subdomain != "nats" {
		t.Errorf("nats-0: owner %s, subdomain %q", owner(pd), pd.Spec.Subdomain)
	}
	for i := 0; i < p; i++ {
		pd := pods[fmt.Sprintf("nodes-%d", i)]
		ix := fmt.Sprint(i)
		if owner(pd) != "Job/nodes" || pd.Labels["batch.kubernetes.io/job-completion-index"] != ix || pd.Spec.Hostname != "nodes-"+ix {
			t.Errorf("%s: owner %s, labels %v, hostname %q", pd.Name, owner(pd), pd.Labels, pd.Spec.Hostname)
		}
		// The Job controller's env var, from the index's label (1.28 on)
		// or annotation (before).
		var fromIndex bool
		for _, e := range pd.Spec.Containers[0].Env {
			if e.Name == "JOB_COMPLETION_INDEX" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				switch e.ValueFrom.FieldRef.FieldPath {
				case "metadata.labels['batch.kubernetes.io/job-completion-index']",
					"metadata.annotations['batch.kubernetes.io/job-completion-index']":
					fromIndex = true
				}
			}
		}
		if !fromIndex {
			t.Errorf("%s: no JOB_COMPLETION_INDEX from the completion index: %+v", pd.Name, pd.Spec.Containers[0].Env)
		}
		if pd.Spec.RestartPolicy != corev1.RestartPolicyNever || pd.Status.Phase != corev1.PodPending {
			t.Errorf("%s: restart policy %s, phase %s", pd.Name, pd.Spec.RestartPolicy, pd.Status.Phase)
		}
	}
	// Every pod of the run runs lockstep:k8sapi as the rendered user,
	// with the default service account (the admission plugin's).
	for name, pd := range pods {
		c := pd.Spec.Containers[0]
		if c.Image != "lockstep:k8sapi" || pd.Spec.SecurityContext.RunAsUser == nil || *pd.Spec.SecurityContext.RunAsUser != 65532 ||
			pd.Spec.ServiceAccountName != "default" {
			t.Errorf("%s: image %s, security context %+v, service account %q", name, c.Image, pd.Spec.SecurityContext, pd.Spec.ServiceAccountName)
		}
	}

	// Services and their endpoint slices.
	var coordSvc, natsSvc corev1.Service
	if err := cp.get("/api/v1/namespaces/"+ns+"/services/coord", &coordSvc); err != nil {
		t.Fatal(err)
	}
	if err := cp.get("/api/v1/namespaces/"+ns+"/services/nats", &natsSvc); err != nil {
		t.Fatal(err)
	}
	if coordSvc.Spec.ClusterIP != corev1.ClusterIPNone || !coordSvc.Spec.PublishNotReadyAddresses {
		t.Errorf("coord: cluster IP %q, publishNotReadyAddresses %v", coordSvc.Spec.ClusterIP, coordSvc.Spec.PublishNotReadyAddresses)
	}
	_, svcNet, _ := net.ParseCIDR("10.96.0.0/16")
	if ip := net.ParseIP(natsSvc.Spec.ClusterIP); ip == nil || !svcNet.Contains(ip) {
		t.Errorf("nats: cluster IP %q, not one of --service-cluster-ip-range", natsSvc.Spec.ClusterIP)
	}
	// No pod has an address (none is scheduled), so each Service has the
	// controller's placeholder slice: no endpoints, no ports yet.
	for _, svc := range []string{"coord", "nats"} {
		eventually(t, "the endpoint slice of "+svc, time.Minute, func() (bool, string) {
			var l discoveryv1.EndpointSliceList
			if err := cp.get("/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices?labelSelector=kubernetes.io/service-name%3D"+svc, &l); err != nil {
				return false, err.Error()
			}
			if len(l.Items) != 1 {
				return false, fmt.Sprintf("%d slices", len(l.Items))
			}
			s := l.Items[0]
			_, headless := s.Labels["service.kubernetes.io/headless"]
			ok := s.AddressType == discoveryv1.AddressTypeIPv4 && len(s.Endpoints) == 0 &&
				s.Labels["endpointslice.kubernetes.io/managed-by"] == "endpointslice-controller.k8s.io" &&
				s.Labels["app.kubernetes.io/instance"] == run && headless == (svc == "coord") && owned(s.OwnerReferences, "Service", svc)
			return ok, fmt.Sprintf("type %s, labels %v, %d endpoints, owners %+v", s.AddressType, s.Labels, len(s.Endpoints), s.OwnerReferences)
		})
	}

	// The PDB: the disruption controller sees the three coordinators,
	// wants two healthy, has none (Pending) and so allows no disruption.
	eventually(t, "the PDB's status", time.Minute, func() (bool, string) {
		var pdb policyv1.PodDisruptionBudget
		if err := cp.get("/apis/policy/v1/namespaces/"+ns+"/poddisruptionbudgets/coord", &pdb); err != nil {
			return false, err.Error()
		}
		s := pdb.Status
		ok := s.ObservedGeneration == pdb.Generation && s.ExpectedPods == 3 && s.DesiredHealthy == 2 &&
			s.CurrentHealthy == 0 && s.DisruptionsAllowed == 0
		return ok, fmt.Sprintf("%+v", s)
	})

	// The workloads' own status: three coordinators, one NATS, four active
	// Job pods.
	eventually(t, "the workloads' status", time.Minute, func() (bool, string) {
		var coord, nats appsv1.StatefulSet
		var job batchv1.Job
		if err := cp.get("/apis/apps/v1/namespaces/"+ns+"/statefulsets/coord", &coord); err != nil {
			return false, err.Error()
		}
		if err := cp.get("/apis/apps/v1/namespaces/"+ns+"/statefulsets/nats", &nats); err != nil {
			return false, err.Error()
		}
		if err := cp.get("/apis/batch/v1/namespaces/"+ns+"/jobs/nodes", &job); err != nil {
			return false, err.Error()
		}
		ok := coord.Status.Replicas == 3 && nats.Status.Replicas == 1 && job.Status.Active == int32(p)
		return ok, fmt.Sprintf("coord %d, nats %d, job active %d", coord.Status.Replicas, nats.Status.Replicas, job.Status.Active)
	})
}

// TestApply_NewRunReplacesTheJob: a new run in a namespace that holds
// another. `kubectl apply` cannot do it: the StatefulSets' selectors and
// the Job's pod template name the run and are immutable, so the server
// refuses both (checked here with a server-side dry run, which changes
// nothing; a real apply would update the ConfigMaps, the Secret and the
// Services and then fail on those). `kubectl replace --force` deletes
// every object of the old run and creates the new one's: the garbage
// collector removes the old Job's and StatefulSets' pods, and the
// controllers make the new run's, with the new completion indexes.
func TestApply_NewRunReplacesTheJob(t *testing.T) {
	ns := namespace(t, "newrun")
	if _, _, err := cp.kubectl(render(t, "--partitions", "2", "--run-id", "first"), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	old := waitPods(t, ns, "first", 2, false)
	var oldJob batchv1.Job
	if err := cp.get("/apis/batch/v1/namespaces/"+ns+"/jobs/nodes", &oldJob); err != nil {
		t.Fatal(err)
	}

	second := render(t, "--partitions", "3", "--run-id", "second")
	_, _, err := cp.kubectl(second, "apply", "--dry-run=server", "-n", ns, "-f", "-")
	if err == nil {
		t.Fatal("kubectl apply of a new run over another: accepted, want the immutable fields refused")
	}
	for _, w := range []string{`StatefulSet.apps "coord" is invalid`, `StatefulSet.apps "nats" is invalid`,
		`Job.batch "nodes" is invalid: spec.template`, "field is immutable"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("kubectl apply of a new run: the error does not say %q: %.2000s", w, err)
		}
	}

	start := time.Now()
	out, stderr, err := cp.kubectl(second, "replace", "--force", "-n", ns, "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	noWarnings(t, "replace --force", stderr)
	if n := strings.Count(out, " deleted\n"); n != len(renderedObjects) {
		t.Errorf("kubectl replace --force deleted %d objects, want %d:\n%s", n, len(renderedObjects), out)
	}
	pods := waitPods(t, ns, "second", 3, false)
	eventually(t, "the first run's pods gone", time.Minute, func() (bool, string) {
		var left []string
		for _, pd := range podsOf(t, ns, "first") {
			left = append(left, pd.Name)
		}
		return len(left) == 0, fmt.Sprint(left)
	})
	t.Logf("replaced in %.1fs: %v", time.Since(start).Seconds(), keys(pods))
	var job batchv1.Job
	if err := cp.get("/apis/batch/v1/namespaces/"+ns+"/jobs/nodes", &job); err != nil {
		t.Fatal(err)
	}
	if job.UID == oldJob.UID || *job.Spec.Completions != 3 || job.Labels["app.kubernetes.io/instance"] != "second" {
		t.Errorf("the Job after the new run: uid %s (old %s), completions %d, labels %v", job.UID, oldJob.UID, *job.Spec.Completions, job.Labels)
	}
	for name, pd := range pods {
		if o, ok := old[name]; ok && o.UID == pd.UID {
			t.Errorf("%s is the first run's pod", name)
		}
	}
	var run corev1.ConfigMap
	if err := cp.get("/api/v1/namespaces/"+ns+"/configmaps/lockstep-run", &run); err != nil {
		t.Fatal(err)
	}
	if run.Data["LOCKSTEP_RUN"] != "second" {
		t.Errorf("LOCKSTEP_RUN %q after the new run", run.Data["LOCKSTEP_RUN"])
	}
}

// TestApply_Overlays applies the kustomize base and the external-nats
// overlay (each in a namespace of its own) and the large overlay (which
// brings its namespace, lockstep, as its first object) for real, and
// waits for the controllers to make each one's pods; the large overlay's
// node pods ask for 4 CPUs and 8 GiB, its coordinators for 1 CPU.
func TestApply_Overlays(t *testing.T) {
	if code, _, err := cp.do(http.MethodGet, "/api/v1/namespaces/lockstep", "", nil); err != nil || code != http.StatusNotFound {
		t.Fatalf("namespace lockstep before the large overlay: %d %v, want 404", code, err)
	}
	t.Cleanup(func() { _, _, _ = cp.do(http.MethodDelete, "/api/v1/namespaces/lockstep", "", nil) })
	// A server-side dry run of the large overlay before its namespace
	// exists: what Kubernetes answers (the Namespace is only dry-run
	// created, so the objects in it have nowhere to go), for docs/deploy.md.
	_, _, err := cp.kubectl(nil, "apply", "--dry-run=server", "-k", filepath.Join(repoRoot(), "deploy", "k8s", "overlays", "large"))
	t.Logf("large, dry run before its namespace exists: %v", err)
	for _, c := range []struct {
		dir    string
		ns     string
		noNATS bool
	}{
		{"base", namespace(t, "base"), false},
		{"overlays/external-nats", namespace(t, "external-nats"), true},
		{"overlays/large", "", false},
	} {
		dir := filepath.Join(repoRoot(), "deploy", "k8s", c.dir)
		args := []string{"apply", "-k", dir}
		ns := c.ns
		if ns != "" {
			args = append(args, "-n", ns)
		} else {
			ns = "lockstep"
		}
		out, stderr, err := cp.kubectl(nil, args...)
		if err != nil {
			t.Fatalf("%s: %v", c.dir, err)
		}
		noWarnings(t, c.dir, stderr)
		if c.dir == "overlays/large" && !strings.HasPrefix(out, "namespace/lockstep created\n") {
			t.Errorf("large: the namespace is not applied first:\n%s", out)
		}
		pods := waitPods(t, ns, "example", 4, c.noNATS)
		t.Logf("%s: %d pods in %s", c.dir, len(pods), ns)
		if c.dir == "overlays/large" {
			for name, pd := range pods {
				r := pd.Spec.Containers[0].Resources.Requests
				cpu, mem := r.Cpu().String(), r.Memory().String()
				switch {
				case strings.HasPrefix(name, "nodes-") && (cpu != "4" || mem != "8Gi"),
					strings.HasPrefix(name, "coord-") && (cpu != "1" || mem != "512Mi"):
					t.Errorf("large: %s requests cpu %s memory %s", name, cpu, mem)
				}
			}
			// Now that the namespace is there, a server-side dry run of the
			// overlay passes too (before, its objects had no namespace to go
			// in: a dry run creates nothing).
			if _, stderr, err := cp.kubectl(nil, "apply", "--dry-run=server", "--validate=strict", "-k", dir); err != nil {
				t.Errorf("large, dry run once applied: %v", err)
			} else {
				noWarnings(t, "large (dry run)", stderr)
			}
		}
	}
}
