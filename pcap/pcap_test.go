package pcap

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

// unhex decodes hex written with spaces, newlines and // comments.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	var clean strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// record writes one packet into a fresh file and returns the bytes after the
// file header.
func record(t testing.TB, now sim.Time, p *sim.Packet) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	if err := w.WritePacket(now, p); err != nil {
		t.Fatalf("WritePacket: %v", err)
	}
	return buf.Bytes()[FileHeaderLen:]
}

func diffBytes(t *testing.T, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("byte %d: want %#02x, got %#02x\nwant %x\ngot  %x", i, want[i], got[i], want, got)
		}
	}
	t.Fatalf("length: want %d bytes, got %d\nwant %x\ngot  %x", len(want), len(got), want, got)
}

// The file header of draft-ietf-opsawg-pcap §4, little-endian, nanosecond
// magic, snaplen = the longest header, LINKTYPE_ETHERNET.
func TestWriter_PcapDraft4_FileHeader(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewWriter(&buf); err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	want := unhex(t, `
		4d 3c b2 a1  // magic 0xa1b23c4d, little-endian: nanosecond timestamps
		02 00 04 00  // version 2.4
		00 00 00 00  // reserved1 (was thiszone)
		00 00 00 00  // reserved2 (was sigfigs)
		5e 00 00 00  // snaplen 94 = 14 + 20 + 20 + 40
		01 00 00 00  // LINKTYPE_ETHERNET`)
	diffBytes(t, buf.Bytes(), want)
}

// A data packet with SACK blocks, timestamps and a CE mark, every byte
// written out from RFC 791, RFC 9293, RFC 3168, RFC 7323 and RFC 2018.
func TestEncode_Golden_DataWithSackTimestampsECN(t *testing.T) {
	p := &sim.Packet{
		SrcHost: 0, DstHost: 2, SrcPort: 7, DstPort: 5201, Proto: 6,
		Flags:   sim.FlagData | sim.FlagAck | sim.FlagECT | sim.FlagCE | sim.FlagCWR,
		Entropy: 0xbeef, Hops: 3,
		Seq: 1<<32 + 1000, Ack: 5000, // the sequence wraps modulo 2^32
		Payload: 1000, Size: 1100,
		TSval: 1234*sim.Microsecond + 999*sim.Nanosecond, // 1234 us (truncated)
		TSecr: 1000*sim.Microsecond + 5,                  // 1000 us
		NSack: 2,
		Sack:  [sim.MaxSackBlocks]sim.SackBlock{{Start: 6000, End: 7000}, {Start: 9000, End: 12000}},
	}
	now := 2*sim.Second + 345*sim.Nanosecond + 678 // 2 s 345 ns; the 678 ps are dropped
	want := unhex(t, `
		02 00 00 00  59 01 00 00  // ts_sec 2, ts_nsec 345
		56 00 00 00  5a 04 00 00  // caplen 86 = 14+20+52, origlen 1114 = 14 + Size
		// Ethernet: dst = host 2's MAC, src = host 0's, IPv4
		02 00 0a 00 00 03  02 00 0a 00 00 01  08 00
		// IPv4: v4 IHL 5; ECN CE (11); total 20+52+1000 = 1072; ID = entropy;
		// DF; TTL 64-3; TCP; checksum; 10.0.0.1 -> 10.0.0.3
		45 03 04 30  be ef 40 00  3d 06 66 d2  0a 00 00 01  0a 00 00 03
		// TCP: ports 7 -> 5201; seq 1000; ack 5000; offset 13 words; CWR+ACK;
		// window 65535; checksum 0; urgent 0
		00 07 14 51  00 00 03 e8  00 00 13 88  d0 90 ff ff  00 00 00 00
		01 01 08 0a  00 00 04 d2  00 00 03 e8  // NOP NOP TS 1234 1000
		01 01 05 12  00 00 17 70  00 00 1b 58  // NOP NOP SACK len 18: 6000-7000
		00 00 23 28  00 00 2e e0               //                    9000-12000`)
	diffBytes(t, record(t, now, p), want)
}

