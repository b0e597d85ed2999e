// Package pcap writes lockstep packets as classic pcap files (nanosecond
// timestamps, LINKTYPE_ETHERNET) that Wireshark and tshark read.
//
// A sim.Packet is only a header model: it has no payload bytes and no
// addresses. The encoder turns it into Ethernet + IPv4 + TCP headers with
// made-up but consistent labels (host index i is 10.0.0.0+i+1 and MAC
// 02:00 followed by that address) and records only those headers: each
// record's captured length is the header length and its original length is
// the frame's full size (Wireshark shows "1514 bytes on wire, 66 bytes
// captured"). Nothing here ever reaches a network.
//
// Field by field (docs/decisions.md "Packet capture (pcap/)" says why):
//
//   - IPv4: DSCP 0; ECN ECT(0) for FlagECT and CE for FlagCE (RFC 3168
//     §5); ID = the packet's Entropy (RFC 6864 §4.1: free in a DF
//     datagram); DF set; TTL 64 minus the links
//     crossed so far; a correct header checksum (RFC 791). Total length is
//     20 + the TCP header + Payload, so Wireshark's TCP segment length is the
//     payload the model carried and its sequence analysis holds.
//   - TCP: ports as in the packet; sequence and acknowledgement numbers
//     modulo 2^32 (RFC 9293 §3.4); flags ACK (FlagAck), ECE (FlagECE) and
//     CWR (FlagCWR) (RFC 3168 §6.1); window 65535, unscaled; checksum 0
//     (it would cover payload bytes that do not exist). A pure ACK
//     (FlagAck without FlagData) has sequence number 0, as a receiver that
//     sends no data would; the data sequence it echoes goes in the lockstep
//     option below.
//   - TCP options, at most 40 bytes (RFC 9293 §3.1), in this order:
//     timestamps (RFC 7323 §3: NOP NOP, kind 8) with TSval and TSecr in
//     microseconds modulo 2^32; for a NACK, the lockstep option (kind 253,
//     RFC 6994, ExID 0x4C53) with the echoed sequence and STrack's bitmap;
//     SACK (RFC 2018 §3: NOP NOP, kind 5) with as many of the packet's
//     blocks as still fit, first block first; for a pure ACK that is not a
//     NACK, the 8-byte lockstep option with the echoed sequence alone, if it
//     fits.
//   - A data packet a switch trimmed (sim.FlagTrimmed) is what is left on
//     the wire, its headers: IPv4 total length without the payload, DSCP
//     DSCPTrimmed, and the lockstep option carrying the payload bytes that
//     were cut (Ultra Ethernet marks a trimmed packet by rewriting its DSCP
//     to a configured value; we pick one from RFC 2474 §6's pool for local
//     use). A trim NACK (an ACK with sim.FlagTrimmed) has DSCP
//     DSCPTrimNack and echoes the trimmed packet's sequence in the lockstep
//     option, as any pure ACK does.
//   - A PFC PAUSE frame (sim.FlagPause) is a MAC control frame instead: see
//     encodePause.
package pcap

import (
	"encoding/binary"

	"github.com/lockstep-sim/lockstep/sim"
)

// Header sizes in bytes.
const (
	EthernetLen = 14 // IEEE 802.3 header without FCS
	IPv4Len     = 20 // RFC 791 header without options
	TCPLen      = 20 // RFC 9293 §3.1 header without options
	// MaxOptionsLen is the TCP option space: data offset 15 words less the
	// fixed header (RFC 9293 §3.1).
	MaxOptionsLen = 40
	// MaxHeaderLen is the longest frame prefix the encoder writes, and the
	// snaplen of every file.
	MaxHeaderLen = EthernetLen + IPv4Len + TCPLen + MaxOptionsLen
)

