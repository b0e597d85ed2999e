//go:build k8sapi

package k8sapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The control plane the tests share: TestMain starts it once and stops
// every process of it at the end, on failure too.
var cp *controlPlane

func TestMain(m *testing.M) {
	code, err := runMain(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "k8sapi:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func runMain(m *testing.M) (code int, err error) {
	dir, err := os.MkdirTemp("", "lockstep-k8sapi-*")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	c := &controlPlane{group: group{dir: dir}}
	defer func() {
		if serr := c.stop(); serr != nil && err == nil {
			err = serr
		}
		if code != 0 || err != nil {
			c.dumpLogs(os.Stderr)
		}
	}()
	start := time.Now()
	if err := c.start(); err != nil {
		return 1, err
	}
	fmt.Fprintf(os.Stderr, "k8sapi: etcd, kube-apiserver %s and kube-controller-manager up in %.1fs\n",
		c.version, time.Since(start).Seconds())
	cp = c
	return m.Run(), nil
}

// k8sBin is where make k8s-control put the Kubernetes binaries
// ($LOCKSTEP_K8S_BIN, else bin/k8s of the repository).
func k8sBin(name string) (string, error) {
	dir := os.Getenv("LOCKSTEP_K8S_BIN")
	if dir == "" {
		dir = filepath.Join(repoRoot(), "bin", "k8s")
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s: %w (make k8s-control and make k8s-node build bin/k8s; make test-k8s does both)", name, err)
	}
	return p, nil
}

func repoRoot() string { return filepath.Join("..", "..") }

// proc is one process of the control plane, in its own process group,
// its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // the exit, once done is closed
}

// group is processes started together and stopped together.
type group struct {
	dir   string // their logs go here
	procs []*proc
}

type controlPlane struct {
	group
	version string
	extra   []*group // started by a test (the node's), watched by waitFor too

	// tokens are the static tokens by user, for the components a test
	// starts: the scheduler, the node "k8sapi-node" (group system:nodes),
	// kube-proxy and CoreDNS; the admin's is adminToken.
	tokens map[string]string

	etcdURL    string
	server     string // https://127.0.0.1:PORT
	caPEM      []byte
	client     *http.Client
	adminToken string
	kubeconfig string // the admin's, for kubectl
	kubectlBin string
}

