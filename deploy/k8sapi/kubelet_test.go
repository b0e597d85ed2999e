//go:build k8sapi

package k8sapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/lockstep-sim/lockstep/deploy/image"
)

// The node's names and addresses: the pods' bridge and its /24.
const (
	nodeName     = "k8sapi-node"
	podBridge    = "k8sapi0"
	podSubnet    = "10.244.0.0/24"
	podGateway   = "10.244.0.1"
	serviceRange = "10.96.0.0/16" // the API server's --service-cluster-ip-range
	pauseImage   = "docker.io/library/lockstep-pause:k8sapi"
)

// node is a worker: containerd (Debian's, with its CRI plugin, a root,
// state and socket of its own), the pods' CNI bridge, kube-scheduler and
// a kubelet.
type node struct {
	group
	sock        string          // containerd's
	netnsBefore map[string]bool // the named network namespaces before it started
	kubeProxy   string
	proxied     bool              // kube-proxy ran: its rules are to be cleaned up
	namespaces  []string          // the tests' namespaces, whose pod logs go at the end
	sysctls     map[string]string // hostSysctls before it started
}

// hostSysctls are the host's settings the worker's components change: the
// kubelet's kernel tunables (it sets vm.overcommit_memory=1,
// kernel.panic=10, kernel.panic_on_oops=1 ...), kube-proxy's conntrack
// and route_localnet ones (left alone by its flags here, checked all the
// same), the CNI bridge's ip_forward. cleanup puts back what they were.
var hostSysctls = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait", "net/netfilter/nf_conntrack_tcp_be_liberal",
	"net/netfilter/nf_conntrack_udp_timeout", "net/netfilter/nf_conntrack_udp_timeout_stream",
	"net/ipv4/conf/all/route_localnet", "net/ipv4/ip_forward",
}

func readSysctls() map[string]string {
	m := map[string]string{}
	for _, k := range hostSysctls {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			m[k] = strings.TrimSpace(string(b))
		}
	}
	return m
}

// restoreSysctls writes back every setting that changed since before.
func restoreSysctls(t *testing.T, before map[string]string) {
	now := readSysctls()
	for k, v := range before {
		if now[k] == v {
			continue
		}
		t.Logf("sysctl %s: %s while the node ran, %s before: restored", strings.ReplaceAll(k, "/", "."), now[k], v)
		if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v+"\n"), 0o644); err != nil {
			t.Errorf("restore sysctl %s: %v", k, err)
		}
	}
}

// pauseSource is the pods' sandbox process (the pause image: none can be
// pulled here): it waits for SIGTERM or SIGINT.
const pauseSource = `package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
	<-c
}
`

