//go:build cluster

package cluster

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-sim/lockstep/deploy"
	"github.com/lockstep-sim/lockstep/deploy/internal/k8sobj"
)

// pod is one pod of the rendered manifests, as the kubelet would run it.
type pod struct {
	name    string
	labels  map[string]string
	spec    corev1.PodSpec
	subdom  string // the StatefulSet's governing Service
	index   int    // the Job completion index, or -1
	aliases []string
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand is Kubernetes's $(VAR) expansion in args and env values.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func selects(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// TestK8s_PodsAsRenderedRunAsContainers renders the manifests of a run
// (lockstep deploy k8s), decodes them into the k8s.io/api types, and runs
// every pod they describe — the NATS StatefulSet's, the three
// coordinators', the Indexed Job's four — as a container exactly as
// rendered: image, args with $(VAR) expanded, env from the ConfigMaps,
// the Secret and the downward API (pod name, pod IP), the Job's
// completion index, the ConfigMap volume, the DNS names the Services give
// (nats, coord-0.coord ...), the user. The run must be byte-identical to
// one process, and each pod's readiness probe must pass while it runs.
// Then the same with --nodes-serve (no NATS pod: the nodes serve, routed
// to each other by the names nodes-I.nodes their subdomain gives them, and
// the nats Service is theirs).
func TestK8s_PodsAsRenderedRunAsContainers(t *testing.T) {
	text := longYAML(t)
	file := scenarioFile(t, text)
	ref := reference(t, file)
	t.Run("nats-statefulset", func(t *testing.T) { podsAsRendered(t, text, file, ref, false) })
	t.Run("nodes-serve", func(t *testing.T) { podsAsRendered(t, text, file, ref, true) })
}

// podsAsRendered runs the pods of one rendering of text (in file; ref the
// one-process outputs) as containers; serve renders with NodesServe.
func podsAsRendered(t *testing.T, text, file, ref string, serve bool) {
	e := newEnvSubnet(t)
	run := "k" + e.id
	token := newToken(t) // what lockstep deploy k8s puts in the Secret
	files, err := deploy.K8s{Scenario: text, ScenarioName: "scenario.yaml", Partitions: 4, Image: e.image, Run: run,
		Token: token, NodesServe: serve}.Render()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := k8sobj.DecodeAll(files.Stream())
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]map[string]string{}
	secrets := map[string]map[string]string{}
	var services []*corev1.Service
	var pods []*pod
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			configs[o.Name] = o.Data
		case *corev1.Secret:
			m := map[string]string{}
			for k, v := range o.Data {
				m[k] = string(v)
			}
			for k, v := range o.StringData {
				m[k] = v
			}
			secrets[o.Name] = m
		case *corev1.Service:
			services = append(services, o)
		case *appsv1.StatefulSet:
			for i := 0; i < int(*o.Spec.Replicas); i++ {
				pods = append(pods, &pod{name: fmt.Sprintf("%s-%d", o.Name, i), labels: o.Spec.Template.Labels,
					spec: o.Spec.Template.Spec, subdom: o.Spec.ServiceName, index: -1})
			}
		case *batchv1.Job:
			if o.Spec.CompletionMode == nil || *o.Spec.CompletionMode != batchv1.IndexedCompletion {
				t.Fatalf("job %s is not Indexed", o.Name)
			}
			for i := 0; i < int(*o.Spec.Completions); i++ {
				// Host name <job>-<index>, under the pod's subdomain if
				// it has one (the Job controller's and CoreDNS's way).
				pods = append(pods, &pod{name: fmt.Sprintf("%s-%d", o.Name, i), labels: o.Spec.Template.Labels,
					spec: o.Spec.Template.Spec, subdom: o.Spec.Template.Spec.Subdomain, index: i})
			}
		}
	}
	// DNS: a pod's own name, <pod>.<governing service> for a StatefulSet's,
	// and every non-headless Service that selects it.
	var natsPod string
	for _, p := range pods {
		p.aliases = []string{p.name}
		if p.subdom != "" {
			p.aliases = append(p.aliases, p.name+"."+p.subdom)
		}
		for _, s := range services {
			if s.Spec.ClusterIP != corev1.ClusterIPNone && selects(s.Spec.Selector, p.labels) {
				p.aliases = append(p.aliases, s.Name)
				if s.Name == "nats" && natsPod == "" {
					natsPod = p.name // the one port-forward reaches
				}
			}
		}
	}
	if natsPod == "" {
		t.Fatal("no pod behind the nats Service")
	}
	if serve != (natsPod == "nodes-0") {
		t.Fatalf("the nats Service's first pod is %s (nodes serving: %v)", natsPod, serve)
	}
	subnet := mustDocker(t, "network", "inspect", "--format", "{{(index .IPAM.Config 0).Subnet}}", e.net)
	_, ipnet, err := net.ParseCIDR(subnet)
	if err != nil {
		t.Fatalf("subnet %q: %v", subnet, err)
	}
	port := freePort(t)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	vols := t.TempDir()
	ips := map[string]string{}
	start := func(p *pod, k int) {
		ip := make(net.IP, 4)
		copy(ip, ipnet.IP.To4())
		ip[3] += byte(10 + k)
		ips[p.name] = ip.String()
		if len(p.spec.Containers) != 1 {
			t.Fatalf("%s: %d containers", p.name, len(p.spec.Containers))
		}
		c := p.spec.Containers[0]
		env := map[string]string{}
		var order []string
		set := func(k, v string) {
			if _, ok := env[k]; !ok {
				order = append(order, k)
			}
			env[k] = v
		}
		if p.index >= 0 {
			set("JOB_COMPLETION_INDEX", fmt.Sprint(p.index))
		}
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef == nil {
				t.Fatalf("%s: envFrom other than a ConfigMap", p.name)
			}
			cm, ok := configs[ef.ConfigMapRef.Name]
			if !ok {
				t.Fatalf("%s: no ConfigMap %s", p.name, ef.ConfigMapRef.Name)
			}
			keys := make([]string, 0, len(cm))
			for k := range cm {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				set(k, cm[k])
			}
		}
		for _, ev := range c.Env {
			switch {
			case ev.ValueFrom == nil:
				set(ev.Name, expand(ev.Value, env))
			case ev.ValueFrom.FieldRef != nil:
				switch ev.ValueFrom.FieldRef.FieldPath {
				case "metadata.name":
					set(ev.Name, p.name)
				case "status.podIP":
					set(ev.Name, ip.String())
				default:
					t.Fatalf("%s: fieldRef %s", p.name, ev.ValueFrom.FieldRef.FieldPath)
				}
			case ev.ValueFrom.SecretKeyRef != nil:
				r := ev.ValueFrom.SecretKeyRef
				v, ok := secrets[r.Name][r.Key]
				if !ok && (r.Optional == nil || !*r.Optional) {
					t.Fatalf("%s: secret %s/%s missing", p.name, r.Name, r.Key)
				}
				if ok {
					set(ev.Name, v)
				}
			default:
				t.Fatalf("%s: env %s from an unsupported source", p.name, ev.Name)
			}
		}
		// The environment goes in an env file (0600), as the kubelet puts
		// it in the container's environment: the Secret's token shows in
		// no argv, on the host or in the container.
		var envText strings.Builder
		for _, k := range order {
			if strings.ContainsAny(env[k], "\n\r") {
				t.Fatalf("%s: env %s has a line break", p.name, k)
			}
			fmt.Fprintf(&envText, "%s=%s\n", k, env[k])
		}
		envFile := filepath.Join(t.TempDir(), p.name+".env")
		if err := os.WriteFile(envFile, []byte(envText.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := []string{"--env-file", envFile}
		if sc := p.spec.SecurityContext; sc != nil && sc.RunAsUser != nil {
			opts = append(opts, "--user", fmt.Sprint(*sc.RunAsUser))
		}
		for _, vm := range c.VolumeMounts {
			var v *corev1.Volume
			for i := range p.spec.Volumes {
				if p.spec.Volumes[i].Name == vm.Name {
					v = &p.spec.Volumes[i]
				}
			}
			switch {
			case v == nil:
				t.Fatalf("%s: no volume %s", p.name, vm.Name)
			case v.ConfigMap != nil:
				dir := filepath.Join(vols, p.name+"-"+vm.Name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				_ = os.Chmod(vols, 0o755)
				for k, val := range configs[v.ConfigMap.Name] {
					if err := os.WriteFile(filepath.Join(dir, k), []byte(val), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				mode := "rw"
				if vm.ReadOnly {
					mode = "ro"
				}
				opts = append(opts, "-v", dir+":"+vm.MountPath+":"+mode)
			case v.EmptyDir != nil:
				opts = append(opts, "--tmpfs", vm.MountPath+":rw,mode=1777")
			default:
				t.Fatalf("%s: volume %s of an unsupported kind", p.name, vm.Name)
			}
		}
		if p.name == natsPod {
			// What kubectl port-forward svc/nats gives the launcher.
			opts = append(opts, "-p", fmt.Sprintf("127.0.0.1:%d:4222", port))
		}
		if c.Image != e.image {
			t.Fatalf("%s: image %s, want %s", p.name, c.Image, e.image)
		}
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = expand(a, env)
		}
		if len(c.Command) > 0 {
			t.Fatalf("%s: command set; the image's entrypoint is /lockstep", p.name)
		}
		e.run(container{member: p.name, aliases: p.aliases, ip: ip.String(), opts: opts, args: args})
	}
	k := 0
	for _, p := range pods {
		if p.name == natsPod {
			start(p, k)
			k++
		}
	}
	waitNATS(t, natsURL, token)
	refusesAnonymous(t, natsURL)
	l := startLauncher(t, file, natsURL, run, token, 4)
	defer func() {
		if t.Failed() {
			t.Logf("launcher:\n%s", l.stderr.String())
			for _, p := range pods {
				t.Logf("%s:\n%s", p.name, e.logs(p.name))
			}
		}
	}()
	for _, p := range pods {
		if p.name != natsPod {
			start(p, k)
			k++
		}
	}
	// The readiness probes, as the kubelet would call them (the pods'
	// addresses are on the test's network, reachable from this host).
	ready := map[string]bool{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(ready) < len(pods) && time.Now().Before(deadline) {
		for _, p := range pods {
			pr := p.spec.Containers[0].ReadinessProbe
			if ready[p.name] || pr == nil || pr.HTTPGet == nil {
				continue
			}
			cl := http.Client{Timeout: 500 * time.Millisecond}
			r, err := cl.Get(fmt.Sprintf("http://%s:%d%s", ips[p.name], pr.HTTPGet.Port.IntValue(), pr.HTTPGet.Path))
			if err == nil {
				r.Body.Close()
				if r.StatusCode == http.StatusOK {
					ready[p.name] = true
				}
			}
		}
		select {
		case <-l.done:
			deadline = time.Now() // the run is over: stop probing
		case <-time.After(100 * time.Millisecond): // the probes' period
		}
	}
	var notReady []string
	for _, p := range pods {
		if !ready[p.name] {
			notReady = append(notReady, p.name)
		}
	}
	if len(notReady) > 0 {
		t.Errorf("never ready while the run ran: %v", notReady)
	}
	if code := l.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("launcher exit %d:\n%s", code, l.stderr.String())
	}
	sameOutputs(t, ref, l.out)
	var names []string
	for _, p := range pods {
		names = append(names, p.name+"("+strings.Join(p.aliases[1:], ",")+")")
	}
	t.Logf("pods run as rendered: %s; ready: %d of %d", strings.Join(names, " "), len(ready), len(pods))
}
