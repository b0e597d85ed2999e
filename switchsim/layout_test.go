package switchsim

import (
	"testing"
	"unsafe"
)

// TestLayout_PortHotLines pins the layout that keeps a packet's work at a
// port in two cache lines: a Port is whole lines (so that in a switch's
// array, which the allocator places on a line, each starts one), its
// first line holds class 0's queue and the transmitter's state, its
// second the counters every packet updates and the copies of the queue
// configuration that admission and marking read.
func TestLayout_PortHotLines(t *testing.T) {
	var p Port
	if got := unsafe.Sizeof(p); got%64 != 0 || got != portBytes {
		t.Errorf("Port: expected a multiple of 64 bytes and portBytes (%d), got %d", portBytes, got)
	}
	line := func(name string, off, size uintptr, want uintptr) {
		t.Helper()
		if off/64 != want || (off+size-1)/64 != want {
			t.Errorf("Port.%s: expected in line %d, at bytes %d-%d", name, want, off, off+size-1)
		}
	}
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"cls0", unsafe.Offsetof(p.cls0), unsafe.Sizeof(p.cls0)},
		{"queued", unsafe.Offsetof(p.queued), unsafe.Sizeof(p.queued)},
		{"inService", unsafe.Offsetof(p.inService), unsafe.Sizeof(p.inService)},
		{"Link", unsafe.Offsetof(p.Link), unsafe.Sizeof(p.Link)},
		{"svcIn", unsafe.Offsetof(p.svcIn), unsafe.Sizeof(p.svcIn)},
		{"svcClass", unsafe.Offsetof(p.svcClass), unsafe.Sizeof(p.svcClass)},
		{"busy", unsafe.Offsetof(p.busy), unsafe.Sizeof(p.busy)},
		{"lazy", unsafe.Offsetof(p.lazy), unsafe.Sizeof(p.lazy)},
		{"ecnMode", unsafe.Offsetof(p.ecnMode), unsafe.Sizeof(p.ecnMode)},
		{"ecnDeq", unsafe.Offsetof(p.ecnDeq), unsafe.Sizeof(p.ecnDeq)},
	} {
		line(f.name, f.off, f.size, 0)
	}
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"PortCounters", unsafe.Offsetof(p.PortCounters), unsafe.Sizeof(p.PortCounters)},
		{"buffer", unsafe.Offsetof(p.buffer), unsafe.Sizeof(p.buffer)},
		{"ecnK", unsafe.Offsetof(p.ecnK), unsafe.Sizeof(p.ecnK)},
	} {
		line(f.name, f.off, f.size, 1)
	}
	for _, n := range []int{1, 4, 48, 1000} {
		if a := uintptr(unsafe.Pointer(&PortSlab(n)[0])); a%64 != 0 {
			t.Errorf("PortSlab(%d): expected on a cache line, at %#x", n, a)
		}
	}
}

// TestLayout_SwitchHotLines pins what every packet reads of a Switch (the
// routes and ports, the modules' kinds, the mechanisms' switches and the
// shared pool) to its first 120 bytes, which are two cache lines where
// the allocator places it.
func TestLayout_SwitchHotLines(t *testing.T) {
	var s Switch
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"ID", unsafe.Offsetof(s.ID), unsafe.Sizeof(s.ID)},
		{"storming", unsafe.Offsetof(s.storming), unsafe.Sizeof(s.storming)},
		{"Node", unsafe.Offsetof(s.Node), unsafe.Sizeof(s.Node)},
		{"Ports", unsafe.Offsetof(s.Ports), unsafe.Sizeof(s.Ports)},
		{"routes", unsafe.Offsetof(s.routes), unsafe.Sizeof(s.routes)},
		{"salt", unsafe.Offsetof(s.salt), unsafe.Sizeof(s.salt)},
		{"lossless", unsafe.Offsetof(s.lossless), unsafe.Sizeof(s.lossless)},
		{"nc", unsafe.Offsetof(s.nc), unsafe.Sizeof(s.nc)},
		{"SampleEvery", unsafe.Offsetof(s.SampleEvery), unsafe.Sizeof(s.SampleEvery)},
		{"poolSize", unsafe.Offsetof(s.poolSize), unsafe.Sizeof(s.poolSize)},
		{"sharedUsed", unsafe.Offsetof(s.sharedUsed), unsafe.Sizeof(s.sharedUsed)},
		{"kinds", unsafe.Offsetof(s.kinds), unsafe.Sizeof(s.kinds)},
		{"sampling", unsafe.Offsetof(s.sampling), unsafe.Sizeof(s.sampling)},
		{"hasX", unsafe.Offsetof(s.hasX), unsafe.Sizeof(s.hasX)},
		{"pfc", unsafe.Offsetof(s.pfc), unsafe.Sizeof(s.pfc)},
		{"cut", unsafe.Offsetof(s.cut), unsafe.Sizeof(s.cut)},
		{"intOn", unsafe.Offsetof(s.intOn), unsafe.Sizeof(s.intOn)},
	} {
		if end := f.off + f.size; end > 120 {
			t.Errorf("Switch.%s: expected in the first 120 bytes, ends at %d", f.name, end)
		}
	}
	// The allocator places a Switch (896-byte slots) 8 bytes into a
	// line, after its allocation header: its first 120 bytes are then
	// two lines, as they are when it starts one.
	for i := 0; i < 4; i++ {
		if a := uintptr(unsafe.Pointer(New(0, 0, nil, nil, ECMP))); a%64 > 8 {
			t.Errorf("a Switch: expected at most 8 bytes into a cache line, at %#x", a)
		}
	}
}
