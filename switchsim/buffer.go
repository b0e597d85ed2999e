package switchsim

// Buffer policies (StageBuffer): the admission of lossy packets. Lossless
// classes are PFC's (the core admits them by their ingress counters).

// staticBuffer is drop-tail on each port's own buffer
// (topologies.QueueConfig.Buffer): a packet that does not fit is refused.
// Lossless bytes live in PFC's accounting, not the port's lossy buffer.
type staticBuffer struct{}

// Admit implements BufferPolicy.Admit.
func (staticBuffer) Admit(s *Switch, port, c int, size int64) bool {
	pt := &s.Ports[port]
	return s.staticAdmit(pt, size, pt.Occupancy())
}

// staticAdmit is staticBuffer's test, with the port's occupancy.
func (s *Switch) staticAdmit(pt *Port, size, occ int64) bool {
	if s.pfc {
		for k := 0; k < s.nc; k++ {
			if s.lossless[k] {
				occ -= pt.class(k).occ
			}
		}
	}
	return occ+size <= pt.buffer
}

// dynamicBuffer is a switch-wide pool with Choudhury and Hahne's dynamic
// threshold ("Dynamic queue length thresholds for shared-memory packet
// switches", IEEE/ACM ToN 1998): beyond its reserve a (port, class) queue
// may hold at most alpha times the free pool, so one busy queue takes
// alpha/(1+alpha) of it. The test is q − reserved + size ≤ alpha × (pool −
// used) and the part beyond the reserve must fit in what is free.
type dynamicBuffer struct {
	size, reserved int64
	alpha          [8]float64
}

// Pool implements SharedPool.Pool.
func (b *dynamicBuffer) Pool() (size, reserved int64) { return b.size, b.reserved }

// NeedsPortState implements PortStateUser (the per-class SharedPeak).
func (b *dynamicBuffer) NeedsPortState() {}

// Admit implements BufferPolicy.Admit.
func (b *dynamicBuffer) Admit(s *Switch, port, c int, size int64) bool {
	return b.admit(s, s.Ports[port].class(c), c, size)
}

func (b *dynamicBuffer) admit(s *Switch, cq *classQ, c int, size int64) bool {
	r := b.reserved
	if cq.occ+size <= r {
		return true
	}
	free := b.size - s.sharedUsed
	over := cq.occ + size - r
	need := min(size, over)
	return need <= free && float64(over) <= b.alpha[c]*float64(free)
}
