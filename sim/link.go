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
// wire to To. Its first 64 bytes are what every transmission and arrival
// reads and writes (the transmitter, and where the wire's packets are:
// Engine.slots); the next what impairments and readers of the rate touch;
// the last the configuration. It is 192 bytes, so that in the engine's
// array each Link starts a cache line.
type Link struct {
	busyUntil Time
	// lazySeq is the sequence number of the elided transmit-done of the
	// packet being serialised (Engine.TransmitLazy); 0: none pending.
	lazySeq uint64
	delay   Time
	// psPerByte is the serialisation time of a byte at rate when it is a
	// whole number of picoseconds (every rate that divides 8 Tb/s: 1, 10,
	// 25, 40, 100, 200, 400, 800 Gb/s), else 0: a transmission then
	// multiplies instead of dividing (a 64-bit division is tens of cycles).
	psPerByte int64
	TxBytes   uint64
	from, to  ElemID
	// toPort is Spec.ToPort, which an arrival reads (Engine.ArrivalPort).
	toPort int32
	// The FIFO wire: its first wireSlots packets in the engine's slots
	// from slot on, a ring of wn entries from wh; the packets behind them,
	// if any, in spill (then wn is wireSlots).
	slot      int32
	wh, wn    uint8
	remote    bool // To lives in another partition
	perPacket bool // jitter/reordering/delay changes: arrivals scheduled one by one
	// impaired: Spec.Impair is set (random draws, scheduled changes); a
	// link without it skips them all.
	impaired bool

	rate  Bandwidth
	spill *Ring[inflight] // nil until a wire holds more than wireSlots packets
	rng   *rand.Rand      // nil unless impaired
	loss  float64         // independent loss probability in force
	si    int32           // next scheduled change to apply (Spec.Impair.Schedule)
	down  bool
	geBad bool
	LinkCounters

	Spec LinkSpec
	_    [16]byte // to 192 bytes: in the engine's array each Link starts a line
}

// wireSlots is how many packets of a wire the engine keeps in its slots,
// beside the other wires' (a power of two; 8 entries are 192 bytes, three
// lines): at 100 Gb/s and 1 us a wire holds three or four 4 KB packets
// and the ACKs of the other direction's flows. With 8, 0.1% of the
// packets of the k=48 16 KB permutation and 5.7% of the k=16 1 MB one
// went to the spill; with 4, 12.7% and 54%.
const wireSlots = 8

// wireLen is the number of packets on the wire.
func (l *Link) wireLen() int {
	if l.spill != nil {
		return int(l.wn) + l.spill.Len()
	}
	return int(l.wn)
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