// A pure ACK that is a NACK: sequence 0, the echoed sequence and the bitmap
// in the lockstep option (kind 253, ExID 0x4c53), no SACK.
func TestEncode_Golden_NackInExperimentalOption(t *testing.T) {
	p := &sim.Packet{
		SrcHost: 2, DstHost: 0, SrcPort: 5201, DstPort: 7, Proto: 6,
		Flags:   sim.FlagAck | sim.FlagNack | sim.FlagECE,
		Entropy: 0x1234,
		Seq:     1<<32 + 0x2000, Ack: 0x3000,
		Bitmap: 0x8000000000000005,
		Size:   64,
		TSval:  77*sim.Microsecond + 1, TSecr: 70 * sim.Microsecond,
	}
	want := unhex(t, `
		00 00 00 00  00 00 00 00  // time 0
		52 00 00 00  52 00 00 00  // caplen = origlen = 82: the headers exceed 14 + Size
		02 00 0a 00 00 01  02 00 0a 00 00 03  08 00
		// IPv4: not ECT; total 20+48 = 68; ID; DF; TTL 64 (not forwarded yet)
		45 00 00 44  12 34 40 00  40 06 14 7d  0a 00 00 03  0a 00 00 01
		// TCP: 5201 -> 7; seq 0 (pure ACK); ack 0x3000; 12 words; ECE+ACK
		14 51 00 07  00 00 00 00  00 00 30 00  c0 50 ff ff  00 00 00 00
		01 01 08 0a  00 00 00 4d  00 00 00 46  // NOP NOP TS 77 70
		fd 10 4c 53  00 00 20 00               // 253, len 16, ExID, echo 0x2000
		80 00 00 00  00 00 00 05               // bitmap`)
	diffBytes(t, record(t, 0, p), want)
}

// decoded is what the test parser reads back from one record.
type decoded struct {
	sec, nsec        uint32
	capLen, origLen  int
	dstMAC, srcMAC   [6]byte
	tos, ttl, proto  byte
	total, id, frag  uint16
	src, dst         [4]byte
	sport, dport     uint16
	seq, ack         uint32
	tcpLen           int
	flags            byte
	window, checksum uint16
	tsval, tsecr     uint32
	hasTS            bool
	sack             [][2]uint32
	exid             uint16
	exp              []byte // after the ExID
	hasExp           bool
}

// parseFile is a small independent pcap reader: the file header of
// draft-ietf-opsawg-pcap §4, then records (§5) holding Ethernet, IPv4 and
// TCP with options.
func parseFile(b []byte) ([]decoded, error) {
	if len(b) < FileHeaderLen {
		return nil, fmt.Errorf("file of %d bytes has no header", len(b))
	}
	le := binary.LittleEndian
	if m := le.Uint32(b); m != 0xa1b23c4d {
		return nil, fmt.Errorf("magic %#x, want 0xa1b23c4d", m)
	}
	snap := int(le.Uint32(b[16:]))
	if lt := le.Uint32(b[20:]); lt != 1 {
		return nil, fmt.Errorf("link type %d, want 1", lt)
	}
	var out []decoded
	for r := b[FileHeaderLen:]; len(r) > 0; {
		if len(r) < RecordHeaderLen {
			return nil, fmt.Errorf("record %d: %d bytes left, short header", len(out), len(r))
		}
		d := decoded{sec: le.Uint32(r), nsec: le.Uint32(r[4:]), capLen: int(le.Uint32(r[8:])), origLen: int(le.Uint32(r[12:]))}
		if d.capLen > snap || d.capLen > d.origLen || RecordHeaderLen+d.capLen > len(r) {
			return nil, fmt.Errorf("record %d: caplen %d, origlen %d, snaplen %d, %d bytes left", len(out), d.capLen, d.origLen, snap, len(r))
		}
		if d.nsec >= 1e9 {
			return nil, fmt.Errorf("record %d: nanoseconds %d", len(out), d.nsec)
		}
		if err := parseFrame(r[RecordHeaderLen:RecordHeaderLen+d.capLen], &d); err != nil {
			return nil, fmt.Errorf("record %d: %w", len(out), err)
		}
		out = append(out, d)
		r = r[RecordHeaderLen+d.capLen:]
	}
	return out, nil
}

