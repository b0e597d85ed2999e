package node

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/elementproto/natspeer"
	"github.com/lockstep-sim/lockstep/fabric"
	"github.com/lockstep-sim/lockstep/scenario"
)

// ElementTimeout is how long a partition waits for an external element's
// answer to one message: half the peer timeout, so that a silent element
// fails the run, naming it, before the partition's own silence (it does
// not publish its heartbeat while it waits) makes its peers give up on
// it.
func ElementTimeout(peerTimeout time.Duration) time.Duration { return peerTimeout / 2 }

// ConnectElements gives the external elements of b (the scenario's
// external list) their peers over nc: requests on the run's element
// subjects (natspeer.Subject), each answered within timeout. A
// partition uses the peers of its own elements only.
func ConnectElements(b *scenario.Built, nc *nats.Conn, run string, timeout time.Duration) {
	b.ConnectExternal(func(el string) fabric.ExternalPeer {
		return natspeer.NewPeer(nc, natspeer.Subject(run, el), timeout)
	})
}
