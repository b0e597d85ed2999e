package node

import (
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// peerBusy remembers, for the last few windows, the longest busy time a
// peer reported (wire.Message.Busy): the part of a node's wait for window
// w+1 that the slowest partition's window w explains (load imbalance); the
// rest is the network and the barrier.
type peerBusy struct {
	slot [4]struct {
		window uint64
		busy   time.Duration
		set    bool
	}
}

func (p *peerBusy) add(window uint64, busy time.Duration) {
	s := &p.slot[window%4]
	if !s.set || s.window != window {
		s.window, s.busy, s.set = window, busy, true
		return
	}
	s.busy = max(s.busy, busy)
}

// max is the longest busy time reported for window (0 if none).
func (p *peerBusy) max(window uint64) time.Duration {
	if s := p.slot[window%4]; s.set && s.window == window {
		return s.busy
	}
	return 0
}

// RTTSampler measures the NATS round trip (a PING through the server and
// its PONG: nats.Conn.FlushTimeout) every interval from its own goroutine
// while the run goes on, so the barrier wait can be set against the
// network's round trip under the same load. The launcher runs it, on a
// connection of its own over the network the nodes use (TCP, also to the
// embedded server: deploy's rttConn): it computes nothing during a run,
// so its samples are the network's and the server's, not a busy node's
// compute.
type RTTSampler struct {
	mu      sync.Mutex
	samples []float64 // µs, guarded by mu
	stop    chan struct{}
	once    sync.Once
}

// StartRTT starts sampling nc's round trip every interval.
func StartRTT(nc *nats.Conn, every time.Duration) *RTTSampler {
	s := &RTTSampler{stop: make(chan struct{})}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			t0 := time.Now()
			if nc.FlushTimeout(time.Second) != nil {
				continue
			}
			us := float64(time.Since(t0).Microseconds())
			select {
			case <-s.stop:
				return
			default:
			}
			s.mu.Lock()
			if len(s.samples) < 4096 {
				s.samples = append(s.samples, us)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// Median stops the sampler (once) and returns the median round trip, µs
// (0: no sample). It does not wait for a round trip in flight (the
// goroutine ends with it, within its one-second timeout): a run that
// fails because NATS is gone reports it without delay.
func (s *RTTSampler) Median() float64 {
	s.once.Do(func() { close(s.stop) })
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.samples) == 0 {
		return 0
	}
	slices.Sort(s.samples)
	return s.samples[len(s.samples)/2]
}