func parseFrame(f []byte, d *decoded) error {
	be := binary.BigEndian
	if len(f) < 34 {
		return fmt.Errorf("frame of %d bytes", len(f))
	}
	copy(d.dstMAC[:], f[0:6])
	copy(d.srcMAC[:], f[6:12])
	if et := be.Uint16(f[12:]); et != 0x0800 {
		return fmt.Errorf("ethertype %#x", et)
	}
	ip := f[14:34]
	if ip[0] != 0x45 {
		return fmt.Errorf("version/IHL %#x", ip[0])
	}
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(be.Uint16(ip[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	if sum != 0xffff {
		return fmt.Errorf("IPv4 header checksum does not verify (sum %#x)", sum)
	}
	d.tos, d.total, d.id, d.frag, d.ttl, d.proto = ip[1], be.Uint16(ip[2:]), be.Uint16(ip[4:]), be.Uint16(ip[6:]), ip[8], ip[9]
	copy(d.src[:], ip[12:16])
	copy(d.dst[:], ip[16:20])
	if d.proto != 6 {
		if len(f) != 34 {
			return fmt.Errorf("protocol %d with %d bytes after IPv4", d.proto, len(f)-34)
		}
		return nil
	}
	tcp := f[34:]
	if len(tcp) < 20 {
		return fmt.Errorf("TCP header of %d bytes", len(tcp))
	}
	d.sport, d.dport, d.seq, d.ack = be.Uint16(tcp), be.Uint16(tcp[2:]), be.Uint32(tcp[4:]), be.Uint32(tcp[8:])
	d.tcpLen = int(tcp[12]>>4) * 4
	d.flags, d.window, d.checksum = tcp[13], be.Uint16(tcp[14:]), be.Uint16(tcp[16:])
	if d.tcpLen < 20 || d.tcpLen != len(tcp) {
		return fmt.Errorf("data offset %d bytes, %d captured", d.tcpLen, len(tcp))
	}
	for o := tcp[20:]; len(o) > 0; {
		switch o[0] {
		case 0:
			return nil
		case 1:
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return fmt.Errorf("option %d: bad length", o[0])
		}
		body := o[2:o[1]]
		switch o[0] {
		case 8:
			if len(body) != 8 {
				return fmt.Errorf("timestamps of %d bytes", len(body))
			}
			d.hasTS, d.tsval, d.tsecr = true, be.Uint32(body), be.Uint32(body[4:])
		case 5:
			if len(body)%8 != 0 {
				return fmt.Errorf("SACK of %d bytes", len(body))
			}
			for i := 0; i < len(body); i += 8 {
				d.sack = append(d.sack, [2]uint32{be.Uint32(body[i:]), be.Uint32(body[i+4:])})
			}
		case 253:
			if len(body) < 2 {
				return fmt.Errorf("experimental option of %d bytes", len(body))
			}
			d.hasExp, d.exid, d.exp = true, be.Uint16(body), body[2:]
		default:
			return fmt.Errorf("unexpected option kind %d", o[0])
		}
		o = o[o[1]:]
	}
	return nil
}

// randomPacket draws a packet over every field the encoder reads.
func randomPacket(r *rand.Rand) sim.Packet {
	kinds := []sim.Flags{sim.FlagData, sim.FlagAck, sim.FlagAck | sim.FlagNack, sim.FlagData | sim.FlagAck}
	p := sim.Packet{
		SrcHost: int32(r.IntN(5000)), DstHost: int32(r.IntN(5000)),
		SrcPort: uint16(r.Uint32()), DstPort: uint16(r.Uint32()), Proto: 6,
		Flags:   kinds[r.IntN(len(kinds))] | sim.Flags(r.IntN(16))<<2, // ECT, CE, ECE, CWR at random
		Entropy: uint16(r.Uint32()), Hops: uint8(r.IntN(8)),
		Seq: r.Uint64() >> r.IntN(64), Ack: r.Uint64() >> r.IntN(64), Bitmap: r.Uint64(),
		TSval: sim.Time(r.Int64N(int64(3600 * sim.Second))), TSecr: sim.Time(r.Int64N(int64(3600 * sim.Second))),
		NSack: uint8(r.IntN(sim.MaxSackBlocks + 1)),
	}
	if p.Flags&sim.FlagData != 0 {
		p.Payload = int32(r.IntN(9000))
	}
	p.Size = p.Payload + int32(r.IntN(100))
	for i := range p.Sack {
		p.Sack[i] = sim.SackBlock{Start: r.Uint64(), End: r.Uint64()}
	}
	return p
}

// checkDecoded compares a decoded record with the packet, field by field,
// as the package comment documents the mapping.
func checkDecoded(t *testing.T, p *sim.Packet, now sim.Time, d *decoded) {
	t.Helper()
	fail := func(field string, want, got any) {
		t.Helper()
		t.Errorf("packet %+v: %s: want %v, got %v", *p, field, want, got)
	}
	ns := uint64(now / sim.Nanosecond)
	if uint64(d.sec)*1e9+uint64(d.nsec) != ns {
		fail("timestamp (ns)", ns, uint64(d.sec)*1e9+uint64(d.nsec))
	}
	if d.src != HostIP(p.SrcHost) || d.dst != HostIP(p.DstHost) {
		fail("addresses", [2][4]byte{HostIP(p.SrcHost), HostIP(p.DstHost)}, [2][4]byte{d.src, d.dst})
	}
	if want := 10<<24 | uint32(p.SrcHost) + 1; binary.BigEndian.Uint32(d.src[:]) != want {
		fail("source address 10.0.0.0+index+1", want, binary.BigEndian.Uint32(d.src[:]))
	}
	if d.srcMAC != HostMAC(p.SrcHost) || d.dstMAC != HostMAC(p.DstHost) {
		fail("MACs", [2][6]byte{HostMAC(p.SrcHost), HostMAC(p.DstHost)}, [2][6]byte{d.srcMAC, d.dstMAC})
	}
	wantECN := byte(0)
	if p.Flags&sim.FlagECT != 0 {
		wantECN = 2
	}
	if p.Flags&sim.FlagCE != 0 {
		wantECN = 3
	}
	if d.tos != wantECN {
		fail("IPv4 traffic class (ECN)", wantECN, d.tos)
	}
	if d.id != p.Entropy {
		fail("IPv4 ID", p.Entropy, d.id)
	}
	if d.frag != 0x4000 {
		fail("IPv4 flags/fragment", 0x4000, d.frag)
	}
	if d.ttl != byte(64-int(p.Hops)) {
		fail("TTL", 64-int(p.Hops), d.ttl)
	}
	if d.sport != p.SrcPort || d.dport != p.DstPort {
		fail("ports", [2]uint16{p.SrcPort, p.DstPort}, [2]uint16{d.sport, d.dport})
	}
	pureAck := p.Flags&sim.FlagAck != 0 && p.Flags&sim.FlagData == 0
	nack := p.Flags&sim.FlagNack != 0
	wantSeq := uint32(p.Seq)
	if pureAck {
		wantSeq = 0
	}
	if d.seq != wantSeq || d.ack != uint32(p.Ack) {
		fail("seq/ack", [2]uint32{wantSeq, uint32(p.Ack)}, [2]uint32{d.seq, d.ack})
	}
	var wantFlags byte
	if p.Flags&sim.FlagAck != 0 {
		wantFlags |= 0x10
	}
	if p.Flags&sim.FlagECE != 0 {
		wantFlags |= 0x40
	}
	if p.Flags&sim.FlagCWR != 0 {
		wantFlags |= 0x80
	}
	if d.flags != wantFlags {
		fail("TCP flags", wantFlags, d.flags)
	}
	if d.window != 65535 || d.checksum != 0 {
		fail("window/checksum", "65535/0", fmt.Sprintf("%d/%d", d.window, d.checksum))
	}
	if !d.hasTS || d.tsval != uint32(p.TSval/sim.Microsecond) || d.tsecr != uint32(p.TSecr/sim.Microsecond) {
		fail("timestamps (us)", [2]int64{int64(p.TSval / sim.Microsecond), int64(p.TSecr / sim.Microsecond)}, [2]uint32{d.tsval, d.tsecr})
	}
	// Option space: 40 - 12 (timestamps) - 16 (NACK option) for SACK's
	// NOP NOP kind len and 8 bytes a block.
	room := 40 - 12
	if nack {
		room -= 16
	}
	wantBlocks := min(int(p.NSack), (room-4)/8)
	if len(d.sack) != wantBlocks {
		fail("SACK blocks", wantBlocks, len(d.sack))
	}
	for i := range min(len(d.sack), wantBlocks) {
		if w := [2]uint32{uint32(p.Sack[i].Start), uint32(p.Sack[i].End)}; d.sack[i] != w {
			fail(fmt.Sprintf("SACK block %d", i), w, d.sack[i])
		}
	}
	if wantBlocks > 0 {
		room -= 4 + 8*wantBlocks
	}
	wantExp := nack || pureAck && room >= 8
	if d.hasExp != wantExp {
		fail("lockstep option present", wantExp, d.hasExp)
	}
	if d.hasExp {
		var w []byte
		w = binary.BigEndian.AppendUint32(w, uint32(p.Seq))
		if nack {
			w = binary.BigEndian.AppendUint64(w, p.Bitmap)
		}
		if d.exid != 0x4c53 || !bytes.Equal(d.exp, w) {
			fail("lockstep option", fmt.Sprintf("4c53 %x", w), fmt.Sprintf("%04x %x", d.exid, d.exp))
		}
	}
	wantTotal := 20 + d.tcpLen + int(p.Payload)
	if int(d.total) != wantTotal {
		fail("IPv4 total length", wantTotal, d.total)
	}
	if d.capLen != 14+20+d.tcpLen {
		fail("captured length", 14+20+d.tcpLen, d.capLen)
	}
	if w := 14 + max(int(p.Size), wantTotal); d.origLen != w {
		fail("original length", w, d.origLen)
	}
}

// Every field survives encoding and decoding by an independent parser.
func TestEncode_RoundTrip_FieldsDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	const n = 2000
	pkts := make([]sim.Packet, n)
	times := make([]sim.Time, n)
	var now sim.Time
	for i := range pkts {
		pkts[i] = randomPacket(r)
		now += sim.Time(r.Int64N(int64(10 * sim.Second)))
		times[i] = now
		if err := w.WritePacket(now, &pkts[i]); err != nil {
			t.Fatalf("WritePacket: %v", err)
		}
	}
	if w.Packets() != n {
		t.Errorf("Packets: want %d, got %d", n, w.Packets())
	}
	recs, err := parseFile(buf.Bytes())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(recs) != n {
		t.Fatalf("records: want %d, got %d", n, len(recs))
	}
	for i := range recs {
		checkDecoded(t, &pkts[i], times[i], &recs[i])
		if t.Failed() {
			break
		}
	}
}

// RFC 7323 §3 with 4 SACK blocks: only 3 fit beside the timestamps, the
// most recent (first) ones; a NACK leaves room for one.
func TestEncode_RFC2018_SackBlocksLimitedByOptionSpace(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags sim.Flags
		want  int
	}{
		{"data", sim.FlagData, 3},
		{"ack", sim.FlagAck, 3},
		{"nack", sim.FlagAck | sim.FlagNack, 1},
	} {
		p := &sim.Packet{Proto: 6, Flags: c.flags, NSack: 4, Sack: [4]sim.SackBlock{{Start: 10, End: 20}, {Start: 30, End: 40}, {Start: 50, End: 60}, {Start: 70, End: 80}}}
		recs, err := parseFile(append(fileHeader(t), record(t, 0, p)...))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := len(recs[0].sack); got != c.want || recs[0].sack[0] != [2]uint32{10, 20} {
			t.Errorf("%s: want %d blocks starting [10,20], got %v", c.name, c.want, recs[0].sack)
		}
		if recs[0].tcpLen > 60 {
			t.Errorf("%s: TCP header %d bytes, the maximum is 60", c.name, recs[0].tcpLen)
		}
	}
}

func fileHeader(t testing.TB) []byte {
	var buf bytes.Buffer
	if _, err := NewWriter(&buf); err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	return buf.Bytes()
}

// A packet of another protocol gets an IPv4 header and nothing after it.
func TestEncode_NonTCP_IPv4Only(t *testing.T) {
	p := &sim.Packet{SrcHost: 1, DstHost: 2, Proto: 17, Payload: 100, Size: 150}
	recs, err := parseFile(append(fileHeader(t), record(t, 0, p)...))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if d := recs[0]; d.capLen != 34 || d.total != 120 || d.origLen != 164 || d.proto != 17 {
		t.Errorf("want caplen 34, total 120, origlen 164, proto 17; got %d, %d, %d, %d", d.capLen, d.total, d.origLen, d.proto)
	}
}

// docs/style.md §9: the per-packet path does not allocate.
func TestWriter_WritePacketDoesNotAllocate(t *testing.T) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	p := randomPacket(rand.New(rand.NewPCG(3, 4)))
	if a := testing.AllocsPerRun(100, func() { _ = w.WritePacket(5*sim.Microsecond, &p) }); a != 0 {
		t.Errorf("WritePacket: want 0 allocations, got %v", a)
	}
	c := NewCapture()
	for range 1000 { // warm the buffer up
		c.Tap(0, &p, true)
	}
	c.buf.Reset()
	if a := testing.AllocsPerRun(100, func() { c.Tap(0, &p, false) }); a != 0 {
		t.Errorf("Capture.Tap after warm-up: want 0 allocations, got %v", a)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, io.ErrShortWrite
	}
	f.n--
	return len(b), nil
}

