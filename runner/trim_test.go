package runner_test

import (
	"testing"
)

// TestSTrack_TrimNackRecoversEveryTrimWithoutRTO: a 32-to-1 STrack incast
// on a leaf-spine whose 64KiB port buffers overflow. Trimming cuts the
// packets that do not fit to their headers; the receiver answers each with
// a trim NACK naming it, and the sender resends exactly those packets at
// once: nothing is dropped, every byte arrives, no RTO fires.
func TestSTrack_TrimNackRecoversEveryTrimWithoutRTO(t *testing.T) {
	r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 4
    hosts_per_leaf: 16
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
transport:
  cc: strack
  mtu: 4096
  rto: {mode: fixed, value: 1ms}
switch:
  classes: [{}, {}]
  trim: {}
workload:
  - type: incast
    dst: 0
    senders: [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47]
    size: 512KiB
`)
	var trimmed, nacks, drops uint64
	for _, q := range r.Ports {
		drops += q.Dropped
	}
	for _, c := range r.Classes {
		trimmed += c.Trimmed
	}
	for h := 0; h < r.Fabric.NumHosts(); h++ {
		nacks += r.Fabric.Host(h).TrimNacks
	}
	var retx, timeouts uint64
	var last int64
	for i, rec := range r.Fabric.Transport().Records {
		last = max(last, int64(rec.Finish))
		if !rec.Finished || rec.BytesReceived != 512<<10 {
			t.Fatalf("flow %d: finished %v with %d of %d bytes", i, rec.Finished, rec.BytesReceived, 512<<10)
		}
		retx += rec.Retransmits
		timeouts += rec.Timeouts
	}
	t.Logf("32->1 STrack incast: %d trimmed, %d trim NACKs, %d retransmissions, %d timeouts, %d drops, last byte at %dns (16 MiB at 100 Gb/s: 1342us)",
		trimmed, nacks, retx, timeouts, drops, last/1000)
	if trimmed == 0 || drops != 0 {
		t.Fatalf("want trims and no drops, got %d trimmed, %d drops", trimmed, drops)
	}
	if nacks != trimmed {
		t.Errorf("want one trim NACK per trimmed packet, got %d NACKs for %d trims", nacks, trimmed)
	}
	if timeouts != 0 || retx != trimmed {
		t.Errorf("want every trimmed packet resent once on its NACK and no RTO, got %d retransmissions for %d trims, %d timeouts", retx, trimmed, timeouts)
	}
	checkConservation(t, r)
}

// TestUET_NacksTellLastHopTrimsFromFabricTrims: a UET receiver marks a
// trim NACK last-hop when the switch that cut the packet was the one
// before it (htsim UecSink::processTrimmed compares the header's hop count
// where it was cut, which our switches note in its Ack, with its hop
// count on arrival). A 32-to-1 NSCC incast from two leaves trims both on
// the leaves' uplinks (16 senders onto 4 spines) and at host 0's port:
// the receiver's last-hop NACKs match the trims at ports facing a host,
// and its other NACKs the trims in the fabric.
func TestUET_NacksTellLastHopTrimsFromFabricTrims(t *testing.T) {
	r := runYAML(t, `
topology:
  type: leafspine
  leafspine:
    leaves: 3
    spines: 4
    hosts_per_leaf: 16
    host: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
    fabric: {rate: 100Gbps, delay: 1us, buffer: 64KiB}
switch:
  forwarding: spray
  classes: [{}, {}]
  trim: {}
transport:
  cc: nscc
  ecn: true
  mtu: 4096
  nscc: {lb: oblivious}
workload:
  - type: incast
    dst: 0
    senders: [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47]
    size: 64KiB
`)
	isHost := map[string]bool{}
	for h := 0; h < r.Fabric.NumHosts(); h++ {
		isHost[r.Built.Topo.Nodes[r.Built.Topo.Hosts[h]].Name] = true
	}
	var lastHop, fabric uint64
	for _, c := range r.Classes {
		if isHost[c.Peer] {
			lastHop += c.Trimmed
		} else {
			fabric += c.Trimmed
		}
	}
	var nacks, lastHopNacks uint64
	for h := 0; h < r.Fabric.NumHosts(); h++ {
		nacks += r.Fabric.Host(h).TrimNacks
		lastHopNacks += r.Fabric.Host(h).LastHopNacks
	}
	t.Logf("trims: %d at the last hop, %d in the fabric; NACKs: %d, %d of them last-hop", lastHop, fabric, nacks, lastHopNacks)
	if lastHop == 0 || fabric == 0 {
		t.Fatalf("want trims at the last hop and in the fabric, got %d and %d", lastHop, fabric)
	}
	if lastHopNacks != lastHop || nacks-lastHopNacks != fabric {
		t.Errorf("want %d last-hop and %d fabric NACKs (one per trim), got %d and %d", lastHop, fabric, lastHopNacks, nacks-lastHopNacks)
	}
	checkConservation(t, r)
}
