package coordinator

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/lockstep-sim/lockstep/internal/member"
)

// authStream is raft's TCP stream layer with a handshake: a replica
// accepts a raft connection only from another coordinator of the run.
// The acceptor sends a random nonce; the dialer answers with its replica
// id and its member key's signature of (run, nonce). Anything else is
// closed and counted. The handshake runs once per pooled connection, off
// the per-window path (raft is not on it anyway).
type authStream struct {
	ln    net.Listener
	creds *member.Creds
	id    string // this replica's id

	conns    chan net.Conn
	done     chan struct{}
	once     sync.Once
	rejected atomic.Uint64
}

const (
	nonceBytes       = 32
	handshakeTimeout = 2 * time.Second
	maxIDBytes       = 64
)

var _ raft.StreamLayer = (*authStream)(nil)

func newAuthStream(addr, id string, creds *member.Creds) (*authStream, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &authStream{ln: ln, creds: creds, id: id, conns: make(chan net.Conn), done: make(chan struct{})}
	go s.serve()
	return s, nil
}

func handshakeMessage(run string, nonce []byte) []byte {
	return fmt.Appendf(nil, "lockstep raft v1\x00%s\x00%x", run, nonce)
}

func (s *authStream) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			s.Close()
			return
		}
		go func() {
			if err := s.check(c); err != nil {
				s.rejected.Add(1)
				c.Close()
				return
			}
			select {
			case s.conns <- c:
			case <-s.done:
				c.Close()
			}
		}()
	}
}

// check runs the acceptor's side of the handshake.
func (s *authStream) check(c net.Conn) error {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	nonce := make([]byte, nonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	if _, err := c.Write(nonce); err != nil {
		return err
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return err
	}
	if n[0] == 0 || n[0] > maxIDBytes {
		return errors.New("raft handshake: bad id length")
	}
	buf := make([]byte, int(n[0])+64)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	id, sig := string(buf[:n[0]]), buf[n[0]:]
	key, ok := s.creds.CoordinatorKeys[id]
	if !ok || !member.Verify(key, handshakeMessage(s.creds.Run, nonce), sig) {
		return fmt.Errorf("raft handshake: not coordinator %q of run %s", id, s.creds.Run)
	}
	return nil
}

// Accept implements net.Listener.Accept: the next authenticated connection.
func (s *authStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.Close.
func (s *authStream) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
	})
	return err
}

// Addr implements net.Listener.Addr.
func (s *authStream) Addr() net.Addr { return s.ln.Addr() }

// Dial implements raft.StreamLayer.Dial: it answers the acceptor's nonce.
func (s *authStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	if err := s.answer(c, timeout); err != nil {
		c.Close()
		return nil, fmt.Errorf("coordinator %s: raft handshake with %s: %w", s.id, address, err)
	}
	return c, nil
}

func (s *authStream) answer(c net.Conn, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = handshakeTimeout
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	nonce := make([]byte, nonceBytes)
	if _, err := io.ReadFull(c, nonce); err != nil {
		return err
	}
	if len(s.id) == 0 || len(s.id) > maxIDBytes {
		return fmt.Errorf("replica id %q", s.id)
	}
	msg := append([]byte{byte(len(s.id))}, s.id...)
	msg = append(msg, s.creds.Sign(handshakeMessage(s.creds.Run, nonce))...)
	_, err := c.Write(msg)
	return err
}
