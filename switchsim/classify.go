package switchsim

import "github.com/lockstep-sim/lockstep/sim"

// classByField is the built-in classifier: a data packet goes to the
// queue of its class (sim.Packet.Class, the top bits of its flags, set by
// the sender's workload), clamped to the last class; packets without
// payload (ACKs, NACKs, CNPs) and trimmed headers go to the control class.
type classByField struct{ control int }

// Classify implements Classifier.Classify.
func (k classByField) Classify(s *Switch, pkt *sim.Packet) int {
	return classOfField(pkt, k.control, s.nc)
}

// classOfField is classByField's rule for a switch of nc classes (small
// enough to be inlined where the core calls it).
func classOfField(pkt *sim.Packet, control, nc int) int {
	if pkt.Payload == 0 || pkt.Flags&(sim.FlagData|sim.FlagTrimmed) != sim.FlagData {
		return control
	}
	return min(pkt.Class(), nc-1)
}
