package cc

import (
	"fmt"
	"math/bits"

	"github.com/lockstep-sim/lockstep/sim"
)

// The jiffies clock of the kernels that ran HyStart first, 2.6.29 to
// 2.6.38, for "linux-2008" with a kernel HZ (NewHyStartHZ). What was in
// jiffies there, as read in 2.6.3x copies of tcp_cubic.c, tcp_input.c and
// include/linux/jiffies.h:
//
//   - the clock of the ACK train: bictcp_hystart_reset sets round_start =
//     last_jiffies = jiffies, and hystart_update compares curr_jiffies -
//     last_jiffies with msecs_to_jiffies(2) and curr_jiffies - round_start
//     with delay_min>>4;
//   - the RTT samples: CUBIC did not ask for TCP_CONG_RTT_STAMP, so
//     tcp_clean_rtx_queue handed pkts_acked rtt_us =
//     jiffies_to_usecs(ca_seq_rtt), ca_seq_rtt = now - scb->when, both in
//     jiffies, and no sample at all when ca_seq_rtt was 0 ("else if
//     (ca_seq_rtt > 0)"; 2.6.39 changed it to >= 0, and CUBIC then asked
//     for microsecond stamps when HZ < 1000);
//   - bictcp_acked: delay = usecs_to_jiffies(rtt_us) << 3, so delay_min
//     and curr_rtt are jiffies<<3 and HYSTART_DELAY_MIN (2U<<3) and
//     HYSTART_DELAY_MAX (16U<<3) are 2 and 16 jiffies: 8 and 64 ms at
//     HZ = 250, 20 and 160 ms at HZ = 100.
//
// The conversions round as jiffies.h does: msecs_to_jiffies and
// usecs_to_jiffies round up (so msecs_to_jiffies(2) is 1 jiffy for HZ <=
// 500), jiffies_to_usecs is exact when HZ divides 10^6 and truncates
// otherwise (HZ = 300).
//
// jiffies is 0 at time 0; a flow's start time sets its phase against the
// ticks. The scb->when of a sample is its send time, taken as the ACK's
// arrival minus the RTT the host measured from the echoed timestamp, that
// is, the send time of the oldest segment the ACK covers where the kernel
// took the newest acknowledged skb (docs/decisions.md).

// HyStartHZValues are the kernel HZ the jiffies model takes (Kconfig
// HZ_100, HZ_250, HZ_300, HZ_1000).
var HyStartHZValues = []int{100, 250, 300, 1000}

// checkHyStartHZ accepts hz for variant v.
func checkHyStartHZ(v HyStartVariant, hz int) error {
	if v != HyStartLinux2008 {
		return &OptionValueError{Module: "cubic", Key: "hystart_hz",
			Err: fmt.Errorf("applies to hystart linux-2008 only (later kernels do not depend on HZ), got hystart %s", v)}
	}
	for _, x := range HyStartHZValues {
		if hz == x {
			return nil
		}
	}
	return &OptionValueError{Module: "cubic", Key: "hystart_hz",
		Err: fmt.Errorf("must be one of %v, got %d", HyStartHZValues, hz)}
}

// jiffiesHZ is the u32 jiffies counter at now for a kernel of the given HZ:
// floor(now * hz / 1 s).
func jiffiesHZ(now sim.Time, hz uint32) uint32 {
	if now <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(now), uint64(hz))
	// now < 2^63 and hz <= 1000, so hi < 2^10 < 1 s: Div64 cannot overflow.
	q, _ := bits.Div64(hi, lo, uint64(sim.Second))
	return uint32(q)
}

// msecsToJiffiesHZ is msecs_to_jiffies(m).
func msecsToJiffiesHZ(m, hz uint32) uint32 {
	switch {
	case hz <= 1000 && 1000%hz == 0:
		return (m + 1000/hz - 1) / (1000 / hz)
	case hz > 1000 && hz%1000 == 0:
		return m * (hz / 1000)
	}
	return uint32((uint64(m)*uint64(hz) + 999) / 1000)
}

// usecsToJiffiesHZ is usecs_to_jiffies(u).
func usecsToJiffiesHZ(u, hz uint32) uint32 {
	if 1_000_000%hz == 0 {
		return (u + 1_000_000/hz - 1) / (1_000_000 / hz)
	}
	return uint32((uint64(u)*uint64(hz) + 999_999) / 1_000_000)
}

// jiffiesToUsecsHZ is jiffies_to_usecs(j).
func jiffiesToUsecsHZ(j, hz uint32) uint32 {
	if 1_000_000%hz == 0 {
		return 1_000_000 / hz * j
	}
	return uint32(uint64(j) * 1_000_000 / uint64(hz))
}

// jiffiesDelaySample is the delay bictcp_acked computed from an ACK at now
// for a segment sent at now - rtt, and whether the kernel had a sample.
func jiffiesDelaySample(now, rtt sim.Time, hz uint32) (uint32, bool) {
	seqRTT := jiffiesHZ(now, hz) - jiffiesHZ(now-rtt, hz) // ca_seq_rtt
	if int32(seqRTT) <= 0 {
		return 0, false // "else if (ca_seq_rtt > 0)": rtt_us stays -1
	}
	d := usecsToJiffiesHZ(jiffiesToUsecsHZ(seqRTT, hz), hz) << 3
	return max(d, 1), true
}

// ackDelta2008 is the 2008 train's spacing, msecs_to_jiffies(2).
func (h *HyStart) ackDelta2008() uint32 {
	if h.hz != 0 {
		return msecsToJiffiesHZ(hystartAckDeltaMs, h.hz)
	}
	return hystartAckDeltaMs * cubicHZ / 1000
}