// startNode starts the worker and the services a pod expects of a
// cluster; the test's cleanup stops them and removes whatever they left
// (pods, shims, mounts, network namespaces, iptables rules, the bridge).
func startNode(t *testing.T) *node {
	t.Helper()
	for _, b := range []string{"containerd", "ctr", "runc", "iptables", "ip", "/usr/lib/cni/bridge",
		"/usr/lib/cni/host-local", "/usr/lib/cni/loopback", "/usr/lib/cni/portmap"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s: %v (make deps-k8s installs containerd, iptables and the CNI plugins)", b, err)
		}
	}
	bins := map[string]string{}
	for _, b := range []string{"kube-scheduler", "kubelet", "kube-proxy", "coredns"} {
		p, err := k8sBin(b)
		if err != nil {
			t.Fatal(err)
		}
		bins[b] = p
	}
	if _, err := os.Stat("/sys/class/net/" + podBridge); err == nil {
		t.Fatalf("the bridge %s exists already: another run of this test?", podBridge)
	}
	// Pod to Service to pod on one bridge needs the bridged replies to pass
	// conntrack (kube-proxy's DNAT undone): br_netfilter's default, which
	// the test checks rather than sets.
	if b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Fatalf("net.bridge.bridge-nf-call-iptables is %q (%v): the pods' Services need 1 (br_netfilter)", strings.TrimSpace(string(b)), err)
	}
	if cs := kubeChains(); len(cs) > 0 {
		t.Fatalf("iptables has KUBE- or CNI- chains already (another kubelet, kube-proxy or CNI on this machine?): %v", cs)
	}
	// t.TempDir's removal runs after n.cleanup (registered later), which
	// unmounts what the kubelet and containerd left in it.
	dir := t.TempDir()
	n := &node{group: group{dir: dir}, sock: filepath.Join(dir, "containerd", "containerd.sock"),
		netnsBefore: netnsNames(), kubeProxy: bins["kube-proxy"], sysctls: readSysctls()}
	cp.extra = append(cp.extra, &n.group)
	t.Cleanup(func() { n.cleanup(t) })

	// The pods' bridge, made here (not by the CNI plugin at the first pod)
	// so that CoreDNS can bind its gateway address first.
	for _, args := range [][]string{
		{"link", "add", podBridge, "type", "bridge"},
		{"addr", "add", podGateway + "/24", "dev", podBridge},
		{"link", "set", podBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}

	// containerd with CRI: its own root, state and socket; no TCP
	// listener but the CRI streaming server on 127.0.0.1; the pause image
	// below as the sandbox; cgroupfs, as the kubelet.
	cni := filepath.Join(dir, "cni")
	must(t, os.MkdirAll(cni, 0o755))
	conf := fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = ""
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[4]q
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # The sandbox's -998 and the kubelet's other adjustments below this
  # process's own are refused here (EACCES: no CAP_SYS_RESOURCE in this
  # VM): bound them by containerd's.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[5]q
`, filepath.Join(dir, "containerd", "root"), filepath.Join(dir, "containerd", "state"), n.sock, pauseImage, cni)
	must(t, os.WriteFile(filepath.Join(dir, "containerd.toml"), []byte(conf), 0o644))
	// The pods' network: the bridge above, host-local addresses, a route
	// to the Services' range through the host (kube-proxy's rules), no
	// default route and no masquerade: nothing leaves the machine. The
	// firewall plugin accepts the pods' traffic in FORWARD, whose policy
	// Docker sets to DROP (bridged traffic goes through it too, with
	// net.bridge.bridge-nf-call-iptables on).
	cniConf := fmt.Sprintf(`{"cniVersion": "0.4.0", "name": "k8sapi", "plugins": [
  {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": %q, "gateway": %q}]], "routes": [{"dst": %q}], "dataDir": %q}},
  {"type": "firewall", "backend": "iptables"},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
`, podBridge, podSubnet, podGateway, serviceRange, filepath.Join(dir, "ipam"))
	must(t, os.WriteFile(filepath.Join(cni, "10-k8sapi.conflist"), []byte(cniConf), 0o644))
	must(t, n.spawn("containerd", "containerd", "--config", filepath.Join(dir, "containerd.toml")))
	eventually(t, "containerd", 30*time.Second, func() (bool, string) {
		out, err := exec.Command("ctr", "-a", n.sock, "version").CombinedOutput()
		return err == nil, string(out)
	})

	// The images: lockstep's (as make image builds it) and the pause.
	for _, im := range []struct{ tag, bin string }{
		{"lockstep:k8sapi", staticLockstep(t)},
		{"lockstep-pause:k8sapi", pauseBinary(t, dir)},
	} {
		b, err := os.ReadFile(im.bin)
		must(t, err)
		built, err := image.Build(image.Spec{Binary: b, Tag: im.tag})
		must(t, err)
		tar := filepath.Join(dir, strings.ReplaceAll(im.tag, ":", "_")+".tar")
		must(t, os.WriteFile(tar, built.Archive, 0o644))
		if out, err := exec.Command("ctr", "-a", n.sock, "-n", "k8s.io", "images", "import", tar).CombinedOutput(); err != nil {
			t.Fatalf("ctr images import %s: %v: %s", im.tag, err, out)
		}
	}

	kubeconfig := func(user string) string {
		p := filepath.Join(dir, strings.ReplaceAll(user, ":", "-")+".kubeconfig")
		must(t, cp.writeKubeconfig(p, user, cp.tokens[user]))
		return p
	}
	// kube-scheduler, serving nothing.
	must(t, n.spawn("kube-scheduler", bins["kube-scheduler"], "--kubeconfig="+kubeconfig("system:kube-scheduler"),
		"--secure-port=0", "--profiling=false"))

	// CoreDNS: the cluster's DNS (Services, headless Services' pods),
	// reading the API server as system:coredns (the role kubeadm gives
	// it), answering on the bridge's gateway, which only the pods reach.
	if _, _, err := cp.kubectl([]byte(corednsRBAC), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	corefile := fmt.Sprintf(`cluster.local:53 {
    bind %s
    errors
    kubernetes cluster.local {
        kubeconfig %s k8sapi
    }
}
`, podGateway, kubeconfig("system:coredns"))
	must(t, os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644))
	must(t, n.spawn("coredns", bins["coredns"], "-conf", filepath.Join(dir, "Corefile")))
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(podGateway, "53"))
	}}
	eventually(t, "CoreDNS answering for kubernetes.default", time.Minute, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		ips, err := res.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
		return err == nil && len(ips) == 1 && ips[0] == "10.96.0.1", fmt.Sprint(ips, err)
	})

	// kube-proxy (iptables): the Services' cluster IPs. It leaves the
	// host's sysctls alone (no conntrack limits, no route_localnet) and
	// serves its health and metrics on 127.0.0.1; cleanup runs
	// kube-proxy --cleanup.
	pp, err := freePorts(2)
	must(t, err)
	must(t, n.spawn("kube-proxy", bins["kube-proxy"], "--kubeconfig="+kubeconfig("system:kube-proxy"),
		"--hostname-override="+nodeName, "--proxy-mode=iptables", "--cluster-cidr="+podSubnet,
		"--iptables-localhost-nodeports=false", "--conntrack-max-per-core=0",
		"--conntrack-tcp-timeout-established=0", "--conntrack-tcp-timeout-close-wait=0",
		fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", pp[0]), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", pp[1]),
		"--profiling=false"))
	n.proxied = true

	// The kubelet: its API on 127.0.0.1 (webhook authentication and
	// authorisation against the API server), no read-only port, no
	// healthz port, cgroupfs without per-QoS cgroups (nothing left in the
	// host's hierarchy), eviction only when the disk is all but full,
	// CoreDNS as the pods' DNS.
	ports, err := freePorts(1)
	must(t, err)
	kcfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
evictionHard: {memory.available: 100Mi, nodefs.available: 1%%, imagefs.available: 1%%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: /etc/resolv.conf
serializeImagePulls: false
registerNode: true
`, ports[0], filepath.Join(cp.dir, "pki", "ca.crt"), n.sock, n.sock, podGateway)
	must(t, os.WriteFile(filepath.Join(dir, "kubelet.yaml"), []byte(kcfg), 0o644))
	must(t, n.spawn("kubelet", bins["kubelet"], "--config="+filepath.Join(dir, "kubelet.yaml"),
		"--kubeconfig="+kubeconfig("system:node:"+nodeName), "--root-dir="+filepath.Join(dir, "kubelet"),
		"--cert-dir="+filepath.Join(dir, "kubelet-pki"), "--hostname-override="+nodeName))
	eventually(t, "the node "+nodeName+" Ready", 2*time.Minute, func() (bool, string) {
		var nd corev1.Node
		if err := cp.get("/api/v1/nodes/"+nodeName, &nd); err != nil {
			return false, err.Error()
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
			}
		}
		return false, "no Ready condition"
	})
	eventually(t, "kube-proxy's rules", time.Minute, func() (bool, string) {
		out, err := exec.Command("iptables", "-t", "nat", "-S", "KUBE-SERVICES").CombinedOutput()
		return err == nil, string(out)
	})
	return n
}

// corednsRBAC is what CoreDNS may read (kubeadm's system:coredns role).
const corednsRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: system:coredns
rules:
  - apiGroups: [""]
    resources: [endpoints, services, pods, namespaces]
    verbs: [list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: system:coredns
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:coredns
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: system:coredns
`

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// staticLockstep is lockstep built as make image builds it.
func staticLockstep(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(cp.dir, "lockstep-static")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, "./cmd/lockstep")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return bin
}

// pauseBinary builds pauseSource.
func pauseBinary(t testing.TB, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "pause-src")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "main.go"), []byte(pauseSource), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module pause\n\ngo 1.26\n"), 0o644))
	bin := filepath.Join(dir, "pause")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build pause: %v: %s", err, out)
	}
	return bin
}

// cleanup stops the worker and removes what it left: every container
// still running (the test deletes its pods first; this is for a failure),
// the processes, every shim of this containerd (found by its socket in
// their command line), kube-proxy's iptables rules, the mounts under its
// directory, the network namespaces made since it started, the host's
// settings it changed, the bridge, the pods' log directories (t.TempDir
// then removes the directory).
func (n *node) cleanup(t *testing.T) {
	if t.Failed() {
		n.dumpLogs(os.Stderr)
		for _, ns := range n.namespaces {
			logs, _ := filepath.Glob(filepath.Join("/var/log/pods", ns+"_*", "*", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
				if len(lines) > 15 {
					lines = lines[len(lines)-15:]
				}
				fmt.Fprintf(os.Stderr, "--- pod log %s\n%s\n", l, strings.Join(lines, "\n"))
			}
		}
	}
	for i, g := range cp.extra {
		if g == &n.group {
			cp.extra = append(cp.extra[:i], cp.extra[i+1:]...)
			break
		}
	}
	// The kubelet first, so that it restarts nothing it sees killed.
	for _, p := range n.procs {
		if p.name == "kubelet" {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.done
			}
		}
	}
	// Containers still there (the test failed before deleting its pods):
	// killed, waited for, deleted through containerd, so that their
	// shims reap them.
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command("ctr", append([]string{"-a", n.sock, "-n", "k8s.io", "tasks"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := ctr("ls", "-q"); err == nil && strings.TrimSpace(out) != "" {
		ids := strings.Fields(out)
		for _, id := range ids {
			t.Logf("container %s still there: killed", id)
			_, _ = ctr("kill", "-s", "SIGKILL", id)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, _ := ctr("ls")
			if !strings.Contains(out, "RUNNING") || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // polling containerd against the deadline
		}
		for _, id := range ids {
			_, _ = ctr("delete", "-f", id) // gone already if its sandbox went first
		}
	}
	if err := n.stop(); err != nil && !strings.Contains(err.Error(), "kubelet exited before the end") {
		t.Error(err)
	}
	// A shim left (containerd could not delete its task): its processes,
	// then itself.
	if ss := shims(n.sock); len(ss) > 0 {
		for _, pid := range append(descendants(ss), ss...) {
			t.Logf("killing %d, a shim or its child", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if n.proxied {
		// Its own cleanup (which also tries IPVS's ipsets, absent here, and
		// so exits 1), then whatever KUBE- chain it or the kubelet left.
		_ = exec.Command(n.kubeProxy, "--cleanup").Run()
	}
	if err := removeKubeChains(); err != nil {
		t.Error(err)
	}
	for _, m := range mountsUnder(n.dir) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", m, err)
		}
	}
	t.Logf("network namespaces: %d before, %d now", len(n.netnsBefore), len(netnsNames()))
	for ns := range netnsNames() {
		if !n.netnsBefore[ns] {
			if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
				t.Logf("ip netns delete %s: %v: %s", ns, err, out)
			}
		}
	}
	restoreSysctls(t, n.sysctls)
	if out, err := exec.Command("ip", "link", "delete", podBridge).CombinedOutput(); err != nil {
		t.Logf("ip link delete %s: %v: %s", podBridge, err, out)
	}
	for _, ns := range n.namespaces {
		logs, _ := filepath.Glob(filepath.Join("/var/log/pods", ns+"_*"))
		links, _ := filepath.Glob(filepath.Join("/var/log/containers", "*_"+ns+"_*"))
		for _, p := range append(logs, links...) {
			_ = os.RemoveAll(p)
		}
	}
}

// iptablesTables are where the kubelet and kube-proxy put rules.
var iptablesTables = []string{"filter", "nat", "mangle"}

// ourChains are the chain prefixes the kubelet, kube-proxy and the CNI
// firewall plugin create.
var ourChains = []string{"KUBE-", "CNI-"}

func ours(chain string) bool {
	for _, p := range ourChains {
		if strings.HasPrefix(chain, p) {
			return true
		}
	}
	return false
}

// kubeChains are the KUBE- and CNI- chains in the host's iptables and
// ip6tables.
func kubeChains() []string {
	var cs []string
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, tbl := range iptablesTables {
			out, _ := exec.Command(bin, "-t", tbl, "-S").Output()
			for _, l := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(l, "-N ") && ours(strings.TrimPrefix(l, "-N ")) {
					cs = append(cs, bin+" "+tbl+" "+strings.TrimPrefix(l, "-N "))
				}
			}
		}
	}
	return cs
}

// removeKubeChains deletes the rules of the other chains that jump to a
// KUBE- or CNI- chain, then flushes and deletes those (startNode checked
// that there was none before).
func removeKubeChains() error {
	for _, bin := range []string{"iptables", "ip6tables"} {
		for _, tbl := range iptablesTables {
			out, err := exec.Command(bin, "-t", tbl, "-S").Output()
			if err != nil {
				continue // no such table here
			}
			var chains []string
			for _, l := range strings.Split(string(out), "\n") {
				f := shellFields(l)
				switch {
				case len(f) == 2 && f[0] == "-N" && ours(f[1]):
					chains = append(chains, f[1])
				case len(f) > 2 && f[0] == "-A" && !ours(f[1]) && jumpsToOurs(f):
					f[0] = "-D"
					if b, err := exec.Command(bin, append([]string{"-t", tbl}, f...)...).CombinedOutput(); err != nil {
						return fmt.Errorf("%s -t %s %v: %v: %s", bin, tbl, f, err, b)
					}
				}
			}
			for _, op := range []string{"-F", "-X"} {
				for _, c := range chains {
					if b, err := exec.Command(bin, "-t", tbl, op, c).CombinedOutput(); err != nil {
						return fmt.Errorf("%s -t %s %s %s: %v: %s", bin, tbl, op, c, err, b)
					}
				}
			}
		}
	}
	if left := kubeChains(); len(left) > 0 {
		return fmt.Errorf("iptables chains left: %v", left)
	}
	return nil
}

func jumpsToOurs(f []string) bool {
	for i := 0; i+1 < len(f); i++ {
		if (f[i] == "-j" || f[i] == "-g") && ours(f[i+1]) {
			return true
		}
	}
	return false
}

// shellFields splits an iptables -S line into its arguments ("..." quoted
// comments one argument).
func shellFields(l string) []string {
	var f []string
	var cur strings.Builder
	in, tok := false, false
	for _, r := range l {
		switch {
		case r == '"':
			in, tok = !in, true
		case r == ' ' && !in:
			if tok {
				f = append(f, cur.String())
			}
			cur.Reset()
			tok = false
		default:
			cur.WriteRune(r)
			tok = true
		}
	}
	if tok {
		f = append(f, cur.String())
	}
	return f
}

// netnsNames are the named network namespaces (containerd's CRI pins its
// pods' under /var/run/netns).
func netnsNames() map[string]bool {
	m := map[string]bool{}
	ents, _ := os.ReadDir("/var/run/netns")
	for _, e := range ents {
		m[e.Name()] = true
	}
	return m
}

// shims are the processes whose command line names sock: containerd's
// shims for our containers.
func shims(sock string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && strings.Contains(args[0], "containerd-shim") && strings.Contains(string(b), sock) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// descendants are the processes below the given ones, children first.
func descendants(roots []int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				children[ppid] = append(children[ppid], pid)
			}
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			walk(c)
			out = append(out, c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// mountsUnder are the mount points under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) > 4 && strings.HasPrefix(fl[4], dir+"/") {
			ms = append(ms, fl[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(ms)))
	return ms
}

// TestKubelet_RunMatchesOneProcess runs a rendering of 2 partitions for
// real: kube-scheduler places the pods on the node, the kubelet runs them
// in containerd from the images imported here, CoreDNS gives them the
// Services' names (nats, coord-I.coord) and kube-proxy the nats Service's
// cluster IP; the launcher on the host collects through the NATS pod's
// address, as `kubectl port-forward svc/nats` would give it. The outputs
// must be byte-identical to one process; every pod must become ready (the
// readiness probes the kubelet runs), the coordinators' headless Service
// must list the three by host name, and the Job must complete.
func TestKubelet_RunMatchesOneProcess(t *testing.T) {
	n := startNode(t)
	// The node's processes listen on loopback too, but CoreDNS, which
	// answers the pods on their bridge's gateway (no route leads there
	// from off the machine).
	for _, pr := range n.procs {
		socks, err := listeners(pr.cmd.Process.Pid)
		must(t, err)
		for _, s := range socks {
			if !s.ip.IsLoopback() && !(pr.name == "coredns" && s.ip.String() == podGateway && s.port == 53) {
				t.Errorf("%s listens on %s", pr.name, s)
			}
		}
		t.Logf("%s: %v", pr.name, socks)
	}
	ns := namespace(t, "kubelet")
	n.namespaces = append(n.namespaces, ns)
	const run, p = "kubelet", 2
	// The example with 12 MB flows (as deploy/cluster's long runs): some
	// seconds, so that every pod's readiness probe (every 2 s) passes
	// while the run goes.
	b, err := os.ReadFile(filepath.Join(repoRoot(), scenario))
	must(t, err)
	text := strings.Replace(string(b), "size: 2MB", "size: 12MB", 1)
	if text == string(b) {
		t.Fatalf("%s has no 'size: 2MB' to scale", scenario)
	}
	file := filepath.Join(t.TempDir(), "fattree-k8-permutation-12mb.yaml")
	must(t, os.WriteFile(file, []byte(text), 0o644))
	ref := filepath.Join(t.TempDir(), "ref")
	start := time.Now()
	if out, err := exec.Command(lockstep(t), "run", file, "--out", ref, "--quiet").CombinedOutput(); err != nil {
		t.Fatalf("one process: %v: %s", err, out)
	}
	t.Logf("one process: %.1fs", time.Since(start).Seconds())

	dir := renderForWorker(t, file, run, p)
	start = time.Now()
	if _, stderr, err := cp.kubectl(nil, "apply", "-n", ns, "-k", dir); err != nil {
		t.Fatal(err)
	} else {
		noWarnings(t, "apply", stderr)
	}
	var sec corev1.Secret
	must(t, cp.get("/api/v1/namespaces/"+ns+"/secrets/lockstep-credentials", &sec))
	token := string(sec.Data["nats-token"])
	if token == "" {
		t.Fatal("the rendering has no NATS token")
	}

	// The launcher, once NATS is ready, through the NATS pod's address.
	var natsIP string
	eventually(t, "nats-0 ready", 3*time.Minute, func() (bool, string) {
		var pd corev1.Pod
		if err := cp.get("/api/v1/namespaces/"+ns+"/pods/nats-0", &pd); err != nil {
			return false, err.Error()
		}
		natsIP = pd.Status.PodIP
		return podReady(&pd), fmt.Sprintf("%s %v", pd.Status.Phase, pd.Status.Conditions)
	})
	out := filepath.Join(t.TempDir(), "out")
	l := exec.Command(lockstep(t), "run", file, "--partitions", fmt.Sprint(p), "--external",
		"--nats", "nats://"+natsIP+":4222", "--run-id", run, "--out", out, "--quiet")
	l.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+token)
	var lerr strings.Builder
	l.Stderr = &lerr
	must(t, l.Start())
	done := make(chan error, 1)
	go func() { done <- l.Wait() }()
	defer func() {
		if l.ProcessState == nil {
			_ = l.Process.Kill()
			<-done
		}
	}()

	// While it runs: every pod ready at least once (a node that finished
	// counts: it was ready, but its last probe may not have been
	// reported), the coordinators' slice listing all three by host name.
	// Statuses come from the kubelet a moment late, so the polling goes
	// on after the launcher until it has seen all, for up to 30 s.
	want := []string{"coord-0", "coord-1", "coord-2", "nats-0", "nodes-0", "nodes-1"}
	ready := map[string]bool{}
	var slice string
	var lerrDone error
	var took time.Duration
	finished := false
	deadline := time.Now().Add(4 * time.Minute)
	for !finished || (len(ready) < len(want) && time.Now().Before(deadline)) {
		for _, pd := range podsOf(t, ns, run) {
			name := pd.Name
			if ix, ok := pd.Labels["batch.kubernetes.io/job-completion-index"]; ok {
				name = "nodes-" + ix
			}
			if podReady(&pd) || pd.Status.Phase == corev1.PodSucceeded {
				ready[name] = true
			}
		}
		if slice == "" {
			slice = coordSlice(t, ns)
		}
		if finished {
			time.Sleep(200 * time.Millisecond) // the poll's period, against the deadline
			continue
		}
		select {
		case lerrDone = <-done:
			finished, took = true, time.Since(start)
			if deadline.After(time.Now().Add(30 * time.Second)) {
				deadline = time.Now().Add(30 * time.Second)
			}
		case <-time.After(200 * time.Millisecond): // the poll's period
		}
		if !finished && time.Now().After(deadline) {
			t.Fatalf("the launcher did not finish within 4 min; ready: %v\n%s", keys(ready), lerr.String())
		}
	}
	if lerrDone != nil {
		t.Fatalf("launcher: %v\n%s", lerrDone, lerr.String())
	}
	t.Logf("the run on the kubelet: %.1fs from apply; ready seen: %v; coord slice: %s", took.Seconds(), keys(ready), slice)
	sameOutputs(t, ref, out)
	if strings.Join(keys(ready), " ") != strings.Join(want, " ") {
		t.Errorf("pods seen ready: %v, want %v", keys(ready), want)
	}
	if slice != "coord-0 coord-1 coord-2" {
		t.Errorf("the coord EndpointSlice listed %q, want the three coordinators by host name", slice)
	}
	jobComplete(t, ns, "the Job complete", time.Minute, p)
	// What becomes of the coordinators after their run (they exit 0, and a
	// StatefulSet's pods restart): reported, not judged.
	for _, pd := range podsOf(t, ns, run) {
		if strings.HasPrefix(pd.Name, "coord-") && len(pd.Status.ContainerStatuses) == 1 {
			cs := pd.Status.ContainerStatuses[0]
			t.Logf("%s after the run: restarts %d, ready %v, state %+v, last %+v", pd.Name, cs.RestartCount, cs.Ready, cs.State, cs.LastTerminationState)
		}
	}

	// The PDB with real pods: once the three coordinators are healthy
	// (the restarted ones, after the run), the disruption controller
	// allows one disruption; the Eviction API lets one coordinator go and
	// refuses the second (429) while the first is away, as `kubectl drain`
	// would meet it.
	eventually(t, "the PDB allowing one disruption", 2*time.Minute, func() (bool, string) {
		var pdb policyv1.PodDisruptionBudget
		if err := cp.get("/apis/policy/v1/namespaces/"+ns+"/poddisruptionbudgets/coord", &pdb); err != nil {
			return false, err.Error()
		}
		st := pdb.Status
		return st.CurrentHealthy == 3 && st.DesiredHealthy == 2 && st.DisruptionsAllowed == 1, fmt.Sprintf("%+v", st)
	})
	evict := func(pod string) (int, string) {
		body := fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q,"namespace":%q}}`, pod, ns)
		code, b, err := cp.do(http.MethodPost, "/api/v1/namespaces/"+ns+"/pods/"+pod+"/eviction", "application/json", []byte(body))
		must(t, err)
		return code, string(b)
	}
	if code, b := evict("coord-0"); code != http.StatusCreated {
		t.Errorf("evicting coord-0 with 3 healthy: %d %s, want 201", code, b)
	}
	if code, b := evict("coord-1"); code != http.StatusTooManyRequests || !strings.Contains(b, "disruption budget") {
		t.Errorf("evicting coord-1 while coord-0 is away: %d %s, want 429 (the PDB)", code, b)
	} else {
		t.Logf("the second eviction, refused: %d %.200s", code, b)
	}

	// Delete the run and wait until the kubelet has torn every pod down.
	if _, _, err := cp.kubectl(nil, "delete", "-n", ns, "-k", dir, "--wait=true", "--timeout=2m"); err != nil {
		t.Error(err)
	}
	eventually(t, "the run's pods gone", 2*time.Minute, func() (bool, string) {
		pods := podsOf(t, ns, run)
		var left []string
		for _, pd := range pods {
			left = append(left, pd.Name+"/"+string(pd.Status.Phase))
		}
		return len(pods) == 0, fmt.Sprint(left)
	})

	// The same run with a NATS server per Kubernetes node (--nats-per-node):
	// the DaemonSet's pod on this worker, which every member reaches
	// through the Service nats (internalTrafficPolicy Local); the files
	// are the same.
	runPerNode(n, t, file, ref)

	// And with the nodes serving NATS themselves (--nodes-serve): no NATS
	// pod; each node pod's server routes to the others' by their host
	// names, which CoreDNS gives from the nodes Service; the same files.
	runServing(n, t, file, ref)
}

