package cc

import (
	"fmt"

	"github.com/lockstep-sim/lockstep/sim"
)

// HyStart is hybrid slow start: a detector that ends slow start before the
// first loss. It is its own type so that any congestion control can hold
// one; Cubic does. Seven variants are selectable (docs/hystart-variants.md
// tells their history and sources):
//
//   - "off": never exits slow start.
//   - "linux-2008": HyStart as merged in Linux 2.6.29 (commit ae27e98a5152,
//     "CUBIC v2.3", Sangtae Ha; Ha and Rhee, "Taming the Elephants: New
//     TCP Slow Start", 2008). Jiffies clock, HZ = 1000. ACK train: ACKs
//     closer than 2 ms extend the train, which ends slow start once it is
//     at least delay_min/2 long. Delay: the minimum of the first 8 RTT
//     samples of a round exceeds delay_min + clamp(delay_min/16, 2 ms,
//     16 ms).
//   - "proposal-2011": linux-2011's millisecond clock and sampling, with the
//     thresholds of the March 2011 netdev proposal as the issue states
//     them: the ACK train must reach 2*minRTT, and the delay exit also
//     needs the round's largest RTT sample to reach 2*minRTT.
//   - "linux-2011": after the 2011 fixes (Linux 2.6.39): bictcp_clock() in
//     milliseconds, hystart_ack_delta = 2 ms, the train must exceed
//     delay_min/2, and the delay threshold's floor HYSTART_DELAY_MIN is 4 ms
//     (commit 2b4636a5f8ca, "tcp_cubic: make the delay threshold of HyStart
//     less sensitive"): clamp(delay_min/16, 4 ms, 16 ms).
//   - "linux-2014": commit 42eef7a0bb09 ("tcp_cubic: refine Hystart delay
//     threshold", Linux 3.15): clamp(delay_min/8, 4 ms, 16 ms).
//   - "linux": today's net/ipv4/tcp_cubic.c (hystart_update,
//     hystart_ack_delay, cubictcp_acked): microsecond clock (2019 series
//     "tcp_cubic: switch bictcp_clock() to usec resolution"), ACK train
//     past (delay_min + hystart_ack_delay())/2, not halved when the flow is
//     paced; curr_rtt lowered by every sample of the round (commit
//     b344579ca8478, 2020); rounds restart inside hystart_update on
//     snd_una (commit 4e1fddc98d25, 2021) before the low-window test
//     (commit 25c1a9ca53db, 2025).
//   - "hystart++": RFC 9406 §4, with Conservative Slow Start (CSS).
//
// The classic variants keep their kernel's units: jiffies<<3 ("linux-2008"),
// milliseconds<<3 (the 2011 and 2014 variants) or microseconds ("linux"),
// so thresholds round exactly as the kernel's did. HyStart++ works in
// sim.Time.
//
// "linux-2008" has two clocks. By default (NewHyStart) it is HZ = 1000 with
// each RTT sample taken in microseconds and rounded up to whole jiffies, an
// approximation kept for the outputs that rest on it. NewHyStartHZ selects
// the clock of the kernels that ran it, 2.6.29 to 2.6.38 (jiffies.go): the
// kernel's HZ, and RTT samples that are differences of jiffies.
//
// Rounds: a round ends when the cumulative ACK passes (is after) the SndNxt
// recorded when the round began (Linux after(snd_una, end_seq); RFC 9406
// §4.2 "When windowEnd is ACKed").
//
// The zero value never exits slow start, like "off". HyStart is not safe
// for concurrent use.
type HyStart struct {
	variant HyStartVariant
	inited  bool
	// hz is the kernel's HZ of the jiffies model of "linux-2008", 0 for
	// the default approximation (see the type's comment).
	hz uint32

	// Classic (Linux) HyStart state, struct bictcp's hystart fields. Times
	// and RTTs are in the variant's clock units (see clock, rttUnits).
	found      bool   // ca->found: the exit point was found
	roundStart uint32 // ca->round_start: beginning of the round
	lastAck    uint32 // ca->last_ack: last ACK of the current train
	endSeq     uint64 // ca->end_seq: SndNxt when the round began
	currRTT    uint32 // ca->curr_rtt: the round's minimum RTT sample
	maxRTT     uint32 // proposal-2011: the round's maximum RTT sample
	sampleCnt  uint8  // ca->sample_cnt
	delayMin   uint32 // ca->delay_min in the variant's units, 0 = none

	// HyStart++ state (RFC 9406 §4.2). Invariant: cssBaseline != 0 iff in
	// CSS. 0 stands for "infinity" in the RTT fields.
	ppDone          bool     // HyStart++ no longer runs (loss, CA, RTO)
	windowEnd       uint64   // windowEnd
	lastRoundMinRTT sim.Time // lastRoundMinRTT, 0 = infinity
	currRoundMinRTT sim.Time // currentRoundMinRTT, 0 = infinity
	rttSampleCount  int      // rttSampleCount
	cssBaseline     sim.Time // cssBaselineMinRtt, 0 = infinity
	cssRounds       int      // CSS rounds begun, the partial first one included
	cssCredit       int64    // packets acknowledged in CSS not yet turned into cwnd
}