// The lockstep experimental TCP option (RFC 6994: kind 253 or 254, then a
// 16-bit experiment identifier).
const (
	// OptionKind is the shared experimental option kind (RFC 4727 §7.2,
	// RFC 6994 §3).
	OptionKind = 253
	// ExID is lockstep's experiment identifier, "LS" in ASCII. It is not
	// registered with IANA: the option exists only in capture files.
	ExID = 0x4C53
	// OptionEchoLen: kind, length, ExID, echoed sequence (32 bits).
	OptionEchoLen = 8
	// OptionNackLen: OptionEchoLen and STrack's 64-bit received bitmap.
	OptionNackLen = 16
)

// DSCPs that label trimming in captures (RFC 2474 §6: pool 2, xxxx11, is
// for experimental or local use).
const (
	DSCPTrimmed  = 0b000011 // a data packet cut to its header
	DSCPTrimNack = 0b000111 // a receiver's trim NACK
)

// TCP option kinds and lengths used here.
const (
	optNOP     = 1  // RFC 9293 §3.2
	optSACK    = 5  // RFC 2018 §3
	optTS      = 8  // RFC 7323 §3
	optTSLen   = 10 // RFC 7323 §3
	sackBlock  = 8  // two 32-bit edges (RFC 2018 §3)
	sackHeader = 2  // kind and length
)

// TCP header flag bits (RFC 9293 §3.1, RFC 3168 §6.1).
const (
	tcpACK = 0x10
	tcpECE = 0x40
	tcpCWR = 0x80
)

// IPv4 ECN codepoints in the low two bits of the traffic class byte
// (RFC 3168 §5).
const (
	ecnECT0 = 0b10
	ecnCE   = 0b11
)

const (
	etherTypeIPv4 = 0x0800
	ipDontFrag    = 0x4000 // RFC 791 flags: DF
	initialTTL    = 64     // RFC 1700 default TTL, as Linux uses
	tcpWindow     = 65535  // no window scale option: no SYN is captured
)

// HostIP is the IPv4 address that labels host index i: 10.0.0.0 + i + 1
// (host 0 is 10.0.0.1), taken modulo the 10/8 block.
func HostIP(i int32) [4]byte {
	v := 10<<24 | (uint32(i)+1)&0xffffff
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], v)
	return a
}

// HostMAC is the MAC address that labels host index i: locally
// administered 02:00 followed by HostIP(i).
func HostMAC(i int32) [6]byte {
	ip := HostIP(i)
	return [6]byte{0x02, 0x00, ip[0], ip[1], ip[2], ip[3]}
}

// Micros is a virtual time as a TCP timestamp value: microseconds modulo
// 2^32. RFC 7323 §5.4 recommends a clock of 1 ms to 1 s per tick; a 1 us
// tick (as Linux's TCPI_OPT_USEC_TS) keeps datacenter RTTs visible and
// wraps after 71.6 minutes of virtual time.
func Micros(t sim.Time) uint32 { return uint32(t / sim.Microsecond) }