// renderForWorker renders file for P partitions of run with `lockstep
// deploy k8s` (and extra flags) into a directory whose kustomization has
// every pod ask for a tenth of a core: the machine has 2 cores, and the
// rendering's 1 CPU per node would leave the pods unschedulable here.
func renderForWorker(t *testing.T, file, run string, p int, extra ...string) string {
	dir := filepath.Join(t.TempDir(), "render")
	args := append([]string{"deploy", "k8s", file, "--partitions", fmt.Sprint(p), "--run-id", run,
		"--image", "lockstep:k8sapi", "--out", dir}, extra...)
	if b, err := exec.Command(lockstep(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	kz, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	must(t, err)
	kz = append(kz, "patches:\n"...)
	for _, kind := range []string{"Job", "StatefulSet", "DaemonSet"} {
		kz = fmt.Appendf(kz, `  - target: {kind: %s}
    patch: '[{"op": "replace", "path": "/spec/template/spec/containers/0/resources/requests/cpu", "value": "100m"}]'
`, kind)
	}
	must(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), kz, 0o644))
	return dir
}

// runPerNode renders file with --nats-per-node and runs it (runLayout),
// the launcher on the DaemonSet's NATS pod.
func runPerNode(n *node, t *testing.T, file, ref string) {
	runLayout(n, t, file, ref, "--nats-per-node", "kubelet-pernode", "kubelet-pn", func(ns string) (pod, ip string) {
		return onePod(t, ns, "app.kubernetes.io/component%3Dnats", "the DaemonSet's NATS pod ready", func(pd *corev1.Pod) (bool, string) {
			owned := len(pd.OwnerReferences) == 1 && pd.OwnerReferences[0].Kind == "DaemonSet"
			return owned && podReady(pd), fmt.Sprintf("%s owners %v %s %v", pd.Name, pd.OwnerReferences, pd.Status.Phase, pd.Status.Conditions)
		})
	}, nil)
}