// HyStartVariant selects a HyStart algorithm.
type HyStartVariant uint8

// The zero HyStartVariant is invalid.
const (
	// HyStartOff never exits slow start early.
	HyStartOff HyStartVariant = 1 + iota
	// HyStartLinux2008 is Linux 2.6.29's HyStart.
	HyStartLinux2008
	// HyStartProposal2011 is the March 2011 netdev proposal.
	HyStartProposal2011
	// HyStartLinux2011 is HyStart after the 2011 fixes (4 ms floor).
	HyStartLinux2011
	// HyStartLinux2014 uses delay_min/8 (Linux 3.15).
	HyStartLinux2014
	// HyStartLinux is today's kernel.
	HyStartLinux
	// HyStartPlusPlus is RFC 9406.
	HyStartPlusPlus
)

// HyStartVariantNames lists the names ParseHyStartVariant accepts.
var HyStartVariantNames = []string{
	"off", "linux-2008", "proposal-2011", "linux-2011", "linux-2014", "linux", "hystart++",
}

func (v HyStartVariant) String() string {
	if v > 0 && int(v) <= len(HyStartVariantNames) {
		return HyStartVariantNames[v-1]
	}
	return "invalid"
}

// ParseHyStartVariant maps a name of HyStartVariantNames to its variant.
func ParseHyStartVariant(name string) (HyStartVariant, error) {
	for i, n := range HyStartVariantNames {
		if n == name {
			return HyStartVariant(i + 1), nil
		}
	}
	return 0, fmt.Errorf("hystart: unknown variant %q (known: %v)", name, HyStartVariantNames)
}

// HyStart constants, named as in net/ipv4/tcp_cubic.c and RFC 9406 §4.3.
const (
	// hystartMinSamples is HYSTART_MIN_SAMPLES: RTT samples per round before
	// the delay test runs.
	hystartMinSamples = 8
	// hystartLowWindow is hystart_low_window: HyStart runs only once cwnd
	// has reached 16 packets.
	hystartLowWindow = 16
	// hystartAckDeltaMs is hystart_ack_delta (2011-2019) and
	// msecs_to_jiffies(2) (2008): 2 ms between ACKs of a train.
	hystartAckDeltaMs = 2
	// hystartAckDeltaUs is hystart_ack_delta_us (today): 2000 us.
	hystartAckDeltaUs = 2000
	// hystartDelayMin2008 and hystartDelayMin2011 are HYSTART_DELAY_MIN in
	// ms<<3 units: 2 ms (2.6.29) and 4 ms (2011 on); hystartDelayMax is
	// HYSTART_DELAY_MAX, 16 ms.
	hystartDelayMin2008 = 2 << 3
	hystartDelayMin2011 = 4 << 3
	hystartDelayMax     = 16 << 3
	// hystartDelayMinUs and hystartDelayMaxUs are today's HYSTART_DELAY_MIN
	// and HYSTART_DELAY_MAX in microseconds.
	hystartDelayMinUs = 4000
	hystartDelayMaxUs = 16000
	// hystartGSOMaxSize is sk_gso_max_size as hystart_ack_delay() reads it:
	// GSO_LEGACY_MAX_SIZE, 65536 bytes.
	hystartGSOMaxSize = 65536

	// RFC 9406 §4.3 constants.
	hsppMinRTTThresh  = 4 * sim.Millisecond  // MIN_RTT_THRESH
	hsppMaxRTTThresh  = 16 * sim.Millisecond // MAX_RTT_THRESH
	hsppMinRTTDivisor = 8                    // MIN_RTT_DIVISOR
	hsppNRTTSample    = 8                    // N_RTT_SAMPLE
	hsppCSSGrowthDiv  = 4                    // CSS_GROWTH_DIVISOR
	hsppCSSRounds     = 5                    // CSS_ROUNDS
	hsppNonPacedLimit = 8                    // L if non-paced (infinity if paced), segments
)

