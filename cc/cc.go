// Package cc holds lockstep's congestion-control and loss-recovery modules.
// Each is a pure state machine: time and events come in as arguments,
// decisions and deadlines go out; nothing here reads a clock, starts a
// goroutine or reaches into the host that owns it (docs/style.md §3a).
//
// Two families are kept apart, as in gVisor's tcp/snd.go:
//   - a Controller owns cwnd and ssthresh (Reno, CUBIC, Scalable, DCTCP,
//     STrack);
//   - a Recovery owns the send sequence space: which bytes are in flight,
//     which are presumed lost, the estimate of bytes in the network (pipe),
//     and what to send next (Reno, NewReno, SACK, RACK-TLP, STrack).
//
// An Endpoint (endpoint.go) glues them for one flow: on each ACK it asks
// the Recovery what the ACK means, tells the Controller, and then sends
// while pipe < cwnd. Retransmission timeouts are an RTO estimator (rto.go).
// The host and `lockstep cc trace` both drive an Endpoint.
//
// Windows are counted in bytes; a segment is MSS payload bytes.
package cc

import (
	"github.com/lockstep-sim/lockstep/sim"
)

// CongestionKind says why a Controller must reduce its window.
type CongestionKind uint8

// The zero CongestionKind is invalid.
const (
	// CongLoss: loss detected by duplicate ACKs or SACK; fast recovery
	// begins (RFC 5681 §3.2 step 2).
	CongLoss CongestionKind = 1 + iota
	// CongECN: the receiver echoed a CE mark (RFC 3168 §6.1.2): reduce as
	// for a loss, at most once per window, without retransmitting.
	CongECN
	// CongRTO: the retransmission timer expired (RFC 5681 §3.1, eq. 4).
	CongRTO
)

func (k CongestionKind) String() string {
	switch k {
	case CongLoss:
		return "loss"
	case CongECN:
		return "ecn"
	case CongRTO:
		return "rto"
	}
	return "invalid"
}

// AckEvent tells a Controller what one ACK did.
type AckEvent struct {
	Now sim.Time
	// Acked is the number of bytes newly acknowledged, cumulatively or by
	// SACK. It is zero for a duplicate ACK.
	Acked int64
	// PriorInFlight is the bytes in flight (pipe) before this ACK.
	PriorInFlight int64
	// RTT is the round-trip sample this ACK gave, 0 if none.
	RTT sim.Time
	// Delay is now minus the timestamp the ACK echoes, whether or not it
	// gave an RTT sample (0: it echoes none): htsim's per-ACK delay.
	Delay sim.Time
	// MinRTT is the smallest RTT sample of the connection so far.
	MinRTT sim.Time
	// ECE reports that the ACK echoes a congestion-experienced mark.
	ECE bool
	// InRecovery: the sender is in fast recovery or loss recovery, so the
	// window must not grow (RFC 5681 §3.2; Linux tcp_may_raise_cwnd).
	InRecovery bool
	// MSS is the sender's maximum segment size in bytes.
	MSS int64
	// SndUna and SndNxt are the sequence state after this ACK (HyStart
	// ends its rounds when SndUna passes the SndNxt of the round's start).
	SndUna, SndNxt uint64
	// Delivered is the total bytes acknowledged so far (cumulative and
	// SACKed), this ACK included.
	Delivered int64
	// CwndLimited: the sender had data to send and was stopped by cwnd
	// since the previous ACK (Linux tcp_is_cwnd_limited).
	CwndLimited bool
	// Paced: the sender paces its packets (Linux HyStart does not halve its
	// ACK-train threshold then).
	Paced bool
	// Tel is the ACK's telemetry: the INT records it echoes (HPCC) and the
	// endpoint delay (Swift); nil when the run keeps none.
	Tel *sim.Telemetry
	// InFlight is the bytes in flight (pipe) after this ACK (NSCC's quick
	// adapt remembers it, uec.cpp quick_adapt _bytes_to_ignore).
	InFlight int64
}

// CongestionEvent tells a Controller to reduce its window.
type CongestionEvent struct {
	Now  sim.Time
	Kind CongestionKind
	// FlightSize is the bytes sent and not yet cumulatively acknowledged
	// (RFC 5681's FlightSize), at the moment of the event.
	FlightSize int64
	MSS        int64
}

// Controller is a congestion-control algorithm. It owns cwnd and ssthresh.
type Controller interface {
	// OnAck is called for every ACK, new data or duplicate.
	OnAck(ev *AckEvent)
	// OnCongestion sets ssthresh and cwnd when congestion is detected.
	OnCongestion(ev *CongestionEvent)
	// OnRecoveryExit is called when fast recovery ends with a full ACK: the
	// window deflates to ssthresh (RFC 5681 §3.2 step 6).
	OnRecoveryExit(now sim.Time)
	// Cwnd is the congestion window in bytes.
	Cwnd() int64
	// Ssthresh is the slow-start threshold in bytes.
	Ssthresh() int64
}

