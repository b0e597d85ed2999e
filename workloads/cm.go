package workloads

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-sim/lockstep/sim"
)

// ConnMatrix is an htsim connection matrix (.cm file) read by ParseCM.
type ConnMatrix struct {
	Nodes       int // hosts of the fabric, from the "Nodes" header
	Connections int // from the "Connections" header; == len(Flows)
	// Flows in file order, numbered 0..n-1 in that order (not by htsim id).
	Flows []Flow
	// FileIDs[i] is the "id" the file gave Flows[i], or 0 if its line had
	// none. Non-zero ids are unique.
	FileIDs []int64
}

// ParseCM reads an htsim connection matrix as htsim's
// ConnectionMatrix::load(istream&) does (Broadcom/csg-htsim,
// sim/datacenter/connection_matrix.cpp), for example
//
//	Nodes 16
//	Connections 2
//	7->5 id 1 start 0 size 2000000
//	15->1 id 2 start 1000000 size 2000000
//
// Grammar (one item a line; tokens separated by blanks):
//
//	header     = ("Nodes" | "Connections" | "Triggers" | "Failures") count
//	connection = src "->" dst { attribute }
//	attribute  = "start" ps | "size" bytes | "id" n
//	           | "prio" n | "trigger" n | "send_done_trigger" n
//	           | "recv_done_trigger" n | "addon"
//	trigger    = "trigger" ...       failure = "failure" ...
//
// Header lines come before the first connection, as in htsim; Nodes and
// Connections are required (htsim falls back to its own node count and to
// 0 connections). start is in
// picoseconds, as in htsim's load() ("start is in picoseconds already"; the
// value goes unchanged to connect() as a simtime_picosec). NB: htsim's own
// ConnectionMatrix::save writes start in microseconds, so files it saves
// with a non-zero start do not load back correctly even in htsim; we follow
// load(). start may be written as a decimal ("0.000000", "1.5e6") as htsim
// reads it with stof, but must be a whole number of picoseconds; we keep it
// exact where htsim rounds it to a 32-bit float (24 significant bits).
//
// We honour Nodes, Connections, start, size and id, plus "Triggers 0" and
// "Failures 0". Everything else htsim accepts is rejected with an error
// naming it, never ignored: triggers (trigger lines, the trigger,
// send_done_trigger, recv_done_trigger and addon attributes, a non-zero
// Triggers count), flow priorities (prio), link failures (failure lines, a
// non-zero Failures count) and unbounded flows (size 0, or no size: htsim
// then sends until the run ends). We are stricter than htsim where it
// silently misreads: unknown header keywords (htsim skips them), a
// repeated header or attribute (htsim keeps the last), trailing junk after
// a number (stoi stops at it), negative hosts, hosts outside Nodes, src ==
// dst and duplicate ids (htsim checks none of these in load). We are
// looser only where no meaning changes: '#' comments and blank lines are
// allowed anywhere (htsim allows them in the header), and any run of blanks
// or tabs separates tokens (htsim splits on single spaces).
//
// name is used in errors, which are one line with the file, line and field:
//
//	x.cm:12: triggers are not supported yet (send_done_trigger)
func ParseCM(name string, r io.Reader) (*ConnMatrix, error) {
	p := cmParser{name: name, ids: map[int64]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %v", name, p.line+1, err)
	}
	return p.finish()
}

type cmParser struct {
	name string
	line int
	// Header values and the lines they were on (0: not given).
	nodes, conns         int
	nodesLine, connsLine int
	inBody               bool
	firstConnLine        int
	cm                   ConnMatrix
	ids                  map[int64]int // file id -> line; looked up, never iterated
}

func (p *cmParser) errf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.name, p.line, fmt.Sprintf(format, args...))
}

func (p *cmParser) parseLine(text string) error {
	tok := strings.Fields(text)
	if len(tok) == 0 || strings.HasPrefix(tok[0], "#") {
		return nil
	}
	switch {
	case strings.Contains(tok[0], "->"):
		p.inBody = true
		if p.firstConnLine == 0 {
			p.firstConnLine = p.line
		}
		return p.parseConnection(tok)
	case tok[0] == "trigger":
		return p.errf("triggers are not supported yet (trigger line)")
	case tok[0] == "failure":
		return p.errf("link failures are not supported yet (failure line)")
	case tok[0] == "Nodes" || tok[0] == "Connections" || tok[0] == "Triggers" || tok[0] == "Failures":
		return p.parseHeader(tok)
	case tok[0][0] >= '0' && tok[0][0] <= '9' || tok[0][0] == '-':
		return p.errf("connection must look like \"<src>-><dst>\", got %s", tokq(tok[0]))
	}
	return p.errf("unknown keyword %s", tokq(tok[0]))
}