// onePod waits until namespace ns has exactly one pod matching selector
// (URL-encoded) and ok says it is as wanted, and returns its name and
// address.
func onePod(t *testing.T, ns, selector, what string, ok func(*corev1.Pod) (bool, string)) (pod, ip string) {
	eventually(t, what, 3*time.Minute, func() (bool, string) {
		var l corev1.PodList
		if err := cp.get("/api/v1/namespaces/"+ns+"/pods?labelSelector="+selector, &l); err != nil {
			return false, err.Error()
		}
		if len(l.Items) != 1 {
			return false, fmt.Sprintf("%d pods with %s", len(l.Items), selector)
		}
		pd := &l.Items[0]
		pod, ip = pd.Name, pd.Status.PodIP
		return ok(pd)
	})
	return pod, ip
}

// runServing renders file with --nodes-serve and runs it (runLayout), the
// launcher on node 0's server by its pod address; then no pod may be a
// NATS one, and the Job must complete (every node, its server with it,
// exited 0).
func runServing(n *node, t *testing.T, file, ref string) {
	runLayout(n, t, file, ref, "--nodes-serve", "kubelet-serving", "kubelet-sv", func(ns string) (pod, ip string) {
		return onePod(t, ns, "batch.kubernetes.io/job-completion-index%3D0", "node 0's pod running", func(pd *corev1.Pod) (bool, string) {
			ip := pd.Status.PodIP
			return pd.Status.Phase == corev1.PodRunning && ip != "" && pd.Spec.Hostname == "nodes-0" && pd.Spec.Subdomain == "nodes",
				fmt.Sprintf("%s %s ip %q host %q.%q", pd.Name, pd.Status.Phase, ip, pd.Spec.Hostname, pd.Spec.Subdomain)
		})
	}, func(ns, run string) {
		for _, pd := range podsOf(t, ns, run) {
			if pd.Labels["app.kubernetes.io/component"] == "nats" {
				t.Errorf("a NATS pod %s in a rendering whose nodes serve", pd.Name)
			}
		}
		jobComplete(t, ns, "the serving nodes' Job complete", 2*time.Minute, 2)
	})
}