// The first write error sticks: later packets are not written.
func TestWriter_ErrorSticks(t *testing.T) {
	fw := &failWriter{n: 1} // the file header succeeds
	w, err := NewWriter(fw)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	p := &sim.Packet{Proto: 6}
	if err := w.WritePacket(0, p); err == nil {
		t.Fatalf("WritePacket: want an error, got nil")
	}
	fw.n = 10
	if err := w.WritePacket(0, p); err == nil || w.Packets() != 0 {
		t.Errorf("after an error: want the error again and 0 packets, got %v and %d", err, w.Packets())
	}
}

// Capture holds a whole file: the header, then one record per Tap call.
func TestCapture_TapAppendsRecords(t *testing.T) {
	c := NewCapture()
	r := rand.New(rand.NewPCG(5, 6))
	var pkts [3]sim.Packet
	for i := range pkts {
		pkts[i] = randomPacket(r)
		c.Tap(sim.Time(i)*sim.Microsecond, &pkts[i], i%2 == 0)
	}
	var out bytes.Buffer
	n, err := c.WriteTo(&out)
	if err != nil || n != int64(len(c.Bytes())) || !bytes.Equal(out.Bytes(), c.Bytes()) {
		t.Fatalf("WriteTo: want %d bytes equal to Bytes(), got %d (err %v)", len(c.Bytes()), n, err)
	}
	recs, err := parseFile(out.Bytes())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(recs) != 3 || c.Packets() != 3 {
		t.Fatalf("want 3 records and Packets() 3, got %d and %d", len(recs), c.Packets())
	}
	for i := range recs {
		checkDecoded(t, &pkts[i], sim.Time(i)*sim.Microsecond, &recs[i])
	}
}

