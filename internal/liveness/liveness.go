// Package liveness holds the deadlines of a distributed run (docs/design.md
// §10: every wait has a deadline): Conn watches a NATS connection's
// outages, Peers when each member of a run was last heard from. Both take
// the time as a parameter; the shells (node, coordinator leader,
// launcher) call them from their own tickers. Timing decides only
// whether a run goes on or fails, never what it computes.
package liveness

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// DefaultTimeout is how long a member of a run (node, coordinator
// leader, the NATS server) may be silent or unreachable before the run
// fails: the grace period within which it may come back with the run's
// outputs unchanged.
const DefaultTimeout = 20 * time.Second

// Interval is the heartbeat interval for a timeout: a quarter of it, at
// most every (the status interval) and at least 5ms.
func Interval(timeout, every time.Duration) time.Duration {
	return max(5*time.Millisecond, min(every, timeout/4))
}

// ClientOptions are the NATS client options every member of a run uses:
// reconnect for ever (the members' own deadlines bound an outage), retry
// every 100ms, buffer up to 64 MiB published while disconnected, and ping
// every second so that a dead server is noticed even without a closed
// socket.
func ClientOptions() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond),
		nats.ReconnectJitter(20*time.Millisecond, 20*time.Millisecond), nats.ReconnectBufSize(64 << 20),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(3)}
}

// Conn watches a NATS connection.
type Conn struct {
	nc         *nats.Conn
	down       time.Time // when it was first seen down; zero while up
	reconnects uint64
}

// NewConn watches nc.
func NewConn(nc *nats.Conn) *Conn {
	return &Conn{nc: nc, reconnects: nc.Stats().Reconnects}
}

// Check looks at the connection at now: up says it is connected,
// reconnected that it reconnected since the last Check, and err that it
// has been down longer than timeout (or is closed).
func (c *Conn) Check(now time.Time, timeout time.Duration) (up, reconnected bool, err error) {
	if r := c.nc.Stats().Reconnects; r != c.reconnects {
		c.reconnects, reconnected = r, true
	}
	if c.nc.IsConnected() {
		c.down = time.Time{}
		return true, reconnected, nil
	}
	if c.nc.IsClosed() {
		return false, false, fmt.Errorf("NATS connection to %s closed%s", c.url(), c.last())
	}
	if c.down.IsZero() {
		c.down = now
	}
	if d := now.Sub(c.down); d > timeout {
		return false, false, fmt.Errorf("NATS server %s unreachable for %v%s", c.url(), d.Round(time.Millisecond), c.last())
	}
	return false, reconnected, nil
}

func (c *Conn) url() string {
	if u := c.nc.Opts.Url; u != "" {
		return u
	}
	return strings.Join(c.nc.Opts.Servers, ",")
}

func (c *Conn) last() string {
	if err := c.nc.LastError(); err != nil {
		return fmt.Sprintf(" (last error: %v)", err)
	}
	return ""
}

// Peers tracks when each of n members was last heard from. A member
// counts only once it has been heard from at all (joining is the
// launcher's deadline, not the peers').
type Peers struct {
	last []time.Time
	seen []bool
}

// NewPeers tracks n members.
func NewPeers(n int) *Peers { return &Peers{last: make([]time.Time, n), seen: make([]bool, n)} }

// Heard records that member i spoke at now.
func (p *Peers) Heard(i int, now time.Time) {
	if i >= 0 && i < len(p.last) {
		p.last[i], p.seen[i] = now, true
	}
}

// Pause makes every member count as heard at now: the watcher itself is
// cut off, so their silence is not their fault.
func (p *Peers) Pause(now time.Time) {
	for i := range p.last {
		if p.seen[i] {
			p.last[i] = now
		}
	}
}

// Seen reports whether member i has been heard from.
func (p *Peers) Seen(i int) bool { return p.seen[i] }

// Unseen lists the members never heard from.
func (p *Peers) Unseen() []int {
	var out []int
	for i, s := range p.seen {
		if !s {
			out = append(out, i)
		}
	}
	return out
}

// Silent lists the members heard from once and not for longer than d.
func (p *Peers) Silent(now time.Time, d time.Duration) []int {
	var out []int
	for i, t := range p.last {
		if p.seen[i] && now.Sub(t) > d {
			out = append(out, i)
		}
	}
	return out
}

// Since is how long ago member i was last heard from.
func (p *Peers) Since(i int, now time.Time) time.Duration { return now.Sub(p.last[i]) }

// SilentError is the verdict on a member that stopped answering; every
// watcher words it the same way, so the run's one-line reason does not
// depend on which of them saw it first.
func SilentError(part int, d time.Duration) error {
	return fmt.Errorf("partition %d: no heartbeat from its node for %v (stopped, hung or cut off)", part, d.Round(100*time.Millisecond))
}

// List formats member indices: "0, 2, 3".
func List(is []int) string {
	s := make([]string, len(is))
	for k, i := range is {
		s[k] = fmt.Sprint(i)
	}
	return strings.Join(s, ", ")
}
