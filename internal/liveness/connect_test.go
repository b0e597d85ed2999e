package liveness

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startAt starts a NATS server on port (with token, if any).
func startAt(t *testing.T, port int, token string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true, Authorization: token})
	if err != nil {
		t.Error(err)
		return nil
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestConnectWait: a server that comes up after the client started is
// waited for (the client says so once); one that refuses the credentials
// is not; one that never comes is given up at the deadline.
func TestConnectWait(t *testing.T) {
	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	var said lockedBuf
	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ConnectWait(url, time.Minute, &said, "launcher")
		done <- result{nc, err}
	}()
	// Start the server only once the client has failed at least once.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(said.String(), "waiting up to 1m0s for NATS") {
		select {
		case r := <-done:
			t.Fatalf("ConnectWait returned before any server was up: %v", r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the client never said it waits")
		}
		time.Sleep(time.Millisecond) // polling the client's output against the deadline
	}
	startAt(t, port, "")
	r := <-done
	if r.err != nil {
		t.Fatalf("the server came up, ConnectWait: %v", r.err)
	}
	r.nc.Close()

	// Refused credentials end the wait at once.
	tp := freePort(t)
	s := startAt(t, tp, "s3cret")
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("the token server did not start")
	}
	start := time.Now()
	if _, err := ConnectWait(fmt.Sprintf("nats://127.0.0.1:%d", tp), time.Minute, &bytes.Buffer{}, "x", nats.Token("wrong")); err == nil || !Refused(err) {
		t.Errorf("a wrong token: %v, want an authorization error", err)
	} else if time.Since(start) > 30*time.Second {
		t.Errorf("a wrong token was retried for %v", time.Since(start))
	}

	// Nothing there: the deadline.
	if _, err := ConnectWait(fmt.Sprintf("nats://127.0.0.1:%d", freePort(t)), 300*time.Millisecond, &bytes.Buffer{}, "x"); err == nil {
		t.Error("no server: connected")
	}
}

// lockedBuf is a bytes.Buffer written by one goroutine and read by another.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
