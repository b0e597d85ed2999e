package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// classByField is the built-in classifier: a data packet goes to the
// queue of its class (sim.Packet.Class, the top bits of its flags, set by
// the sender's workload), clamped to the last class; packets without
// payload (ACKs, NACKs, CNPs) and trimmed headers go to the control class.
type classByField struct{ control int }

// Classify implements Classifier.Classify.
func (k classByField) Classify(s *Switch, pkt *sim.Packet) int {
	if pkt.Payload == 0 || pkt.Flags&(sim.FlagData|sim.FlagTrimmed) != sim.FlagData {
		return k.control
	}
	return min(pkt.Class(), s.nc-1)
}