// HyStartAck is one acknowledgement of new data as HyStart sees it.
type HyStartAck struct {
	Now sim.Time
	// RTT is the RTT sample the congestion control accepted for this ACK,
	// 0 if none.
	RTT sim.Time
	// SndUna and SndNxt are the sequence state after the ACK.
	SndUna, SndNxt uint64
	// Cwnd is the congestion window in packets before this ACK's growth.
	Cwnd int64
	// InSlowStart: cwnd < ssthresh (Linux tcp_in_slow_start).
	InSlowStart bool
	// Paced: the sender paces (Linux sk_pacing_status != SK_PACING_NONE).
	Paced bool
	// PacingRate is the sender's pacing rate in bytes per second as the
	// kernel keeps it in sk_pacing_rate (set even when not pacing); 0 if
	// unknown. Only "linux" uses it, for the TSO/GRO cushion.
	PacingRate int64
}

// HyStartEvent is what HyStart concluded from an ACK.
type HyStartEvent uint8

const (
	// HyStartNone: nothing changes.
	HyStartNone HyStartEvent = 1 + iota
	// HyStartExitAckTrain: the ACK train test found the exit point; the
	// congestion control sets ssthresh = cwnd.
	HyStartExitAckTrain
	// HyStartExitDelay: the delay test found the exit point; ssthresh = cwnd.
	HyStartExitDelay
	// HyStartCSSEntry: HyStart++ left standard slow start for CSS.
	HyStartCSSEntry
	// HyStartCSSResume: the RTT fell below the CSS baseline, standard slow
	// start resumes (RFC 9406 §4.2).
	HyStartCSSResume
	// HyStartCSSExit: CSS_ROUNDS rounds of CSS are over; the congestion
	// control sets ssthresh = cwnd and enters congestion avoidance.
	HyStartCSSExit
)

var hyStartEventNames = [...]string{"none", "ack-train", "delay", "css-entry", "css-resume", "css-exit"}

func (e HyStartEvent) String() string {
	if e > 0 && int(e) <= len(hyStartEventNames) {
		return hyStartEventNames[e-1]
	}
	return fmt.Sprintf("HyStartEvent(%d)", uint8(e))
}

// NewHyStart returns a HyStart of variant v.
func NewHyStart(v HyStartVariant) HyStart { return HyStart{variant: v} }

// NewHyStartHZ returns a HyStart of variant v on the jiffies clock of a
// kernel built with the given HZ (jiffies.go). Only "linux-2008" has such
// a clock; hz must be one of HyStartHZValues.
func NewHyStartHZ(v HyStartVariant, hz int) (HyStart, error) {
	if err := checkHyStartHZ(v, hz); err != nil {
		return HyStart{}, err
	}
	return HyStart{variant: v, hz: uint32(hz)}, nil
}

// HZ is the kernel HZ of the jiffies model, 0 when it is not in use.
func (h *HyStart) HZ() int { return int(h.hz) }

