package hostsim

import "github.com/lockstep-sim/lockstep/sim"

// The NIC of a host whose flows run UET (a cc.PDSAcker recovery), after
// uet-htsim's UecNIC (uec.cpp): sources hand it a packet only when a port
// is free, and control packets (ACKs, NACKs) wait in a queue of their own,
// served ten to one against data when both wait (doNextEvent's _crt over
// _ratio_control 10 and _ratio_data 1). Our endpoints hand their window to
// the NIC's FIFO at once, so a data packet's send time is taken when it
// starts serialising (TSval), as htsim's sender records it when the NIC
// lets it send; an ACK does not wait behind its host's outgoing data.
// Other hosts keep one FIFO.

// pdsNIC is a UET host's control queue and UecNIC's turn counter.
type pdsNIC struct {
	q   sim.PktQueue
	crt int // UecNIC::_crt
}

// sendPDS queues packet p by kind and starts the NIC if it is idle.
// Precondition: h.ctl != nil.
func (h *Host) sendPDS(e *sim.Engine, p sim.PktRef) {
	pkt := e.Pool.Get(p)
	q := &h.nic
	if pkt.Flags&sim.FlagData == 0 {
		q = &h.ctl.q
	}
	q.Add(p, pkt.Size)
	h.kick(e)
}

// Control and data turns of UecNIC::doNextEvent when both wait.
const (
	nicRatioData    = 1
	nicRatioControl = 10
)

// controlTurn reports whether the idle NIC sends a control packet next:
// yes when no data can go, else by UecNIC's round (1 data turn in 11).
// Precondition: a control packet waits.
func (h *Host) controlTurn(e *sim.Engine) bool {
	if h.nic.Len() == 0 || h.held(e, h.nic.Front().P) {
		return true
	}
	c := h.ctl
	c.crt++
	if c.crt >= nicRatioData+nicRatioControl {
		c.crt = 0
	}
	return c.crt >= nicRatioData
}