// start brings up etcd, kube-apiserver and kube-controller-manager, each
// waited for with a deadline, and everything on 127.0.0.1.
func (c *controlPlane) start() error {
	etcdBin, err := exec.LookPath("etcd")
	if err != nil {
		return fmt.Errorf("etcd is not installed (Debian's etcd-server; make test-k8s installs it): %w", err)
	}
	apiserverBin, err := k8sBin("kube-apiserver")
	if err != nil {
		return err
	}
	kcmBin, err := k8sBin("kube-controller-manager")
	if err != nil {
		return err
	}
	if c.kubectlBin, err = k8sBin("kubectl"); err != nil {
		return err
	}
	pki := filepath.Join(c.dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return err
	}
	if err := writePKI(pki); err != nil {
		return err
	}
	if c.caPEM, err = os.ReadFile(filepath.Join(pki, "ca.crt")); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	c.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}

	// etcd: client and peer URLs on loopback, no metrics listener.
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if err := c.spawn("etcd", etcdBin,
		"--name=k8sapi", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+c.etcdURL, "--advertise-client-urls="+c.etcdURL,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=k8sapi="+peer, "--initial-cluster-state=new",
		"--unsafe-no-fsync"); err != nil {
		return err
	}
	if err := c.waitFor("etcd", 30*time.Second, func() (bool, string) {
		var h struct {
			Health string `json:"health"`
		}
		code, body, err := c.raw(http.MethodGet, c.etcdURL+"/health", "", nil, "")
		if err != nil {
			return false, err.Error()
		}
		_ = json.Unmarshal(body, &h)
		return code == http.StatusOK && h.Health == "true", string(body)
	}); err != nil {
		return err
	}

	// kube-apiserver: serving certificate from the test's CA, static
	// tokens (the admin in system:masters, the controller manager as
	// system:kube-controller-manager, whose RBAC roles the apiserver
	// bootstraps), RBAC, the default admission plugins.
	c.adminToken = randomHex(16)
	c.tokens = map[string]string{}
	lines := []string{c.adminToken + ",admin,uid-admin,system:masters"}
	for _, u := range []struct{ user, groups string }{
		{"system:kube-controller-manager", ""},
		{"system:kube-scheduler", ""},
		{"system:node:k8sapi-node", "system:nodes"},
		{"system:kube-proxy", ""},
		{"system:coredns", ""},
	} {
		tok := randomHex(16)
		c.tokens[u.user] = tok
		line := fmt.Sprintf("%s,%s,uid-%s", tok, u.user, strings.ReplaceAll(u.user, ":", "-"))
		if u.groups != "" {
			line += "," + u.groups
		}
		lines = append(lines, line)
	}
	tokens := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(pki, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	c.server = fmt.Sprintf("https://127.0.0.1:%d", ports[2])
	if err := c.spawn("kube-apiserver", apiserverBin,
		"--etcd-servers="+c.etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", ports[2]),
		"--advertise-address=127.0.0.1",
		// The 'kubernetes' Service's endpoints would be 127.0.0.1, which
		// endpoints may not hold: no reconciler.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+filepath.Join(pki, "apiserver.crt"),
		"--tls-private-key-file="+filepath.Join(pki, "apiserver.key"),
		"--client-ca-file="+filepath.Join(pki, "ca.crt"),
		"--token-auth-file="+filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := c.waitFor("kube-apiserver /readyz", 2*time.Minute, func() (bool, string) {
		code, body, err := c.do(http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false, err.Error()
		}
		return code == http.StatusOK, string(body)
	}); err != nil {
		return err
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := c.get("/version", &v); err != nil {
		return err
	}
	c.version = v.GitVersion

	c.kubeconfig = filepath.Join(pki, "admin.kubeconfig")
	if err := c.writeKubeconfig(c.kubeconfig, "admin", c.adminToken); err != nil {
		return err
	}
	kcmConfig := filepath.Join(pki, "kcm.kubeconfig")
	if err := c.writeKubeconfig(kcmConfig, "system:kube-controller-manager", c.tokens["system:kube-controller-manager"]); err != nil {
		return err
	}
	// kube-controller-manager: every default controller, each with its own
	// service account's token (as clusters run it), leader election on,
	// no listener of its own (--secure-port=0).
	if err := c.spawn("kube-controller-manager", kcmBin,
		"--kubeconfig="+kcmConfig,
		"--secure-port=0",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file="+filepath.Join(pki, "sa.key"),
		"--root-ca-file="+filepath.Join(pki, "ca.crt"),
		"--cluster-name=k8sapi",
		"--profiling=false",
	); err != nil {
		return err
	}
	// Up once it holds the leader lease and its service-account
	// controller has made the default namespace's account.
	return c.waitFor("kube-controller-manager", 2*time.Minute, func() (bool, string) {
		var lease struct {
			Spec struct {
				HolderIdentity string `json:"holderIdentity"`
			} `json:"spec"`
		}
		if err := c.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", &lease); err != nil {
			return false, err.Error()
		}
		if lease.Spec.HolderIdentity == "" {
			return false, "no lease holder"
		}
		if err := c.get("/api/v1/namespaces/default/serviceaccounts/default", nil); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// spawn starts one process of the control plane in its own process group;
// it dies with the test binary too (Pdeathsig).
func (c *group) spawn(name, bin string, args ...string) error {
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return nil
}

// stop ends every process, the last started first: SIGTERM to its group,
// SIGKILL after 15 s. It fails if one had already died.
func (c *group) stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		select {
		case <-p.done:
			errs = append(errs, fmt.Errorf("%s exited before the end: %v", p.name, p.err))
			continue
		default:
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		// Whatever else the group held.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return errors.Join(errs...)
}

// alive fails if a process of the control plane has exited.
func (c *group) alive() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited: %v", p.name, p.err)
		default:
		}
	}
	return nil
}

// dumpLogs writes the last lines of every process's log.
func (c *group) dumpLogs(w io.Writer) {
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		fmt.Fprintf(w, "--- %s (last %d lines of %s)\n%s\n", p.name, len(lines), p.log, strings.Join(lines, "\n"))
	}
}