// Variant is the selected variant.
func (h *HyStart) Variant() HyStartVariant { return h.variant }

// InCSS reports whether HyStart++ is in Conservative Slow Start.
func (h *HyStart) InCSS() bool { return h.cssBaseline != 0 }

// Found reports whether a classic variant has found its exit point since
// the last Restart (ca->found).
func (h *HyStart) Found() bool { return h.found }

// GrowthBeforeDetection reports the order of the per-ACK work. The Linux
// variants run detection first: tcp_ack calls pkts_acked (cubictcp_acked,
// hystart_update) from tcp_clean_rtx_queue before cong_avoid. RFC 9406
// §4.2 grows cwnd first, then tracks the RTT and tests.
func (h *HyStart) GrowthBeforeDetection() bool { return h.variant == HyStartPlusPlus }

// clock is the variant's clock at now (Linux u32 wrap-around arithmetic).
func (h *HyStart) clock(now sim.Time) uint32 {
	switch h.variant {
	case HyStartLinux2008:
		if h.hz != 0 {
			return jiffiesHZ(now, h.hz)
		}
		return jiffies32(now) // 2.6.29 used jiffies
	case HyStartLinux:
		return uint32(now / sim.Microsecond) // bictcp_clock_us: tcp_mstamp
	default:
		// 2011-2019 bictcp_clock(): jiffies_to_msecs(jiffies) for HZ >= 1000.
		return uint32(now / sim.Millisecond)
	}
}

// delaySample turns an RTT into the variant's delay units, as each
// kernel's bictcp_acked did ("if (delay == 0) delay = 1"). ok is false when
// the kernel had no sample: on the jiffies clock, an RTT that did not
// cross a tick (tcp_clean_rtx_queue: "else if (ca_seq_rtt > 0)").
func (h *HyStart) delaySample(now, rtt sim.Time) (d uint32, ok bool) {
	if h.hz != 0 {
		return jiffiesDelaySample(now, rtt, h.hz)
	}
	us := uint32(rtt / sim.Microsecond) // sample->rtt_us
	switch h.variant {
	case HyStartLinux2008:
		d = usecsToJiffies(us) << 3 // usecs_to_jiffies(rtt_us) << 3
	case HyStartLinux:
		d = us
	default:
		d = (us << 3) / 1000 // (rtt_us << 3) / USEC_PER_MSEC
	}
	return max(d, 1), true
}

// reset starts a round: bictcp_hystart_reset.
func (h *HyStart) reset(now sim.Time, sndNxt uint64) {
	h.roundStart = h.clock(now)
	h.lastAck = h.roundStart
	h.endSeq = sndNxt
	if h.variant == HyStartLinux {
		h.currRTT = ^uint32(0) // today's kernel starts at ~0U
	} else {
		h.currRTT = 0 // older kernels: 0 means "no sample yet"
	}
	h.maxRTT = 0
	h.sampleCnt = 0
}

func (h *HyStart) lazyInit(now sim.Time) {
	if !h.inited {
		// cubictcp_init calls bictcp_hystart_reset when the connection
		// starts; SndNxt is then the first data byte, 0 here.
		h.inited = true
		h.reset(now, 0)
	}
}

// Restart is what an RTO does (cubictcp_state(TCP_CA_Loss)): bictcp_reset
// clears found and delay_min, bictcp_hystart_reset starts a round at
// sndNxt. HyStart++ does not run again (RFC 9406 §4.2: only the initial
// slow start uses it).
func (h *HyStart) Restart(now sim.Time, sndNxt uint64) {
	h.inited = true
	h.found = false
	h.delayMin = 0
	h.reset(now, sndNxt)
	h.endPlusPlus()
}

// OnCongestion ends HyStart++ after a loss or an ECN mark during slow start
// or CSS (RFC 9406 §4.2); the classic variants are unaffected.
func (h *HyStart) OnCongestion() { h.endPlusPlus() }