// AckInfo is what a Recovery learns from one ACK packet.
type AckInfo struct {
	Now sim.Time
	// Ack is the cumulative acknowledgement: every byte below it arrived.
	Ack uint64
	// Sack holds SACK blocks (RFC 2018), if the receiver sends them.
	Sack []sim.SackBlock
	// DupCandidate: the ACK carries no data and no window update, so it
	// can count as a duplicate (RFC 5681 §2's definition).
	DupCandidate bool
	// Echo is the first byte of the data packet this ACK answers; EchoValid
	// says the receiver reports it (per-packet ACKs, as STrack's do).
	Echo      uint64
	EchoValid bool
	// Nack: the ACK carries STrack's received bitmap. Bit i of Bitmap is
	// set when segment (Ack/MSS)+i has arrived (bit 0, the next expected
	// segment, is always clear).
	Nack   bool
	Bitmap uint64
	// Nak: the ACK is a RoCE NAK (sequence error): Ack is the receiver's
	// expected sequence number, and with selective repeat Sack names the
	// out-of-order packet that triggered it (RoCERecovery).
	Nak bool
	// Trimmed: a trim NACK. A switch cut the data packet whose first byte
	// is Echo to its header (NDP packet trimming), in its transmission
	// sent at TSecr; the receiver says so at once. Only with EchoValid.
	// The packet did not arrive: Echo is not acknowledged.
	Trimmed bool
	// RTTInfo holds the sender's estimates after this ACK's sample and
	// the RTO deadline before the ACK restarts it (RACK's inputs).
	RTTInfo
	// TSecr is the timestamp the ACK echoes (RFC 7323), 0 if none (RACK,
	// RFC 8985 §6.2 step 2).
	TSecr sim.Time
}

// RTTInfo is what the sender knows of the path's timing, handed to the
// Recovery with every event (RACK's reordering window and TLP's probe
// timeout use it; other recoveries ignore it).
type RTTInfo struct {
	SRTT, MinRTT sim.Time
	// RTODeadline is when the retransmission timer expires; 0 or
	// sim.Never: it is not armed (TLP caps its probe timer at it, RFC 8985
	// §7.2). On an ACK that advances SndUna it is the expiry as that ACK
	// restarts it (RFC 6298 §5.3), not the one before the ACK.
	RTODeadline sim.Time
}

// SeqState is a Recovery's sequence state after an event. Every event
// method returns it, so the sender keeps it instead of asking after every
// ACK and segment.
type SeqState struct {
	// Una is the oldest unacknowledged byte (SND.UNA); Nxt the next byte
	// to send for the first time (or again after an RTO).
	Una, Nxt uint64
	// Pipe is the estimate of bytes in the network (RFC 6675 §4).
	Pipe int64
	// Flight is Nxt-Una, RFC 5681's FlightSize.
	Flight int64
	// InRecovery: fast recovery (or a loss episode) is in progress.
	InRecovery bool
	// Deadline is when the Recovery's own timer expires (RACK's reordering
	// timer, TLP's probe timeout); sim.Never for none.
	Deadline sim.Time
}

// AckVerdict is what a Recovery concluded from an ACK.
type AckVerdict struct {
	// Acked is the bytes newly acknowledged (cumulative plus SACKed).
	Acked int64
	// AdvancedUna: the cumulative ACK moved forward.
	AdvancedUna bool
	// Dup: the ACK was counted as a duplicate.
	Dup bool
	// EnterRecovery: loss was detected and fast recovery begins now.
	EnterRecovery bool
	// ExitRecovery: fast recovery ended with this ACK.
	ExitRecovery bool
	// LossFlightSize, when EnterRecovery is set and it is positive, is the
	// FlightSize to use in RFC 5681 eq. 4: data sent by limited transmit
	// is not part of it (§3.2 step 2). 0 means FlightSize().
	LossFlightSize int64
	// TimedOut is the payload a recovery's per-packet timers declared lost
	// (OnDeadline of a recovery that owns its timeouts, UET's): the
	// endpoint tells the controller (TimeoutReactor, else CongRTO) and
	// the path manager.
	TimedOut int64
	// SeqState is the sequence state after the ACK.
	SeqState
}

// Segment is a run of payload bytes [Seq, Seq+Len).
type Segment struct {
	Seq uint64
	Len int64
	// Retx: some of these bytes were sent before.
	Retx bool
	// Force: send even if the window is full (the fast retransmission of
	// RFC 5681 §3.2 step 2, RFC 6675 §5 (4.3)).
	Force bool
	// Entropy is the entropy the packet carries, set by the endpoint in
	// OnSent before the Recovery records it (UET's recovery keeps it to
	// tell the path manager which path a timed-out packet took).
	Entropy uint16
}