// waitFor polls cond every 100 ms until it holds, a process of the
// control plane dies, or d passes.
func (c *controlPlane) waitFor(what string, d time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		if err := c.alive(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		for _, g := range c.extra {
			if err := g.alive(); err != nil {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %s", what, d, why)
		}
		time.Sleep(100 * time.Millisecond) // the poll's period, against the deadline
	}
}

// eventually is waitFor for a test.
func eventually(t testing.TB, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	if err := cp.waitFor(what, d, cond); err != nil {
		t.Fatal(err)
	}
}

// raw is one HTTP request with the admin's token when url is the API
// server's.
func (c *controlPlane) raw(method, url, ctype string, body []byte, accept string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if c.server != "" && strings.HasPrefix(url, c.server) {
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// do is a request to the API server: path from /api or /apis.
func (c *controlPlane) do(method, path, ctype string, body []byte) (int, []byte, error) {
	return c.raw(method, c.server+path, ctype, body, "")
}

// get decodes the object at path into out (nil: only check it is there).
func (c *controlPlane) get(path string, out any) error {
	code, body, err := c.do(http.MethodGet, path, "", nil)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", path, code, strings.TrimSpace(string(body)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}

// writeKubeconfig writes a kubeconfig for the API server with a token.
func (c *controlPlane) writeKubeconfig(path, user, token string) error {
	kc := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": "k8sapi",
		"clusters": []any{map[string]any{"name": "k8sapi", "cluster": map[string]any{
			"server": c.server, "certificate-authority-data": c.caPEM}}},
		"users":    []any{map[string]any{"name": user, "user": map[string]any{"token": token}}},
		"contexts": []any{map[string]any{"name": "k8sapi", "context": map[string]any{"cluster": "k8sapi", "user": user}}},
	}
	b, err := json.Marshal(kc) // JSON is YAML; []byte marshals as base64, as the field wants
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// kubectl runs bin/k8s/kubectl as the admin, with stdin, and returns its
// stdout and stderr.
func (c *controlPlane) kubectl(stdin []byte, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectlBin, args...)
	home := filepath.Join(c.dir, "home")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig, "HOME="+home, "KUBECACHEDIR="+filepath.Join(home, "cache"))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), errb.String(), err
}

// writePKI makes the test's CA, the API server's serving certificate
// (127.0.0.1, localhost and the in-cluster names) and the service-account
// signing key, as PEM files in dir.
func writePKI(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockstep k8sapi test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	write := func(name, typ string, der []byte, mode os.FileMode) error {
		return os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return err
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{"ca.crt", "CERTIFICATE", caDER, 0o644},
		{"apiserver.crt", "CERTIFICATE", srvDER, 0o644},
		{"apiserver.key", "EC PRIVATE KEY", srvKeyDER, 0o600},
		{"sa.key", "EC PRIVATE KEY", saKeyDER, 0o600},
		{"sa.pub", "PUBLIC KEY", saPubDER, 0o644},
	} {
		if err := write(f.name, f.typ, f.der, f.mode); err != nil {
			return err
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// freePorts are n loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

var (
	lockstepOnce sync.Once
	lockstepBin  string
	lockstepErr  error
)

// lockstep is the lockstep binary built from this source, once.
func lockstep(t testing.TB) string {
	t.Helper()
	lockstepOnce.Do(func() {
		lockstepBin = filepath.Join(cp.dir, "lockstep")
		cmd := exec.Command("go", "build", "-o", lockstepBin, "./cmd/lockstep")
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			lockstepErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	if lockstepErr != nil {
		t.Fatal(lockstepErr)
	}
	return lockstepBin
}