// Encode writes the headers of p into dst and returns how many bytes it
// wrote (the captured length) and the frame's length on the wire (the
// original length).
//
// Preconditions: len(dst) >= MaxHeaderLen.
func Encode(dst []byte, p *sim.Packet) (capLen, origLen int) {
	dst = dst[:MaxHeaderLen]
	if p.Flags&sim.FlagPause != 0 {
		return encodePause(dst, p)
	}
	src, dstIP := HostIP(p.SrcHost), HostIP(p.DstHost)

	// Ethernet II.
	dm, sm := HostMAC(p.DstHost), HostMAC(p.SrcHost)
	copy(dst[0:6], dm[:])
	copy(dst[6:12], sm[:])
	binary.BigEndian.PutUint16(dst[12:14], etherTypeIPv4)

	ip := dst[EthernetLen : EthernetLen+IPv4Len]
	l4 := 0
	if p.Proto == 6 {
		l4 = encodeTCP(dst[EthernetLen+IPv4Len:], p)
	}
	payload := max(int(p.Payload), 0)
	trimmed := p.Flags&(sim.FlagTrimmed|sim.FlagData) == sim.FlagTrimmed|sim.FlagData
	if trimmed {
		payload = 0 // cut by a switch: only the headers are on the wire
	}
	total := min(IPv4Len+l4+payload, 0xffff) // the field's 16 bits

	// IPv4 (RFC 791 §3.1).
	ip[0] = 0x45 // version 4, IHL 5 words
	var tos byte
	switch {
	case p.Flags&sim.FlagCE != 0:
		tos = ecnCE
	case p.Flags&sim.FlagECT != 0:
		tos = ecnECT0
	}
	switch {
	case trimmed:
		tos |= DSCPTrimmed << 2
	case p.Flags&(sim.FlagTrimmed|sim.FlagAck) == sim.FlagTrimmed|sim.FlagAck:
		tos |= DSCPTrimNack << 2
	}
	ip[1] = tos
	binary.BigEndian.PutUint16(ip[2:4], uint16(total))
	binary.BigEndian.PutUint16(ip[4:6], p.Entropy)
	binary.BigEndian.PutUint16(ip[6:8], ipDontFrag)
	ip[8] = byte(max(initialTTL-int(p.Hops), 1))
	ip[9] = p.Proto
	ip[10], ip[11] = 0, 0
	copy(ip[12:16], src[:])
	copy(ip[16:20], dstIP[:])
	binary.BigEndian.PutUint16(ip[10:12], ipChecksum(ip))

	capLen = EthernetLen + IPv4Len + l4
	origLen = EthernetLen + max(int(p.Size), total)
	return capLen, origLen
}

// MAC control (IEEE 802.3 Annex 31B/31D) constants of a PFC frame.
const (
	etherTypeMACControl = 0x8808
	opcodePFC           = 0x0101 // IEEE 802.1Qbb priority-based flow control
	pauseLen            = 2 + 2 + 2*sim.MaxClasses
	minFrameLen         = 60 // without the FCS
)

// pfcDst is the MAC control multicast address (802.3 Annex 31B.1).
var pfcDst = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}

// encodePause writes a PFC frame: Ethernet to 01-80-C2-00-00-01 from the
// sending element's label (02:01 and the element id: a switch, or a host
// whose receive pipeline stalls, hostsim.Storm), Ethertype 0x8808,
// opcode 0x0101, the class-enable vector and 8 pause times in quanta
// (802.1Qbb §36.1.3.2). The frame is 60 bytes (64 with the FCS), padded.
func encodePause(dst []byte, p *sim.Packet) (capLen, origLen int) {
	copy(dst[0:6], pfcDst[:])
	// The source label: the element that sent it is not in the header
	// model, so the packet id's creator (its top bits) names it.
	src := uint32(p.ID >> 40)
	dst[6], dst[7] = 0x02, 0x01
	binary.BigEndian.PutUint32(dst[8:12], src)
	binary.BigEndian.PutUint16(dst[12:14], etherTypeMACControl)
	b := dst[EthernetLen:]
	binary.BigEndian.PutUint16(b[0:2], opcodePFC)
	binary.BigEndian.PutUint16(b[2:4], uint16(p.Bitmap&0xff))
	for c := 0; c < sim.MaxClasses; c++ {
		binary.BigEndian.PutUint16(b[4+2*c:6+2*c], p.PauseQuanta(c))
	}
	return EthernetLen + pauseLen, minFrameLen
}

