package workloads

import (
	"fmt"
	"math"

	"github.com/lockstep-sim/lockstep/sim"
)

// Flow is one transfer of Size bytes from host Src to host Dst, starting at
// Start. Hosts are indices 0..numHosts-1 of the fabric.
//
// Invariants (checked by Explicit): Src != Dst, both in range, Size > 0,
// Start >= 0. ID is the flow's index in the list it belongs to.
type Flow struct {
	ID       int32
	Src, Dst int      // host indices
	Size     int64    // bytes
	Start    sim.Time // when the sender may send its first byte
	// Dependencies (hostsim.FlowSpec has the same fields): with Need > 0
	// the flow starts, instead of at Start, once it has been activated
	// Need times, each activation arriving Delay after its cause.
	// OnRecvDone and OnSendDone list (by index in the same list) the flows
	// this one activates when its receiver has every byte, and when its
	// sender has every ACK.
	Need       int32
	Delay      sim.Time
	OnRecvDone []int32
	OnSendDone []int32
}

// maxFlows is the longest flow list: IDs are int32.
const maxFlows = math.MaxInt32

// SatMul is the product of xs (not negative), or math.MaxInt64 when it
// would overflow: for estimates of sizes that absurd inputs make huge.
func SatMul(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x == 0 {
			return 0
		}
		if p > math.MaxInt64/x {
			p = math.MaxInt64
			continue
		}
		p *= x
	}
	return p
}

// SatAdd is a+b (not negative), or math.MaxInt64 when it would overflow.
func SatAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Explicit validates a hand-written flow list against a fabric of numHosts
// hosts and returns a copy numbered 0..n-1 in the given order (IDs in the
// input are ignored). Errors name the flow's index, e.g.
//
//	flows[3].dst: host 130 does not exist (fabric has 128 hosts)
func Explicit(flows []Flow, numHosts int) ([]Flow, error) {
	if numHosts <= 0 {
		return nil, fmt.Errorf("numHosts must be positive, got %d", numHosts)
	}
	if len(flows) > maxFlows {
		return nil, fmt.Errorf("%d flows is more than the %d a list can hold", len(flows), maxFlows)
	}
	out := make([]Flow, len(flows))
	for i, f := range flows {
		if err := checkFlow(f, numHosts); err != nil {
			return nil, fmt.Errorf("flows[%d]%w", i, err)
		}
		f.ID = int32(i)
		out[i] = f
	}
	return out, nil
}

// fieldError is an error about one field of a flow; its text starts with
// ".field: " or ": " so that the caller can prefix it with the flow's name.
type fieldError struct {
	field string // "" for the flow as a whole
	msg   string
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return ": " + e.msg
	}
	return "." + e.field + ": " + e.msg
}

// checkFlow checks f's invariants. numHosts <= 0 skips the range checks.
func checkFlow(f Flow, numHosts int) error {
	if err := checkHost("src", f.Src, numHosts); err != nil {
		return err
	}
	if err := checkHost("dst", f.Dst, numHosts); err != nil {
		return err
	}
	if f.Src == f.Dst {
		return &fieldError{msg: fmt.Sprintf("src and dst are both host %d", f.Src)}
	}
	if f.Size <= 0 {
		return &fieldError{field: "size", msg: fmt.Sprintf("must be positive, got %d bytes", f.Size)}
	}
	if f.Start < 0 {
		return &fieldError{field: "start", msg: fmt.Sprintf("must not be negative, got %dps", int64(f.Start))}
	}
	return nil
}

func checkHost(field string, h, numHosts int) error {
	if h < 0 {
		return &fieldError{field: field, msg: fmt.Sprintf("host %d does not exist (host indices start at 0)", h)}
	}
	if numHosts > 0 && h >= numHosts {
		return &fieldError{field: field, msg: fmt.Sprintf("host %d does not exist (fabric has %d hosts)", h, numHosts)}
	}
	return nil
}

// checkCommon validates the size and start shared by a generator's flows.
func checkCommon(size int64, start sim.Time) error {
	if size <= 0 {
		return fmt.Errorf("size must be positive, got %d bytes", size)
	}
	if start < 0 {
		return fmt.Errorf("start must not be negative, got %dps", int64(start))
	}
	return nil
}