// Recovery owns the sender's sequence space and loss detection. Its event
// methods return the sequence state after the event.
type Recovery interface {
	// OnSent records that seg left at now.
	OnSent(now sim.Time, seg Segment, rtt RTTInfo) SeqState
	// OnAck processes an ACK.
	OnAck(ai *AckInfo) AckVerdict
	// OnRTO marks everything outstanding lost: sending resumes at SndUna
	// (go-back-N, RFC 5681 §3.1 / RFC 6298 §5.4).
	OnRTO(now sim.Time, rtt RTTInfo) SeqState
	// Next returns the next segment to send, retransmissions first. ok is
	// false when there is nothing to send. It does not change the state.
	Next() (seg Segment, ok bool)
	// State is the current sequence state (before the first event).
	State() SeqState
}

// SeqSpace is the part of the sequence state every Recovery shares: the
// flow's bytes [0, End), split into segments of at most MSS bytes.
//
// Invariant: SndUna <= SndNxt <= End and SndNxt <= HighSent.
type SeqSpace struct {
	MSS      int64
	End      uint64 // flow length in bytes
	Una      uint64 // oldest unacknowledged byte
	Nxt      uint64 // next byte to send
	HighSent uint64 // highest byte ever sent + 1 (marks retransmissions)
}

// nextNew returns the next segment starting at Nxt, if any.
func (s *SeqSpace) nextNew() (Segment, bool) {
	if s.Nxt >= s.End {
		return Segment{}, false
	}
	n := int64(s.End - s.Nxt)
	if n > s.MSS {
		n = s.MSS
	}
	return Segment{Seq: s.Nxt, Len: n, Retx: s.Nxt < s.HighSent}, true
}

// cumAck is the cumulative-ACK advance every Recovery shares (RFC 5681
// §2, RFC 6675's HighACK): Una moves to ack, capped at HighSent, and Nxt
// catches up when the receiver had more than was resent after a
// go-back-N. It returns the bytes newly acknowledged cumulatively, 0 when
// ack moves nothing.
func (s *SeqSpace) cumAck(ack uint64) int64 {
	ack = min(ack, s.HighSent)
	if ack <= s.Una {
		return 0
	}
	n := int64(ack - s.Una)
	s.Una = ack
	if s.Nxt < s.Una {
		s.Nxt = s.Una // after go-back-N the receiver had more than we resent
	}
	return n
}

// FlightSize is SndNxt-SndUna, the bytes sent and not acknowledged.
func (s *SeqSpace) FlightSize() int64 { return int64(s.Nxt - s.Una) }

// SndUna is the oldest unacknowledged byte.
func (s *SeqSpace) SndUna() uint64 { return s.Una }

// SndNxt is the next byte to send for the first time (or again after an
// RTO).
func (s *SeqSpace) SndNxt() uint64 { return s.Nxt }

// state is the SeqState with the Recovery's pipe, recovery flag and timer.
func (s *SeqSpace) state(pipe int64, inRecovery bool, deadline sim.Time) SeqState {
	return SeqState{Una: s.Una, Nxt: s.Nxt, Pipe: pipe, Flight: int64(s.Nxt - s.Una),
		InRecovery: inRecovery, Deadline: deadline}
}

// pktLen is the payload of packet idx, the segment at idx×MSS (the
// per-packet recoveries, STrack's and UET's, index their scoreboards so).
func (s *SeqSpace) pktLen(idx int64) int64 {
	start := uint64(idx) * uint64(s.MSS)
	return int64(min(uint64(s.MSS), s.End-start))
}

// sent advances Nxt and HighSent past seg when seg was new data.
func (s *SeqSpace) sent(seg Segment) {
	if e := seg.Seq + uint64(seg.Len); seg.Seq == s.Nxt {
		s.Nxt = e
		if e > s.HighSent {
			s.HighSent = e
		}
	}
}

// TimedRecovery is a Recovery with timers of its own (RACK's reordering
// timer, TLP's probe timeout): SeqState.Deadline says when the sender must
// call OnDeadline (sim.Never: no timer).
type TimedRecovery interface {
	Recovery
	// OnDeadline runs the timers due at now. Its verdict has EnterRecovery
	// set when a timer detected loss, so the controller can react at once.
	OnDeadline(now sim.Time, rtt RTTInfo) AckVerdict
}

// Observer is read-only introspection for traces (cwnd.csv, cc trace).
// Modules implement what they can; the zero value means "not applicable".
type Observer interface {
	// State is the controller's state (StateSlowStart, ...); 0 when it
	// has none to report.
	State() CongState
}

// SlowStartExit is implemented by controllers that can say why slow start
// ended (HyStart's ACK-train or delay test, CSS entry, loss, ...). It
// returns "" while in slow start or when there is nothing to report.
type SlowStartExit interface {
	SlowStartExitReason() string
}

// LossFlight is the FlightSize for eq. 4 of RFC 5681 at the start of fast
// recovery: the verdict's, when the Recovery gave one, else flight.
func LossFlight(v AckVerdict, flight int64) int64 {
	if v.LossFlightSize > 0 {
		return v.LossFlightSize
	}
	return flight
}
