// Package natspeer carries the element protocol (elementproto) over
// NATS: lockstep's side is a Peer (a fabric.ExternalPeer), the element's
// side Serve. Each call is a NATS request on the element's subjects,
// PREFIX.setup and PREFIX.step, answered within the peer timeout; an
// element's error comes back in the reply's Element-Error header. It
// imports nothing of lockstep but elementproto, so an element program
// needs only the two packages (examples/extswitch/cmd/extswitch).
package natspeer

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/elementproto"
)

// ErrHeader is the reply header that carries an element's error.
const ErrHeader = "Element-Error"

// Subject is the subject prefix of the element named element (the
// scenario's external list: the switch's name unless it gives another)
// in run run: lockstep.RUN.element.ELEMENT, under the run's own subjects.
func Subject(run, element string) string { return "lockstep." + run + ".element." + element }

// Element is the element's side of the protocol: the messages in, the
// reply out.
type Element interface {
	Setup(msg []byte) error
	Step(msg []byte) ([]byte, error)
}

// Peer calls an element over NATS.
type Peer struct {
	nc      *nats.Conn
	prefix  string
	timeout time.Duration
}

// NewPeer returns the peer of the element serving prefix; each call
// waits at most timeout (the run's peer timeout) for the reply.
func NewPeer(nc *nats.Conn, prefix string, timeout time.Duration) *Peer {
	return &Peer{nc: nc, prefix: prefix, timeout: timeout}
}

func (p *Peer) call(kind string, msg []byte) ([]byte, error) {
	if len(msg) > elementproto.MaxMessage {
		return nil, fmt.Errorf("a %s message of %d bytes, more than %d", kind, len(msg), elementproto.MaxMessage)
	}
	// No element subscribed (not yet, or reconnecting): the request
	// reached nobody, so it is asked again until one does, within the
	// timeout.
	deadline := time.Now().Add(p.timeout)
	r, err := p.nc.Request(p.prefix+"."+kind, msg, p.timeout)
	for errors.Is(err, nats.ErrNoResponders) && time.Until(deadline) > 20*time.Millisecond {
		time.Sleep(20 * time.Millisecond) // polling against the deadline
		r, err = p.nc.Request(p.prefix+"."+kind, msg, time.Until(deadline))
	}
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, fmt.Errorf("%s: no reply within the peer timeout (%v): no element subscribed to %s.*", kind, p.timeout, p.prefix)
	case errors.Is(err, nats.ErrTimeout):
		return nil, fmt.Errorf("%s: no reply within the peer timeout (%v): %v", kind, p.timeout, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %v", kind, err)
	}
	if e := r.Header.Get(ErrHeader); e != "" {
		return nil, fmt.Errorf("%s: the element failed: %s", kind, e)
	}
	if len(r.Data) > elementproto.MaxMessage {
		return nil, fmt.Errorf("%s: a reply of %d bytes, more than %d", kind, len(r.Data), elementproto.MaxMessage)
	}
	return r.Data, nil
}

// Setup implements fabric.ExternalPeer.Setup.
func (p *Peer) Setup(msg []byte) error {
	_, err := p.call("setup", msg)
	return err
}

// Step implements fabric.ExternalPeer.Step.
func (p *Peer) Step(msg []byte) ([]byte, error) { return p.call("step", msg) }

// Serve answers the element's requests on prefix with el until the
// subscription ends or the connection closes. Requests are
// handled one at a time, in order.
func Serve(nc *nats.Conn, prefix string, el Element) (*nats.Subscription, error) {
	sub, err := nc.Subscribe(prefix+".*", func(m *nats.Msg) {
		reply := nats.NewMsg(m.Reply)
		var err error
		switch m.Subject {
		case prefix + ".setup":
			err = el.Setup(m.Data)
		case prefix + ".step":
			reply.Data, err = el.Step(m.Data)
		default:
			err = fmt.Errorf("unknown subject %s", m.Subject)
		}
		if err != nil {
			reply.Header.Set(ErrHeader, err.Error())
			reply.Data = nil
		}
		_ = m.RespondMsg(reply)
	})
	if err != nil {
		return nil, err
	}
	// The server knows the subscription once Flush returns: a request
	// made after Serve finds it.
	return sub, nc.Flush()
}
