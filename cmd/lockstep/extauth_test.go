package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// extAuth is one way an external NATS server authenticates its clients:
// the server's options, the flags (and environment) that give `lockstep
// run` the credentials, the secrets that must appear in no child's argv,
// and a client the server must refuse.
type extAuth struct {
	name    string
	opts    func(o *server.Options)
	flags   []string
	env     []string // KEY=VALUE for `lockstep run` (the token's way in)
	secrets []string
	// refused are connections without (all) the credentials.
	refused map[string][]nats.Option
}

func startAuthNATS(t *testing.T, a *extAuth) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 8 << 20}
	a.opts(o)
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// tokenAuth: a server with a token; `lockstep run` takes it from
// $LOCKSTEP_NATS_TOKEN (--nats-token would put it in the launcher's own
// argv) and hands it to the children the same way.
func tokenAuth(t *testing.T, dir string) *extAuth {
	tok := "tok-" + randHex(t)
	return &extAuth{name: "token",
		opts:    func(o *server.Options) { o.Authorization = tok },
		env:     []string{"LOCKSTEP_NATS_TOKEN=" + tok},
		secrets: []string{tok},
		refused: map[string][]nats.Option{"no token": nil, "wrong token": {nats.Token("wrong")}}}
}

// nkeyAuth: a server whose only user is an nkey; `--nats-nkey FILE` names
// its seed file.
func nkeyAuth(t *testing.T, dir string) *extAuth {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	path := writeFile(t, filepath.Join(dir, "user.nk"), string(seed)+"\n", 0o600)
	other, _ := nkeys.CreateUser()
	opub, _ := other.PublicKey()
	return &extAuth{name: "nkey",
		opts:    func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} },
		flags:   []string{"--nats-nkey", path},
		secrets: []string{string(seed)},
		refused: map[string][]nats.Option{"no nkey": nil, "another nkey": {nats.Nkey(opub, other.Sign)}}}
}

// credsAuth: decentralised JWT auth (operator, account, user) with the
// account in an in-memory resolver; `--nats-creds FILE` names the user's
// .creds file (its JWT and nkey seed).
func credsAuth(t *testing.T, dir string) *extAuth {
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()
	acc, _ := nkeys.CreateAccount()
	accPub, _ := acc.PublicKey()
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = "lockstep"
	accJWT, err := ac.Encode(op)
	if err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	userSeed, _ := user.Seed()
	uc := jwt.NewUserClaims(userPub)
	uc.Name = "lockstep-run"
	userJWT, err := uc.Encode(acc)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(userJWT, userSeed)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(dir, "user.creds"), string(creds), 0o600)
	// A user the account did not sign.
	stranger, _ := nkeys.CreateAccount()
	sc := jwt.NewUserClaims(userPub)
	strangerJWT, _ := sc.Encode(stranger)
	sCreds, _ := jwt.FormatUserConfig(strangerJWT, userSeed)
	sPath := writeFile(t, filepath.Join(dir, "stranger.creds"), string(sCreds), 0o600)
	res := &server.MemAccResolver{}
	if err := res.Store(accPub, accJWT); err != nil {
		t.Fatal(err)
	}
	return &extAuth{name: "creds",
		opts: func(o *server.Options) {
			o.TrustedKeys = []string{opPub}
			o.AccountResolver = res
		},
		flags:   []string{"--nats-creds", path},
		secrets: []string{string(userSeed), userJWT},
		refused: map[string][]nats.Option{"no creds": nil, "creds of another account": {nats.UserCredentials(sPath)}}}
}

// tlsAuth: a server that requires TLS and a client certificate, both
// signed by a CA the test makes; `--nats-ca`, `--nats-cert`, `--nats-key`.
func tlsAuth(t *testing.T, dir string) *extAuth {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockstep test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := x509.MarshalPKCS8PrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	srvCert, srvKey := leaf(2, "nats", x509.ExtKeyUsageServerAuth)
	cliCert, cliKey := leaf(3, "lockstep", x509.ExtKeyUsageClientAuth)
	caPath := writeFile(t, filepath.Join(dir, "ca.pem"), string(caPEM), 0o644)
	certPath := writeFile(t, filepath.Join(dir, "client.pem"), string(cliCert), 0o644)
	keyPath := writeFile(t, filepath.Join(dir, "client-key.pem"), string(cliKey), 0o600)
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &extAuth{name: "tls",
		opts: func(o *server.Options) {
			o.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
				ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
			o.TLS, o.TLSVerify, o.TLSTimeout = true, true, 10
		},
		flags:   []string{"--nats-ca", caPath, "--nats-cert", certPath, "--nats-key", keyPath},
		secrets: []string{strings.TrimSpace(string(cliKey)), "PRIVATE KEY"},
		refused: map[string][]nats.Option{
			"no TLS":                      nil,
			"TLS without the CA":          {nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12})},
			"the CA but no client cert":   {nats.RootCAs(caPath)},
			"a client cert of another CA": {nats.RootCAs(caPath), nats.ClientCert(otherCert(t, dir))},
		}}
}