// encodeTCP writes the TCP header and options into b and returns its length.
func encodeTCP(b []byte, p *sim.Packet) int {
	pureAck := p.Flags&sim.FlagAck != 0 && p.Flags&sim.FlagData == 0
	nack := p.Flags&sim.FlagNack != 0
	trimmed := p.Flags&(sim.FlagTrimmed|sim.FlagData) == sim.FlagTrimmed|sim.FlagData

	binary.BigEndian.PutUint16(b[0:2], p.SrcPort)
	binary.BigEndian.PutUint16(b[2:4], p.DstPort)
	seq := uint32(p.Seq) // RFC 9293 §3.4: sequence space is modulo 2^32
	if pureAck {
		seq = 0
	}
	binary.BigEndian.PutUint32(b[4:8], seq)
	binary.BigEndian.PutUint32(b[8:12], uint32(p.Ack))
	var flags byte
	if p.Flags&sim.FlagAck != 0 {
		flags |= tcpACK
	}
	if p.Flags&sim.FlagECE != 0 {
		flags |= tcpECE
	}
	if p.Flags&sim.FlagCWR != 0 {
		flags |= tcpCWR
	}
	b[13] = flags
	binary.BigEndian.PutUint16(b[14:16], tcpWindow)
	b[16], b[17] = 0, 0 // checksum: not computed (no payload bytes)
	b[18], b[19] = 0, 0 // urgent pointer

	o := b[TCPLen : TCPLen+MaxOptionsLen]
	n := 0
	// Timestamps, aligned as RFC 7323 Appendix A suggests.
	o[0], o[1], o[2], o[3] = optNOP, optNOP, optTS, optTSLen
	binary.BigEndian.PutUint32(o[4:8], Micros(p.TSval))
	binary.BigEndian.PutUint32(o[8:12], Micros(p.TSecr))
	n = 12
	if nack {
		n += putOption(o[n:], p, true)
	}
	k := min(int(p.NSack), sim.MaxSackBlocks, (MaxOptionsLen-n-2-sackHeader)/sackBlock)
	if k > 0 {
		o[n], o[n+1], o[n+2], o[n+3] = optNOP, optNOP, optSACK, byte(sackHeader+k*sackBlock)
		n += 4
		for i := range k {
			binary.BigEndian.PutUint32(o[n:n+4], uint32(p.Sack[i].Start))
			binary.BigEndian.PutUint32(o[n+4:n+8], uint32(p.Sack[i].End))
			n += sackBlock
		}
	}
	if pureAck && !nack && MaxOptionsLen-n >= OptionEchoLen {
		n += putOption(o[n:], p, false)
	}
	if trimmed && MaxOptionsLen-n >= OptionEchoLen {
		// The payload bytes the switch cut, where a pure ACK echoes.
		o[n], o[n+1] = OptionKind, OptionEchoLen
		binary.BigEndian.PutUint16(o[n+2:n+4], ExID)
		binary.BigEndian.PutUint32(o[n+4:n+8], uint32(max(p.Payload, 0)))
		n += OptionEchoLen
	}
	// Every part above is a multiple of 4 bytes, so no EOL padding is
	// needed; keep the invariant checked.
	if n%4 != 0 {
		panic("pcap: TCP options not 32-bit aligned")
	}
	hdr := TCPLen + n
	b[12] = byte(hdr/4) << 4 // data offset in 32-bit words
	return hdr
}

// putOption writes the lockstep option: the echoed sequence (p.Seq modulo
// 2^32) and, for a NACK, the bitmap. It returns the option's length.
func putOption(o []byte, p *sim.Packet, bitmap bool) int {
	l := OptionEchoLen
	if bitmap {
		l = OptionNackLen
	}
	o[0], o[1] = OptionKind, byte(l)
	binary.BigEndian.PutUint16(o[2:4], ExID)
	binary.BigEndian.PutUint32(o[4:8], uint32(p.Seq))
	if bitmap {
		binary.BigEndian.PutUint64(o[8:16], p.Bitmap)
	}
	return l
}

// ipChecksum is the RFC 791 header checksum: the 16-bit one's complement of
// the one's complement sum of the header's 16-bit words (RFC 1071 §4.1).
// The checksum field must be zero when it is called.
func ipChecksum(h []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
