package cctrace

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockstep-sim/lockstep/cc"
	"github.com/lockstep-sim/lockstep/sim"
)

// What a script can see inside the modules and the endpoint beyond the
// table's columns, and the sender options it can set (docs/cc-trace.md,
// "Looking inside"). Kept apart from script.go and run.go, which call in
// here at four points: isHeaderLine, Header.parse, Driver.Snapshot and
// runner.checkOne.

// introspectKeys are the expect keys this file evaluates.
var introspectKeys = []string{
	"srtt", "rttvar", // the RTO estimator, RFC 6298 §2
	"k", "target", "cnt", "last_max", "reno_cwnd", "delay_min", // CUBIC's struct bictcp
	"cushion",             // today's HyStart's TSO/GRO cushion, hystart_ack_delay()
	"pace_at",             // pacing (Linux's, or a rate-based controller's): when the next packet may leave
	"rec_timer",           // the recovery's own deadline (RACK reordering timer, TLP's PTO)
	"retx_seq", "new_seq", // which byte ranges the step sent
}

// introspectHeaders are the header lines this file reads.
var introspectHeaders = []string{"max_ack_delay", "pacing"}

// extraSnapshot is the state the introspection keys read after a step.
type extraSnapshot struct {
	srtt, rttvar sim.Time
	cubic        cc.CubicState
	hasCubic     bool
	paceAt       sim.Time
	recTimer     sim.Time // sim.Never: none
	retx, fresh  string   // the byte ranges sent by the step, "-" for none
}

// cubicInternals is a controller with CUBIC's internals (cc.Cubic).
type cubicInternals interface{ Internals() cc.CubicState }

// extra reads the introspection state.
func (d *Driver) extra() extraSnapshot {
	x := extraSnapshot{srtt: d.RTO().SRTT(), rttvar: d.RTO().RTTVar(), paceAt: d.ep.PaceAt(),
		recTimer: d.ep.RecoveryDeadline(), retx: "-", fresh: "-"}
	if c, ok := d.Controller().(cubicInternals); ok {
		x.cubic, x.hasCubic = c.Internals(), true
	}
	return x
}

// infinite reports a controller whose ssthresh is still its "infinite"
// initial value, whatever number it returns (CUBIC keeps
// TCP_INFINITE_SSTHRESH = 0x7fffffff packets).
func (x *extraSnapshot) infinite() bool { return x.hasCubic && x.cubic.InfiniteSsthresh }

// noteSent records the byte ranges of the segments a step sent,
// retransmissions and new data apart, contiguous runs merged.
func (x *extraSnapshot) noteSent(sent []cc.Segment) {
	x.retx, x.fresh = segRanges(sent, true), segRanges(sent, false)
}

func segRanges(sent []cc.Segment, retx bool) string {
	var parts []string
	var start, end uint64
	open := false
	for _, s := range sent {
		if s.Retx != retx {
			continue
		}
		if open && s.Seq == end {
			end += uint64(s.Len)
			continue
		}
		if open {
			parts = append(parts, fmt.Sprintf("%d-%d", start, end))
		}
		start, end, open = s.Seq, s.Seq+uint64(s.Len), true
	}
	if open {
		parts = append(parts, fmt.Sprintf("%d-%d", start, end))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// parseIntrospectHeader reads `max_ack_delay D` and `pacing on|off
// [ss_ratio=R] [ca_ratio=R]`.
func (h *Header) parseIntrospectHeader(f []string) error {
	switch f[0] {
	case "max_ack_delay":
		if len(f) != 2 {
			return fmt.Errorf("max_ack_delay: want one duration")
		}
		d, err := parseDuration(f[1])
		if err != nil {
			return fmt.Errorf("max_ack_delay: %v", err)
		}
		h.CC.MaxAckDelay = d
	case "pacing":
		if len(f) < 2 {
			return fmt.Errorf("pacing: want on or off, then optional ss_ratio=R ca_ratio=R")
		}
		on, err := parseOnOff("pacing", f[1])
		if err != nil {
			return err
		}
		// Linux tcp_pacing_ss_ratio = 200, tcp_pacing_ca_ratio = 120.
		p := cc.PacingConfig{Enabled: on, SSRatio: 2.0, CARatio: 1.2}
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			r, err := strconv.ParseFloat(v, 64)
			if !ok || err != nil || !(r > 0) {
				return fmt.Errorf("pacing: want ss_ratio=R or ca_ratio=R with R > 0, got %q", kv)
			}
			switch k {
			case "ss_ratio":
				p.SSRatio = r
			case "ca_ratio":
				p.CARatio = r
			default:
				return fmt.Errorf("pacing: unknown key %q (known: ss_ratio, ca_ratio)", k)
			}
		}
		if !on && len(f) > 2 {
			return fmt.Errorf("pacing off takes no ratios")
		}
		h.Pacing = p
	}
	return nil
}

func isIntrospectHeader(f []string) bool { return slices.Contains(introspectHeaders, f[0]) }

// checkIntrospect evaluates one of introspectKeys: the value got, whether
// it matches, and a message instead when the key does not apply.
func (r *runner) checkIntrospect(s *Snapshot, e expectation) (got string, ok bool, msg string) {
	x := &s.Extra
	dur := func(t sim.Time) (string, bool) {
		want, err := parseDuration(e.value)
		return fmtTime(t), err == nil && want == t
	}
	cubic := func(v uint32) (string, bool, string) {
		if !x.hasCubic {
			return "", false, e.key + ": the controller has no CUBIC state"
		}
		got := strconv.FormatUint(uint64(v), 10)
		return got, got == e.value, ""
	}
	switch e.key {
	case "srtt":
		got, ok = dur(x.srtt)
	case "rttvar":
		got, ok = dur(x.rttvar)
	case "k":
		return cubic(x.cubic.K)
	case "target":
		return cubic(x.cubic.Target)
	case "cnt":
		return cubic(x.cubic.Cnt)
	case "last_max":
		return cubic(x.cubic.LastMax)
	case "reno_cwnd":
		return cubic(x.cubic.RenoCwnd)
	case "delay_min", "cushion":
		if !x.hasCubic {
			return "", false, e.key + ": the controller has no CUBIC state"
		}
		v := x.cubic.DelayMin
		if e.key == "cushion" {
			v = x.cubic.AckDelay
		}
		got, ok = dur(v)
	case "pace_at":
		if !r.s.Header.Pacing.Enabled && !r.d.ep.RateBased() {
			return "", false, "pace_at: pacing is off (header `pacing on`; rate-based controllers always pace)"
		}
		got, ok = dur(x.paceAt)
	case "rec_timer":
		got = fmtTimer(x.recTimer)
		if e.value != "off" {
			_, ok = dur(x.recTimer)
		}
	case "retx_seq":
		got = x.retx
	case "new_seq":
		got = x.fresh
	}
	return got, ok || got == e.value, ""
}
