package switchsim

import (
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// CoDel, Controlled Delay (RFC 8289; Nichols and Jacobson, "Controlling
// Queue Delay", ACM Queue 2012), per class queue of every port. It acts
// on dequeue, from each packet's sojourn time (the core stamps packets as
// they are queued: SojournUser):
//
//   - §5.3 dodequeue: a packet whose sojourn is below TARGET, or that
//     leaves at most one maximum-size packet behind it, resets
//     first_above_time; otherwise the first such packet sets
//     first_above_time = now + INTERVAL, and a packet that leaves at or
//     after it is "ok to drop".
//   - §5.4 dequeue, not dropping: an ok-to-drop packet is dropped, the
//     state becomes dropping, count restarts at 1 (or at count −
//     lastcount when the last dropping state ended less than 16
//     intervals ago and that difference is above 1: the Linux rule the
//     RFC's pseudocode gives), and drop_next = now + INTERVAL/√count.
//   - §5.4 dequeue, dropping: a packet that is not ok to drop ends the
//     dropping state; while now ≥ drop_next, the packet is dropped, count
//     grows by one and drop_next = drop_next + INTERVAL/√count (the
//     control law, §5.5, with an exact square root where Linux uses a
//     Newton step).
//
// A dropped packet is freed and the queue's next one considered at the
// same time, as the pseudocode's loop does; the core tells the module
// when the queue ran empty (a nil packet: §5.3's "queue is empty" branch).
// With ecn (RFC 8289 §4.5 leaves it to the implementation; Linux's
// codel_dequeue does this) an ECN-capable packet is marked where another
// would be dropped, and it leaves: the next drop is scheduled at once.
//
// The maximum packet size (§4.4's MTU test) is the option mtu_bytes, or
// by default the largest packet the queue has held.
type CoDel struct {
	target, interval sim.Time
	mtu              int64
	ecn              bool
	nc               int
	q                []codelQ // by port * classes + class
}

// codelQ is one class queue's CoDel state (RFC 8289 §5.1's variables).
type codelQ struct {
	firstAbove, dropNext sim.Time // 0: not set
	count, lastCount     uint32
	dropping             bool
	// pending: the previous packet was dropped in the dropping loop
	// (loopDrop: the next one checks the control law at the same time) or
	// as the state was entered (enterDrop: the next one leaves).
	pending uint8
	maxPkt  int64
}

const (
	loopDrop  uint8 = 1
	enterDrop uint8 = 2
)

// NewCoDel returns CoDel for ports × classes queues; mtu 0 takes each
// queue's largest packet.
func NewCoDel(target, interval sim.Time, mtu int64, ecn bool, ports, classes int) *CoDel {
	return &CoDel{target: target, interval: interval, mtu: mtu, ecn: ecn, nc: classes,
		q: make([]codelQ, ports*classes)}
}

// NeedsSojourn implements SojournUser.
func (*CoDel) NeedsSojourn() {}

// DecidesOnDequeue implements DequeueAQM.
func (*CoDel) DecidesOnDequeue() {}

// OnEnqueue implements AQM.OnEnqueue: CoDel admits everything the buffer
// admits, and learns the largest packet.
func (a *CoDel) OnEnqueue(_ *Switch, _ *sim.Engine, pkt *sim.Packet, port, c int, _ int64) Verdict {
	q := &a.q[port*a.nc+c]
	q.maxPkt = max(q.maxPkt, int64(pkt.Size))
	return Pass
}

// okToDrop is §5.3's dodequeue test (pkt nil: the queue is empty), which
// updates first_above_time.
func (a *CoDel) okToDrop(q *codelQ, now sim.Time, pkt *sim.Packet, sojourn sim.Time, behind int64) bool {
	if pkt == nil {
		q.firstAbove = 0
		return false
	}
	mtu := a.mtu
	if mtu == 0 {
		mtu = q.maxPkt
	}
	if sojourn < a.target || behind <= mtu {
		q.firstAbove = 0
		return false
	}
	if q.firstAbove == 0 {
		q.firstAbove = now + a.interval
		return false
	}
	return now >= q.firstAbove
}

// controlLaw is §5.5: t + INTERVAL/√count.
func (a *CoDel) controlLaw(t sim.Time, count uint32) sim.Time {
	return t + sim.Time(math.Round(float64(a.interval)/math.Sqrt(float64(count))))
}

// signal is a drop, or a mark for an ECN-capable packet with ecn on.
func (a *CoDel) signal(pkt *sim.Packet) Verdict {
	if a.ecn && pkt.Flags&sim.FlagECT != 0 {
		return Mark
	}
	return Drop
}

// OnDequeue implements AQM.OnDequeue (§5.4).
func (a *CoDel) OnDequeue(_ *Switch, e *sim.Engine, pkt *sim.Packet, port, c int, sojourn sim.Time, behind int64) Verdict {
	return a.dequeue(&a.q[port*a.nc+c], e.Now(), pkt, sojourn, behind)
}

// dequeue is OnDequeue for queue q at time now.
func (a *CoDel) dequeue(q *codelQ, now sim.Time, pkt *sim.Packet, sojourn sim.Time, behind int64) Verdict {
	ok := a.okToDrop(q, now, pkt, sojourn, behind)
	switch q.pending {
	case loopDrop:
		// Still in the pseudocode's while loop, after a drop.
		q.pending = 0
		if !ok {
			q.dropping = false
			return Pass
		}
		q.dropNext = a.controlLaw(q.dropNext, q.count)
		return a.dropIfDue(q, now, pkt)
	case enterDrop:
		// The packet dequeued after the drop that entered the state
		// leaves whatever its test said (its test still ran).
		q.pending = 0
		if pkt == nil {
			q.dropping = false
		}
		return Pass
	}
	if pkt == nil {
		q.dropping = false
		return Pass
	}
	if q.dropping {
		if !ok {
			q.dropping = false
			return Pass
		}
		return a.dropIfDue(q, now, pkt)
	}
	if !ok {
		return Pass
	}
	// Enter the dropping state.
	v := a.signal(pkt)
	q.dropping = true
	delta := q.count - q.lastCount
	q.count = 1
	if delta > 1 && now-q.dropNext < 16*a.interval {
		q.count = delta
	}
	q.dropNext = a.controlLaw(now, q.count)
	q.lastCount = q.count
	if v == Drop {
		q.pending = enterDrop
	}
	return v
}

// dropIfDue drops (or marks) pkt when drop_next has come, in the
// dropping state.
func (a *CoDel) dropIfDue(q *codelQ, now sim.Time, pkt *sim.Packet) Verdict {
	if now < q.dropNext {
		return Pass
	}
	q.count++
	v := a.signal(pkt)
	if v == Mark {
		// The marked packet leaves: the loop ends with the next drop
		// scheduled (Linux codel_dequeue).
		q.dropNext = a.controlLaw(q.dropNext, q.count)
		return Mark
	}
	q.pending = loopDrop
	return Drop
}