func (p *cmParser) parseHeader(tok []string) error {
	key := tok[0]
	if p.inBody {
		return p.errf("%s must come before the first connection (line %d)", key, p.firstConnLine)
	}
	if len(tok) != 2 {
		return p.errf("%s: want \"%s <count>\", got %d fields", key, key, len(tok))
	}
	n, err := parseCount(tok[1])
	if err != nil {
		return p.errf("%s: %v", key, err)
	}
	switch key {
	case "Nodes":
		if p.nodesLine != 0 {
			return p.errf("Nodes given twice (also line %d)", p.nodesLine)
		}
		if n < 1 || n > math.MaxInt32 {
			return p.errf("Nodes: must be in [1, %d], got %d", math.MaxInt32, n)
		}
		p.nodes, p.nodesLine = int(n), p.line
	case "Connections":
		if p.connsLine != 0 {
			return p.errf("Connections given twice (also line %d)", p.connsLine)
		}
		if n > maxFlows {
			return p.errf("Connections: %d is more than the %d flows a list can hold", n, maxFlows)
		}
		p.conns, p.connsLine = int(n), p.line
	case "Triggers":
		if n != 0 {
			return p.errf("triggers are not supported yet (Triggers %d)", n)
		}
	case "Failures":
		if n != 0 {
			return p.errf("link failures are not supported yet (Failures %d)", n)
		}
	}
	return nil
}

func (p *cmParser) parseConnection(tok []string) error {
	if p.nodesLine == 0 {
		return p.errf("connection before the \"Nodes <count>\" header")
	}
	if p.connsLine == 0 {
		return p.errf("connection before the \"Connections <count>\" header")
	}
	if len(p.cm.Flows) >= p.conns {
		return p.errf("more connections than Connections %d (line %d)", p.conns, p.connsLine)
	}
	srcTok, dstTok, _ := strings.Cut(tok[0], "->")
	if srcTok == "" || dstTok == "" {
		return p.errf("connection must look like \"<src>-><dst>\", got %s", tokq(tok[0]))
	}
	src, err := p.parseHostTok("src", srcTok)
	if err != nil {
		return err
	}
	dst, err := p.parseHostTok("dst", dstTok)
	if err != nil {
		return err
	}
	if src == dst {
		return p.errf("src and dst are both host %d", src)
	}
	var (
		start    sim.Time
		size, id int64
		// Which attributes the line has given.
		hasStart, hasSize, hasID bool
	)
	for i := 1; i < len(tok); i++ {
		key := tok[i]
		var given *bool
		switch key {
		case "start":
			given = &hasStart
		case "size":
			given = &hasSize
		case "id":
			given = &hasID
		case "addon":
			return p.errf("triggers are not supported yet (addon)")
		case "trigger", "send_done_trigger", "recv_done_trigger":
			return p.errf("triggers are not supported yet (%s)", key)
		case "prio":
			return p.errf("flow priorities are not supported yet (prio)")
		default:
			return p.errf("unknown attribute %s (want start, size or id)", tokq(key))
		}
		if *given {
			return p.errf("%s given twice", key)
		}
		*given = true
		if i+1 >= len(tok) {
			return p.errf("%s: missing value", key)
		}
		i++
		val := tok[i]
		switch key {
		case "start":
			ps, err := parseWholeDecimal(val)
			if errors.Is(err, errFractional) {
				return p.errf("start: %s is not a whole number of picoseconds", tokq(val))
			}
			if err != nil {
				return p.errf("start: %s %v", tokq(val), err)
			}
			start = sim.Time(ps)
		case "size":
			n, err := parseCount(val)
			if err != nil {
				return p.errf("size: %v", err)
			}
			if n == 0 {
				return p.errf("size: 0 is an unbounded flow in htsim, which is not supported yet")
			}
			size = n
		case "id":
			n, err := parseCount(val)
			if err != nil {
				return p.errf("id: %v", err)
			}
			if n == 0 {
				return p.errf("id: must be positive (htsim rejects flow id 0)")
			}
			if l, dup := p.ids[n]; dup {
				return p.errf("id: %d is already used on line %d", n, l)
			}
			p.ids[n] = p.line
			id = n
		}
	}
	if !hasStart {
		return p.errf("start: missing (htsim needs a start time or a trigger)")
	}
	if !hasSize {
		return p.errf("size: missing (htsim runs such a flow until the end, which is not supported yet)")
	}
	p.cm.Flows = append(p.cm.Flows, Flow{
		ID: int32(len(p.cm.Flows)), Src: src, Dst: dst, Size: size, Start: start,
	})
	p.cm.FileIDs = append(p.cm.FileIDs, id)
	return nil
}

