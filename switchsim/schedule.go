package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// Schedulers (StageSchedule): which class queue of a port sends next.
// The core asks only with several classes; PAUSE frames go first
// whatever the scheduler, and a class its peer paused waits.

// dwrr serves the strict classes (weight 0) first, the highest class
// first, then the weighted ones by deficit weighted round robin
// (Shreedhar and Varghese, "Efficient fair queueing using deficit round
// robin", SIGCOMM 1995) with a quantum of weight × quantum bytes: a
// common merchant-silicon arrangement.
type dwrr struct {
	strict  [sim.MaxClasses]bool
	quantum [sim.MaxClasses]int64
}

// Pick implements Scheduler.Pick.
func (w *dwrr) Pick(s *Switch, e *sim.Engine, port int) int {
	return w.pick(s, e, &s.Ports[port])
}

// pick is Pick for port pt.
func (w *dwrr) pick(s *Switch, e *sim.Engine, pt *Port) int {
	weighted := false
	for c := s.nc - 1; c >= 0; c-- {
		cq := pt.class(c)
		if cq.q.Len() == 0 || s.paused(e, pt, c) {
			continue
		}
		if w.strict[c] {
			return c
		}
		weighted = true
	}
	if !weighted {
		return -1
	}
	// DWRR: the class whose turn it is sends while its deficit covers its
	// head packet; a class gets its quantum when its turn comes.
	for {
		c := int(pt.rr)
		cq := pt.class(c)
		if !w.strict[c] && cq.q.Len() > 0 && !s.paused(e, pt, c) {
			head := int64(cq.q.Front().Size)
			if x := &pt.cx[c]; x.deficit >= head {
				x.deficit -= head
				return c
			}
		} else if cq.q.Len() == 0 {
			pt.cx[c].deficit = 0
		}
		c = (c + 1) % s.nc
		pt.rr = int8(c)
		if nq := pt.class(c); !w.strict[c] && nq.q.Len() > 0 && !s.paused(e, pt, c) {
			pt.cx[c].deficit += w.quantum[c]
		}
	}
}

// strictPriority serves the highest non-empty class that is not paused,
// whatever the classes' weights (IEEE 802.1Q §8.6.8.1, strict priority
// transmission selection).
type strictPriority struct{}

// Pick implements Scheduler.Pick.
func (strictPriority) Pick(s *Switch, e *sim.Engine, port int) int {
	pt := &s.Ports[port]
	for c := s.nc - 1; c >= 0; c-- {
		if pt.class(c).q.Len() > 0 && !s.paused(e, pt, c) {
			return c
		}
	}
	return -1
}

// QueueLen is the number of packets waiting in class c of port (not
// counting the one in service).
func (s *Switch) QueueLen(port, c int) int { return s.Ports[port].class(c).q.Len() }

// HeadSize is the size of the packet at the head of class c of port.
// Precondition: QueueLen(port, c) > 0.
func (s *Switch) HeadSize(port, c int) int32 { return s.Ports[port].class(c).q.Front().Size }

// Paused reports whether class c of port is paused by its peer (PFC).
func (s *Switch) Paused(e *sim.Engine, port, c int) bool { return s.paused(e, &s.Ports[port], c) }

// NumClasses is the number of class queues of every port.
func (s *Switch) NumClasses() int { return s.nc }