func (h *HyStart) endPlusPlus() {
	h.ppDone = true
	h.cssBaseline = 0
	h.cssRounds = 0
	h.cssCredit = 0
}

// SlowStart grows cwnd (packets) for acked packets below ssthresh and
// returns the new cwnd and the packets left over for congestion avoidance:
// Linux tcp_slow_start, except while HyStart++ runs, where RFC 9406 §4.2
// applies: cwnd += min(N, L) in standard slow start and
// min(N, L)/CSS_GROWTH_DIVISOR in CSS (the remainder of the division is
// carried to the next ACK, so no acknowledged packet is lost to rounding).
//
// Preconditions: cwnd < ssthresh.
func (h *HyStart) SlowStart(cwnd, ssthresh, acked uint32, paced bool) (uint32, uint32) {
	if h.variant == HyStartPlusPlus && !h.ppDone {
		inc := acked
		if !paced && inc > hsppNonPacedLimit {
			inc = hsppNonPacedLimit // L = 8 if non-paced (§4.3)
		}
		if h.InCSS() {
			h.cssCredit += int64(inc)
			inc = uint32(h.cssCredit / hsppCSSGrowthDiv)
			h.cssCredit %= hsppCSSGrowthDiv
		}
		acked = inc
	}
	// tcp_slow_start: cwnd = min(cwnd + acked, ssthresh); acked -= growth.
	next := uint32(min(uint64(cwnd)+uint64(acked), uint64(ssthresh)))
	return next, acked - (next - cwnd)
}

// OnSlowStartAck is the round bookkeeping the 2008-2020 kernels did in
// bictcp_cong_avoid, for a cwnd-limited ACK in slow start, after
// hystart_update ran for it: "if (hystart && after(ack, ca->end_seq))
// bictcp_hystart_reset(sk)". Today's kernel and HyStart++ track rounds in
// OnAck instead; for them it does nothing.
func (h *HyStart) OnSlowStartAck(now sim.Time, sndUna, sndNxt uint64) {
	switch h.variant {
	case HyStartLinux2008, HyStartProposal2011, HyStartLinux2011, HyStartLinux2014:
		h.lazyInit(now)
		if sndUna > h.endSeq {
			h.reset(now, sndNxt)
		}
	default:
		// linux (5.x and later) and HyStart++ start their rounds in
		// OnAck; off has none.
	}
}

// OnAck processes one ACK of new data. The caller calls it for every such
// ACK, with RTT = 0 when it has no accepted sample, and applies the
// returned event.
func (h *HyStart) OnAck(a *HyStartAck) HyStartEvent {
	switch h.variant {
	case HyStartOff, 0:
		return HyStartNone
	case HyStartPlusPlus:
		return h.onAckPlusPlus(a)
	default:
		// The Linux variants: below.
	}
	if a.RTT <= 0 {
		return HyStartNone // cubictcp_acked: "if (sample->rtt_us < 0) return"
	}
	h.lazyInit(a.Now)
	delay, ok := h.delaySample(a.Now, a.RTT)
	if !ok {
		return HyStartNone // pkts_acked got rtt_us = -1
	}
	// cubictcp_acked: "first time call or link delay decreases".
	if h.delayMin == 0 || h.delayMin > delay {
		h.delayMin = delay
	}
	if h.variant == HyStartLinux {
		// cubictcp_acked (2025): "if (!ca->found && tcp_in_slow_start(tp)
		// && hystart) hystart_update(sk, delay)"; the low-window test is
		// inside hystart_update, after the round bookkeeping.
		if h.found || !a.InSlowStart {
			return HyStartNone
		}
		return h.updateLinux(a, delay)
	}
	// 2008-2019 bictcp_acked: "if (hystart && tcp_in_slow_start(tp) &&
	// tp->snd_cwnd >= hystart_low_window) hystart_update(sk, delay)", and
	// hystart_update starts with "if (ca->found & hystart_detect) return".
	if !a.InSlowStart || a.Cwnd < hystartLowWindow || h.found {
		return HyStartNone
	}
	return h.updateClassic(a, delay)
}

