package sim

import "math/rand/v2"

// LinkID names one direction of a link. A full-duplex link between a and b is
// two LinkIDs, one per direction.
type LinkID int32

// LinkSpec is the requested state of one link direction.
type LinkSpec struct {
	From     ElemID
	To       ElemID
	FromPort int // the port of From that transmits onto this direction
	ToPort   int // the port of To at which packets arrive
	Rate     Bandwidth
	Delay    Time // propagation delay
	Impair   *Impairments
}

// Impairments are a link direction's faults. Every draw comes from the
// link's own random stream, and only impaired links draw.
type Impairments struct {
	// Loss is the probability that a packet is lost, independently.
	Loss float64
	// GE is a Gilbert-Elliott bursty loss channel, or nil.
	GE *GilbertElliott
	// Jitter adds a delay drawn uniformly from [0, Jitter] to each packet.
	// Packets may overtake each other, as with netem.
	Jitter Time
	// ReorderProb is the probability that a packet is held back by
	// ReorderDelay, so that the packets behind it overtake it.
	ReorderProb  float64
	ReorderDelay Time
	// Schedule holds changes of state during the run, sorted by At.
	Schedule []LinkChange
}

// GilbertElliott is the two-state bursty loss model: in state Good a packet
// is lost with probability LossGood, in Bad with LossBad; after each packet
// the state moves Good->Bad with probability P and Bad->Good with R. The mean
// burst length is 1/R packets.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
}

// ChangeKind is what a LinkChange does.
type ChangeKind uint8

const (
	// ChangeDown takes the link down: every packet on it or sent onto it
	// is lost. Kinds start at 1: the zero ChangeKind is not a change.
	ChangeDown ChangeKind = 1 + iota
	// ChangeUp brings it back.
	ChangeUp
	// ChangeRate sets the transmit rate.
	ChangeRate
	// ChangeDelay sets the propagation delay.
	ChangeDelay
	// ChangeLoss sets the independent loss probability.
	ChangeLoss
)

// LinkChange is one scheduled change of a link direction.
type LinkChange struct {
	At    Time
	Kind  ChangeKind
	Rate  Bandwidth // for ChangeRate
	Delay Time      // for ChangeDelay
	Loss  float64   // for ChangeLoss
}

// inflight is a packet on the wire of a FIFO link.
type inflight struct {
	at  Time
	seq uint64
	pkt PktRef
}

// LinkCounters are a link direction's loss statistics (Link counts the
// bytes it transmitted itself: TxBytes; switch ports and hosts count
// packets).
type LinkCounters struct {
	LostRandom uint64 // independent and Gilbert-Elliott losses
	LostDown   uint64 // losses while the link was down
	Reordered  uint64 // packets held back by the reordering impairment
}

// Link is the state of one link direction: the transmitter at From and the
// wire to To. Its first 64 bytes are what every transmission reads and
// writes, the next what an arrival reads (the wire); the rest is
// configuration and counters that the impairments alone touch. It is 192
// bytes, so that in the engine's array each Link starts a cache line.
type Link struct {
	busyUntil Time
	// lazySeq is the sequence number of the elided transmit-done of the
	// packet being serialised (Engine.TransmitLazy); 0: none pending.
	lazySeq uint64
	rate    Bandwidth
	delay   Time
	// psPerByte is the serialisation time of a byte at rate when it is a
	// whole number of picoseconds (every rate that divides 8 Tb/s: 1, 10,
	// 25, 40, 100, 200, 400, 800 Gb/s), else 0: a transmission then
	// multiplies instead of dividing (a 64-bit division is tens of cycles).
	psPerByte int64
	TxBytes   uint64
	from, to  ElemID
	remote    bool // To lives in another partition
	perPacket bool // jitter/reordering/delay changes: arrivals scheduled one by one
	// impaired: Spec.Impair is set (random draws, scheduled changes); a
	// link without it skips them all.
	impaired bool
	down     bool
	geBad    bool

	wire Ring[inflight]
	rng  *rand.Rand // nil unless impaired
	loss float64    // independent loss probability in force
	si   int32      // next scheduled change to apply (Spec.Impair.Schedule)
	// toPort is Spec.ToPort, beside the wire that an arrival reads
	// (Engine.ArrivalPort).
	toPort int32

	Spec LinkSpec
	LinkCounters
}

// exactPsPerByte is rate's serialisation time of a byte when it is a whole
// number of picoseconds, else 0.
func exactPsPerByte(rate Bandwidth) int64 {
	if rate <= 0 || int64(8*Second)%int64(rate) != 0 {
		return 0
	}
	return int64(8*Second) / int64(rate)
}

// txTime is rate.TxTime(size): exact by multiplication when psPerByte is
// set (TxTime rounds up, and there is nothing to round).
func (l *Link) txTime(size int32) Time {
	if l.psPerByte > 0 {
		return Time(int64(size) * l.psPerByte)
	}
	return l.rate.TxTime(int(size))
}

// Rate is the transmit rate in force at the last transmission.
func (l *Link) Rate() Bandwidth { return l.rate }

// Delay is the propagation delay in force at the last transmission.
func (l *Link) Delay() Time { return l.delay }

// BusyUntil is when the transmitter finishes its current packet.
func (l *Link) BusyUntil() Time { return l.busyUntil }

// Remote reports whether the far end lives in another partition.
func (l *Link) Remote() bool { return l.remote }

// advance applies scheduled changes with At <= now. Precondition:
// impaired.
func (l *Link) advance(now Time) {
	sched := l.Spec.Impair.Schedule
	for int(l.si) < len(sched) && sched[l.si].At <= now {
		c := &sched[l.si]
		switch c.Kind {
		case ChangeDown:
			l.down = true
		case ChangeUp:
			l.down = false
		case ChangeRate:
			l.rate = c.Rate
			l.psPerByte = exactPsPerByte(c.Rate)
		case ChangeDelay:
			l.delay = c.Delay
		case ChangeLoss:
			l.loss = c.Loss
		}
		l.si++
	}
}

// goesDownBy reports whether a scheduled change takes the link down at or
// before t (a packet still on the wire then is lost). Precondition:
// impaired.
func (l *Link) goesDownBy(t Time) bool {
	sched := l.Spec.Impair.Schedule
	for i := int(l.si); i < len(sched) && sched[i].At <= t; i++ {
		if sched[i].Kind == ChangeDown {
			return true
		}
	}
	return false
}

// lose draws the random-loss impairments for one packet.
func (l *Link) lose() bool {
	im := l.Spec.Impair
	lost := false
	if im.GE != nil {
		ge := im.GE
		p := ge.LossGood
		if l.geBad {
			p = ge.LossBad
		}
		if p > 0 && l.rng.Float64() < p {
			lost = true
		}
		if l.geBad {
			if l.rng.Float64() < ge.R {
				l.geBad = false
			}
		} else if l.rng.Float64() < ge.P {
			l.geBad = true
		}
	}
	if l.loss > 0 && l.rng.Float64() < l.loss {
		lost = true
	}
	return lost
}

// extraDelay draws the jitter and reordering impairments for one packet.
func (l *Link) extraDelay() Time {
	im := l.Spec.Impair
	var d Time
	if im.Jitter > 0 {
		d += Time(l.rng.Int64N(int64(im.Jitter) + 1))
	}
	if im.ReorderProb > 0 && l.rng.Float64() < im.ReorderProb {
		d += im.ReorderDelay
		l.Reordered++
	}
	return d
}