// otherCert is a self-signed client certificate (not from the run's CA).
func otherCert(t *testing.T, dir string) (string, string) {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(9), Subject: pkix.Name{CommonName: "intruder"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	c := writeFile(t, filepath.Join(dir, "intruder.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), 0o644)
	key := writeFile(t, filepath.Join(dir, "intruder-key.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})), 0o600)
	return c, key
}

func randHex(t *testing.T) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// TestRunDistributed_ExternalNATSAuth runs `lockstep run FILE --partitions
// 2 --procs --coordinators 3 --nats URL` against a real nats-server (embedded in the test,
// on loopback) configured with each kind of authentication: token, nkey,
// creds (JWT), and mutual TLS with a CA. For each, the files are
// byte-identical to a single-process run's, the server refuses a client
// without the credentials, and no child's argv shows a secret (they get
// the token through their environment, the rest as file paths).
func TestRunDistributed_ExternalNATSAuth(t *testing.T) {
	requireWired(t)
	t.Setenv(asMainEnv, "1")
	dir := write(t, map[string]string{"r.yaml": randomYAML})
	s := filepath.Join(dir, "r.yaml")
	single := filepath.Join(dir, "single")
	runCLI(t, "run", s, "--out", single, "--quiet")
	for _, mk := range []func(*testing.T, string) *extAuth{tokenAuth, nkeyAuth, credsAuth, tlsAuth} {
		kdir := t.TempDir()
		a := mk(t, kdir)
		t.Run(a.name, func(t *testing.T) {
			srv := startAuthNATS(t, a)
			url := srv.ClientURL()
			for what, opts := range a.refused {
				nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(0), nats.Timeout(5*time.Second))...)
				if err == nil {
					nc.Close()
					t.Errorf("%s: a client with %s was accepted", a.name, what)
				}
			}
			for _, kv := range a.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			id := fmt.Sprintf("auth-%s-%d", a.name, os.Getpid())
			out := filepath.Join(dir, a.name)
			args := append([]string{"run", s, "--out", out, "--quiet", "--partitions", "2", "--procs",
				"--coordinators", "3", "--nats", url, "--run-id", id}, a.flags...)

			// Watch the children's argv while the run goes on.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var mu sync.Mutex
			seen := map[int]string{} // pid -> argv
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(2 * time.Millisecond)
				defer tick.Stop()
				for {
					for _, pid := range childPIDs(t, "--run "+id) {
						if pid == os.Getpid() {
							continue
						}
						argv, env := procArgsQuiet(pid)
						if argv == "" {
							continue
						}
						mu.Lock()
						if _, ok := seen[pid]; !ok {
							seen[pid] = argv
							for _, kv := range a.env {
								k, v, _ := strings.Cut(kv, "=")
								if env[k] != v {
									t.Errorf("pid %d (%s): $%s not passed on", pid, argv, k)
								}
							}
						}
						mu.Unlock()
					}
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			var o, e bytes.Buffer
			code := run(args, &o, &e)
			close(stop)
			wg.Wait()
			if code != 0 {
				t.Fatalf("lockstep %s: exit %d\nstderr: %s", strings.Join(args, " "), code, e.String())
			}
			sameFiles(t, a.name, single, out)
			nodes, coords := 0, 0
			for pid, argv := range seen {
				switch {
				case strings.Contains(argv, " node "):
					nodes++
				case strings.Contains(argv, " coordinator "):
					coords++
				}
				for _, sec := range a.secrets {
					if strings.Contains(argv, sec) {
						t.Errorf("pid %d's argv %q shows a secret", pid, argv)
					}
				}
			}
			if nodes != 2 || coords != 3 {
				t.Errorf("saw %d node and %d coordinator processes (%v), want 2 and 3", nodes, coords, seen)
			}
		})
	}
}

// procArgsQuiet is procArgs for a process that may have exited ("" then).
func procArgsQuiet(pid int) (string, map[string]string) {
	b, err := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return "", nil
	}
	e, _ := os.ReadFile(filepath.Join("/proc", fmt.Sprint(pid), "environ"))
	env := map[string]string{}
	for _, kv := range strings.Split(string(e), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return strings.ReplaceAll(string(b), "\x00", " "), env
}