// updateLinux is today's hystart_update.
func (h *HyStart) updateLinux(a *HyStartAck, delay uint32) HyStartEvent {
	if a.SndUna > h.endSeq { // after(tp->snd_una, ca->end_seq)
		h.reset(a.Now, a.SndNxt)
	}
	if a.Cwnd < hystartLowWindow {
		return HyStartNone
	}
	now := h.clock(a.Now)
	// HYSTART_ACK_TRAIN: "first detection parameter - ack-train detection".
	if int32(now-h.lastAck) <= hystartAckDeltaUs {
		h.lastAck = now
		threshold := h.delayMin + hystartAckDelayUs(a.PacingRate)
		// "Hystart ack train triggers if we get ack past ca->delay_min/2.
		// Pacing might have delayed packets up to RTT/2 during slow start."
		if !a.Paced {
			threshold >>= 1
		}
		// C compares (s32)(now - round_start) with the u32 threshold as
		// unsigned.
		if now-h.roundStart > threshold {
			h.found = true
			return HyStartExitAckTrain
		}
	}
	// HYSTART_DELAY: curr_rtt is the minimum of every sample of the round.
	if h.currRTT > delay {
		h.currRTT = delay
	}
	if h.sampleCnt < hystartMinSamples {
		h.sampleCnt++
		return HyStartNone
	}
	if h.currRTT > h.delayMin+clampU32(h.delayMin>>3, hystartDelayMinUs, hystartDelayMaxUs) {
		h.found = true
		return HyStartExitDelay
	}
	return HyStartNone
}

// hystartAckDelayUs is hystart_ack_delay(): the expected delay of two
// GSO_LEGACY_MAX_SIZE bursts at the pacing rate, doubled because the rate
// is doubled in slow start, capped at 1 ms; 0 without a rate.
func hystartAckDelayUs(rate int64) uint32 {
	if rate <= 0 {
		return 0
	}
	return uint32(min(1000, hystartGSOMaxSize*4*1_000_000/rate))
}

// updateClassic is hystart_update as of 2008 (2.6.29), 2011 (2.6.39) and
// 2014 (3.15), and the 2011 proposal.
func (h *HyStart) updateClassic(a *HyStartAck, delay uint32) HyStartEvent {
	now := h.clock(a.Now)
	ev := HyStartNone
	// ACK train.
	switch h.variant {
	case HyStartLinux2008:
		// "if (curr_jiffies - ca->last_jiffies <= msecs_to_jiffies(2))
		// { ...; if (curr_jiffies - ca->round_start >= ca->delay_min>>4)
		// ca->found |= HYSTART_ACK_TRAIN; }" (unsigned arithmetic).
		if now-h.lastAck <= h.ackDelta2008() {
			h.lastAck = now
			if now-h.roundStart >= h.delayMin>>4 {
				ev = HyStartExitAckTrain
			}
		}
	case HyStartProposal2011:
		// The train must reach 2*minRTT: delay_min is ms<<3, so 2*minRTT
		// in ms is delay_min>>2.
		if int32(now-h.lastAck) <= hystartAckDeltaMs {
			h.lastAck = now
			if now-h.roundStart >= h.delayMin>>2 {
				ev = HyStartExitAckTrain
			}
		}
	default:
		// 2011-2019: "if ((s32)(now - ca->last_ack) <= hystart_ack_delta)
		// { ...; if ((s32)(now - ca->round_start) > ca->delay_min >> 4)";
		// the second comparison is unsigned in C (u32 delay_min).
		if int32(now-h.lastAck) <= hystartAckDeltaMs {
			h.lastAck = now
			if now-h.roundStart > h.delayMin>>4 {
				ev = HyStartExitAckTrain
			}
		}
	}
	// Delay: "obtain the minimum delay of more than sampling packets".
	h.maxRTT = max(h.maxRTT, delay)
	if h.sampleCnt < hystartMinSamples {
		if h.currRTT == 0 || h.currRTT > delay {
			h.currRTT = delay
		}
		h.sampleCnt++
	} else if ev == HyStartNone && h.delayExceeded() {
		ev = HyStartExitDelay
	}
	if ev != HyStartNone {
		h.found = true
	}
	return ev
}