// runLayout renders file for 2 partitions with flag (another layout of
// the kubelet test's run), applies it in a namespace of its own, runs the
// launcher on the host against the NATS server of the pod server waits
// for and names, checks the outputs against ref and then after (if
// any), and deletes the run.
func runLayout(n *node, t *testing.T, file, ref, flag, label, run string, server func(ns string) (pod, ip string),
	after func(ns, run string)) {
	ns := namespace(t, label)
	n.namespaces = append(n.namespaces, ns)
	const p = 2
	dir := renderForWorker(t, file, run, p, flag)
	start := time.Now()
	if _, stderr, err := cp.kubectl(nil, "apply", "-n", ns, "-k", dir); err != nil {
		t.Fatal(err)
	} else {
		noWarnings(t, "apply "+flag, stderr)
	}
	var sec corev1.Secret
	must(t, cp.get("/api/v1/namespaces/"+ns+"/secrets/lockstep-credentials", &sec))
	pod, ip := server(ns)
	out := filepath.Join(t.TempDir(), "out"+flag)
	l := exec.CommandContext(t.Context(), lockstep(t), "run", file, "--partitions", fmt.Sprint(p), "--external",
		"--nats", "nats://"+ip+":4222", "--run-id", run, "--out", out, "--quiet", "--join-timeout", "3m")
	l.Env = append(os.Environ(), "LOCKSTEP_NATS_TOKEN="+string(sec.Data["nats-token"]))
	if b, err := l.CombinedOutput(); err != nil {
		t.Fatalf("launcher with %s: %v\n%s", flag, err, b)
	}
	t.Logf("the run with %s (launcher on pod %s): %.1fs from apply", flag, pod, time.Since(start).Seconds())
	sameOutputs(t, ref, out)
	if after != nil {
		after(ns, run)
	}
	if _, _, err := cp.kubectl(nil, "delete", "-n", ns, "-k", dir, "--wait=true", "--timeout=2m"); err != nil {
		t.Error(err)
	}
	eventually(t, "the "+flag+" run's pods gone", 2*time.Minute, func() (bool, string) {
		pods := podsOf(t, ns, run)
		return len(pods) == 0, fmt.Sprint(len(pods), " pods")
	})
}