func (p *cmParser) parseHostTok(field, s string) (int, error) {
	n, err := parseCount(s)
	if err != nil {
		return 0, p.errf("%s: %v", field, err)
	}
	if n >= int64(p.nodes) {
		return 0, p.errf("%s: host %d does not exist (Nodes %d)", field, n, p.nodes)
	}
	return int(n), nil
}

func (p *cmParser) finish() (*ConnMatrix, error) {
	end := max(p.line, 1)
	if p.nodesLine == 0 {
		return nil, fmt.Errorf("%s:%d: missing header \"Nodes <count>\"", p.name, end)
	}
	if p.connsLine == 0 {
		return nil, fmt.Errorf("%s:%d: missing header \"Connections <count>\"", p.name, end)
	}
	if n := len(p.cm.Flows); n != p.conns {
		return nil, fmt.Errorf("%s:%d: Connections %d but the file has %d connection lines", p.name, p.connsLine, p.conns, n)
	}
	cm := p.cm
	cm.Nodes, cm.Connections = p.nodes, p.conns
	if cm.Flows == nil {
		cm.Flows, cm.FileIDs = []Flow{}, []int64{}
	}
	return &cm, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseCount parses a non-negative decimal integer written with digits only.
func parseCount(s string) (int64, error) {
	if !isDigits(s) {
		if strings.HasPrefix(s, "-") && isDigits(s[1:]) {
			return 0, fmt.Errorf("%s must not be negative", tokq(s))
		}
		return 0, fmt.Errorf("%s is not a whole number", tokq(s))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is too large", tokq(s))
	}
	return n, nil
}

var (
	errNotNumber   = errors.New("is not a number")
	errNegative    = errors.New("must not be negative")
	errFractional  = errors.New("is not a whole number")
	errNumTooLarge = errors.New("is too large")
)

// parseWholeDecimal parses a non-negative decimal number with an optional
// fraction and exponent ("12", "0.000000", "1.5e6") whose value is a whole
// number that fits an int64. It is exact: no float rounding.
func parseWholeDecimal(s string) (int64, error) {
	rest := strings.TrimPrefix(s, "+")
	if strings.HasPrefix(rest, "-") {
		return 0, errNegative
	}
	mant, exp := rest, 0
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		mant = rest[:i]
		e, err := strconv.Atoi(rest[i+1:])
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, errNumTooLarge
			}
			return 0, errNotNumber
		}
		if e < -1000 || e > 1000 {
			return 0, errNumTooLarge
		}
		exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	digits := whole + frac
	if digits == "" || (whole != "" && !isDigits(whole)) || (frac != "" && !isDigits(frac)) {
		return 0, errNotNumber
	}
	// value = 0.digits * 10^point
	point := len(whole) + exp
	trimmed := strings.TrimLeft(digits, "0")
	point -= len(digits) - len(trimmed)
	trimmed = strings.TrimRight(trimmed, "0")
	if trimmed == "" {
		return 0, nil
	}
	if point < len(trimmed) {
		return 0, errFractional
	}
	if point > 19 {
		return 0, errNumTooLarge
	}
	n, err := strconv.ParseInt(trimmed+strings.Repeat("0", point-len(trimmed)), 10, 64)
	if err != nil {
		return 0, errNumTooLarge
	}
	return n, nil
}

// maxQuoted bounds how much of a token an error quotes: an error names the
// token at fault, never more of a file's content (docs/decisions.md).
const maxQuoted = 32

// tokq quotes token s for an error, cut to maxQuoted bytes.
func tokq(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:cutAt(s)]) + "..."
	}
	return strconv.Quote(s)
}

// clipTok is s cut to maxQuoted bytes, unquoted (for a token already
// known to be a number).
func clipTok(s string) string {
	if len(s) > maxQuoted {
		return s[:cutAt(s)] + "..."
	}
	return s
}

func cutAt(s string) int {
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}