// delayExceeded is the classic delay test on curr_rtt.
func (h *HyStart) delayExceeded() bool {
	switch h.variant {
	case HyStartLinux2008:
		// HYSTART_DELAY_THRESH(ca->delay_min>>4), DELAY_MIN = 2U<<3.
		return h.currRTT > h.delayMin+clampU32(h.delayMin>>4, hystartDelayMin2008, hystartDelayMax)
	case HyStartLinux2011:
		// HYSTART_DELAY_THRESH(ca->delay_min>>4), DELAY_MIN = 4U<<3.
		return h.currRTT > h.delayMin+clampU32(h.delayMin>>4, hystartDelayMin2011, hystartDelayMax)
	case HyStartProposal2011:
		// linux-2011's test, and the round's largest sample must have
		// reached 2*minRTT.
		return h.currRTT > h.delayMin+clampU32(h.delayMin>>4, hystartDelayMin2011, hystartDelayMax) &&
			h.maxRTT >= 2*h.delayMin
	default:
		// linux-2014: HYSTART_DELAY_THRESH(ca->delay_min >> 3).
		return h.currRTT > h.delayMin+clampU32(h.delayMin>>3, hystartDelayMin2011, hystartDelayMax)
	}
}

// onAckPlusPlus is RFC 9406 §4.2. The RTT sample of the ACK that ends a
// round counts in that round; the round then rotates.
func (h *HyStart) onAckPlusPlus(a *HyStartAck) HyStartEvent {
	if h.ppDone || !a.InSlowStart {
		return HyStartNone
	}
	ev := HyStartNone
	if a.RTT > 0 {
		// "Keep track of the minimum observed RTT".
		if h.currRoundMinRTT == 0 || a.RTT < h.currRoundMinRTT {
			h.currRoundMinRTT = a.RTT
		}
		h.rttSampleCount++
		if h.rttSampleCount >= hsppNRTTSample {
			if h.InCSS() {
				// "check to see if the current round's minRTT drops
				// below baseline ... indicating that slow start exit
				// was spurious": resume slow start.
				if h.currRoundMinRTT < h.cssBaseline {
					h.cssBaseline = 0
					h.cssRounds = 0
					h.cssCredit = 0
					ev = HyStartCSSResume
				}
			} else if h.lastRoundMinRTT != 0 {
				// RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT /
				// MIN_RTT_DIVISOR, MAX_RTT_THRESH)).
				thresh := max(hsppMinRTTThresh, min(h.lastRoundMinRTT/hsppMinRTTDivisor, hsppMaxRTTThresh))
				if h.currRoundMinRTT >= h.lastRoundMinRTT+thresh {
					h.cssBaseline = h.currRoundMinRTT
					// "If the transition into CSS happens in the middle
					// of a round, that partial round counts".
					h.cssRounds = 1
					ev = HyStartCSSEntry
				}
			}
		}
	}
	// Rounds: "When windowEnd is ACKed, the current round ends and
	// windowEnd is set to SND.NXT."
	if a.SndUna > h.windowEnd {
		h.windowEnd = a.SndNxt
		h.lastRoundMinRTT = h.currRoundMinRTT
		h.currRoundMinRTT = 0
		h.rttSampleCount = 0
		if h.InCSS() {
			if h.cssRounds >= hsppCSSRounds {
				// "If CSS_ROUNDS rounds are complete, enter congestion
				// avoidance by setting the ssthresh to the current cwnd."
				h.endPlusPlus()
				return HyStartCSSExit
			}
			h.cssRounds++
		}
	}
	return ev
}

// clampU32 is the kernel's clamp(x, lo, hi).
func clampU32(x, lo, hi uint32) uint32 { return min(max(x, lo), hi) }