// jobComplete waits up to d for the node Job in ns to complete with p
// pods succeeded.
func jobComplete(t *testing.T, ns, what string, d time.Duration, p int32) {
	t.Helper()
	eventually(t, what, d, func() (bool, string) {
		var job batchv1.Job
		if err := cp.get("/apis/batch/v1/namespaces/"+ns+"/jobs/nodes", &job); err != nil {
			return false, err.Error()
		}
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return job.Status.Succeeded == p, fmt.Sprintf("succeeded %d", job.Status.Succeeded)
			}
		}
		return false, fmt.Sprintf("%+v", job.Status)
	})
}

func podReady(pd *corev1.Pod) bool {
	for _, c := range pd.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// coordSlice is the host names in the coord Service's EndpointSlice once
// it lists three endpoints, else "".
func coordSlice(t testing.TB, ns string) string {
	var l discoveryv1.EndpointSliceList
	if err := cp.get("/apis/discovery.k8s.io/v1/namespaces/"+ns+"/endpointslices?labelSelector=kubernetes.io/service-name%3Dcoord", &l); err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			if e.Hostname != nil && len(e.Addresses) == 1 {
				hosts = append(hosts, *e.Hostname)
			}
		}
	}
	if len(hosts) != 3 {
		return ""
	}
	sort.Strings(hosts)
	return strings.Join(hosts, " ")
}