func FuzzEncode(f *testing.F) {
	f.Add(int32(0), int32(1), uint16(sim.FlagData|sim.FlagECT), uint64(0), uint64(0), uint8(0), int32(1436), int32(1500), uint8(0))
	f.Add(int32(3), int32(0), uint16(sim.FlagAck|sim.FlagNack), uint64(1<<40), uint64(7), uint8(4), int32(0), int32(64), uint8(3))
	f.Add(int32(-1), int32(1<<30), uint16(0xffff), ^uint64(0), ^uint64(0), uint8(255), int32(-5), int32(-5), uint8(255))
	f.Fuzz(func(t *testing.T, src, dst int32, flags uint16, seq, ack uint64, nsack uint8, payload, size int32, hops uint8) {
		p := &sim.Packet{SrcHost: src, DstHost: dst, Proto: 6, Flags: sim.Flags(flags), Seq: seq, Ack: ack,
			NSack: nsack, Payload: payload, Size: size, Hops: hops}
		var b [MaxHeaderLen]byte
		capLen, origLen := Encode(b[:], p)
		if p.Flags&sim.FlagPause != 0 {
			// A PFC frame (MAC control), not IPv4/TCP.
			if capLen != EthernetLen+pauseLen || origLen != minFrameLen {
				t.Fatalf("PAUSE: caplen %d, origlen %d", capLen, origLen)
			}
			return
		}
		if capLen < 54 || capLen > MaxHeaderLen || origLen < capLen {
			t.Fatalf("caplen %d, origlen %d", capLen, origLen)
		}
		var d decoded
		if err := parseFrame(b[:capLen], &d); err != nil {
			t.Fatalf("parse: %v", err)
		}
	})
}

// go test ./pcap -run '^$' -bench . -benchmem
func BenchmarkWritePacket(b *testing.B) {
	w, err := NewWriter(io.Discard)
	if err != nil {
		b.Fatalf("NewWriter: %v", err)
	}
	p := randomPacket(rand.New(rand.NewPCG(7, 8)))
	b.ReportAllocs()
	for b.Loop() {
		_ = w.WritePacket(0, &p)
	}
}