// sameOutputs: every output file byte-identical to the single-process
// run, summary.json too but for its wall-clock, build and distributed-run
// parts (as deploy/cluster checks it).
func sameOutputs(t testing.TB, want, got string) {
	t.Helper()
	files := func(dir string) map[string][]byte {
		m := map[string][]byte{}
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			if rel == "summary.json" {
				var s map[string]any
				if err := json.Unmarshal(b, &s); err != nil {
					t.Errorf("%s: %v", p, err)
				}
				for _, k := range []string{"perf", "build", "extra", "scenario", "packet_pool_slots", "peak_event_queue"} {
					delete(s, k)
				}
				b, _ = json.Marshal(s)
			}
			m[rel] = b
			return err
		})
		return m
	}
	w, g := files(want), files(got)
	if len(w) < 3 {
		t.Fatalf("the single-process run wrote only %d files", len(w))
	}
	for name, wb := range w {
		if gb, ok := g[name]; !ok {
			t.Errorf("%s missing", name)
		} else if !bytes.Equal(wb, gb) {
			t.Errorf("%s differs from the single-process run (%d vs %d bytes)", name, len(gb), len(wb))
		}
	}
	for name := range g {
		if _, ok := w[name]; !ok {
			t.Errorf("%s written, but not by the single-process run", name)
		}
	}
	t.Logf("%d files byte-identical to the single-process run", len(w))
}
