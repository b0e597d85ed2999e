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
	// Triggers in the order of their trigger lines.
	Triggers []CMTrigger
}

// CMTrigger is one trigger line of a connection matrix.
type CMTrigger struct {
	ID    int64
	Type  string // oneshot, multishot or barrier
	Count int64  // barrier: activations needed
	// Targets are the flows (indices into Flows) that start on it, in file
	// order; Activators the flows whose completion activates it.
	Targets, Activators []int32
}

// cmFlowTrig is what a connection line says about triggers.
type cmFlowTrig struct {
	wait, sendDone, recvDone int64 // trigger ids, 0: none
	line                     int
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
//	trigger    = "trigger" { "id" n | "oneshot" | "multishot" | "barrier" | "count" n }
//	failure    = "failure" ...
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
// We honour Nodes, Connections, Triggers, start, size and id, and
// triggers with htsim's semantics (sim/trigger.cpp; linkTriggers): a flow
// with "trigger n" starts on trigger n instead of at a time, one with
// "send_done_trigger n" or "recv_done_trigger n" activates trigger n when
// its sender has every ACK or its receiver every byte; the flows'
// Need/OnSendDone/OnRecvDone carry the result (docs/decisions.md, "Traffic
// with dependencies"). Everything else htsim accepts is rejected with an
// error naming it, never ignored: addon, flow priorities (prio), link
// failures (failure lines, a non-zero Failures count) and unbounded flows
// (size 0, or no size: htsim then sends until the run ends). We are
// stricter than htsim where it silently misreads: unknown header keywords
// (htsim skips them), a repeated header or attribute (htsim keeps the
// last), trailing junk after a number (stoi stops at it), negative hosts,
// hosts outside Nodes, src == dst and duplicate ids (htsim checks none of
// these in load), and what htsim only aborts on when it runs (a oneshot
// activated twice, a barrier activated more than its count). We are
// looser only where no meaning changes: '#' comments and blank lines are
// allowed anywhere (htsim allows them in the header), any run of blanks
// or tabs separates tokens (htsim splits on single spaces), and a
// triggered connection needs no id.
//
// name is used in errors, which are one line with the file, line and field:
//
//	x.cm:12: trigger 7 is used but no trigger line defines it
func ParseCM(name string, r io.Reader) (*ConnMatrix, error) {
	p := cmParser{name: name, ids: map[int64]int{}, trigs: map[int64]int{}, trigCount: -1}
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
	// Triggers: the count from the header (-1: no header), the trigger
	// lines by id (looked up, never iterated), and every connection's
	// trigger attributes.
	trigCount int64
	trigLine  int
	trigs     map[int64]int // trigger id -> index in cm.Triggers
	trigLines []int
	flowTrig  []cmFlowTrig
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
		return p.parseTrigger(tok)
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
		if p.trigLine != 0 {
			return p.errf("Triggers given twice (also line %d)", p.trigLine)
		}
		p.trigCount, p.trigLine = n, p.line
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
		ft                       = cmFlowTrig{line: p.line}
		hasWait, hasSend, hasRec bool
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
			return p.errf("the addon attribute is not supported")
		case "trigger":
			given = &hasWait
		case "send_done_trigger":
			given = &hasSend
		case "recv_done_trigger":
			given = &hasRec
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
		case "trigger", "send_done_trigger", "recv_done_trigger":
			n, err := parseCount(val)
			if err != nil {
				return p.errf("%s: %v", key, err)
			}
			if n == 0 || n > math.MaxUint32 {
				return p.errf("%s: trigger ids are 1..%d (htsim's triggerid_t), got %d", key, uint32(math.MaxUint32), n)
			}
			switch key {
			case "trigger":
				ft.wait = n
			case "send_done_trigger":
				ft.sendDone = n
			default:
				ft.recvDone = n
			}
		}
	}
	if hasStart && hasWait {
		return p.errf("start and trigger: a flow starts at a time or on a trigger, not both")
	}
	if !hasStart && !hasWait {
		return p.errf("start: missing (htsim needs a start time or a trigger)")
	}
	if !hasSize {
		return p.errf("size: missing (htsim runs such a flow until the end, which is not supported yet)")
	}
	p.cm.Flows = append(p.cm.Flows, Flow{
		ID: int32(len(p.cm.Flows)), Src: src, Dst: dst, Size: size, Start: start,
	})
	p.cm.FileIDs = append(p.cm.FileIDs, id)
	p.flowTrig = append(p.flowTrig, ft)
	return nil
}

// parseTrigger reads a trigger line, as htsim does: "trigger" then, in any
// order, "id" n, one of oneshot, multishot and barrier, and "count" n.
func (p *cmParser) parseTrigger(tok []string) error {
	var t CMTrigger
	hasCount := false
	for i := 1; i < len(tok); i++ {
		switch key := tok[i]; key {
		case "id", "count":
			if (key == "id" && t.ID != 0) || (key == "count" && hasCount) {
				return p.errf("trigger: %s given twice", key)
			}
			if i+1 >= len(tok) {
				return p.errf("trigger: %s: missing value", key)
			}
			i++
			n, err := parseCount(tok[i])
			if err != nil {
				return p.errf("trigger: %s: %v", key, err)
			}
			if key == "id" {
				if n == 0 || n > math.MaxUint32 {
					return p.errf("trigger: id: trigger ids are 1..%d (htsim rejects 0), got %d", uint32(math.MaxUint32), n)
				}
				t.ID = n
			} else {
				t.Count, hasCount = n, true
			}
		case "oneshot", "multishot", "barrier":
			if t.Type != "" {
				return p.errf("trigger: type given twice (%s and %s)", t.Type, key)
			}
			t.Type = key
		default:
			return p.errf("trigger: unknown attribute %s (want id, oneshot, multishot, barrier or count)", tokq(key))
		}
	}
	if t.ID == 0 {
		return p.errf("trigger: missing id")
	}
	if t.Type == "" {
		return p.errf("trigger %d: missing type (oneshot, multishot or barrier)", t.ID)
	}
	if t.Type == "barrier" && (!hasCount || t.Count == 0) {
		return p.errf("trigger %d: a barrier needs a positive count", t.ID)
	}
	if t.Type != "barrier" && hasCount {
		return p.errf("trigger %d: count is for barriers only (htsim ignores it for %s)", t.ID, t.Type)
	}
	if t.Count > math.MaxInt32 {
		return p.errf("trigger %d: count %d is too large", t.ID, t.Count)
	}
	if k, dup := p.trigs[t.ID]; dup {
		return p.errf("trigger %d is already defined on line %d", t.ID, p.trigLines[k])
	}
	p.trigs[t.ID] = len(p.cm.Triggers)
	p.trigLines = append(p.trigLines, p.line)
	p.cm.Triggers = append(p.cm.Triggers, t)
	return nil
}

// linkTriggers resolves the connections' trigger attributes into the
// flows' dependencies, with htsim's semantics (sim/trigger.cpp): a oneshot
// starts all its targets on its first activation, a multishot its k-th
// target on its k-th activation, a barrier all its targets on its count-th
// activation. What htsim aborts on at run time is an error here: a
// second activation of a oneshot, more activations of a barrier than its
// count, and (for both) activations with no target.
func (p *cmParser) linkTriggers() error {
	cm := &p.cm
	for i, ft := range p.flowTrig {
		for _, ref := range [3]int64{ft.wait, ft.sendDone, ft.recvDone} {
			if _, ok := p.trigs[ref]; ref != 0 && !ok {
				return fmt.Errorf("%s:%d: trigger %d is used but no trigger line defines it", p.name, ft.line, ref)
			}
		}
		if ft.wait != 0 {
			t := &cm.Triggers[p.trigs[ft.wait]]
			t.Targets = append(t.Targets, int32(i))
		}
		for _, ref := range [2]int64{ft.sendDone, ft.recvDone} {
			if ref != 0 {
				t := &cm.Triggers[p.trigs[ref]]
				t.Activators = append(t.Activators, int32(i))
			}
		}
	}
	for k := range cm.Triggers {
		t := &cm.Triggers[k]
		at := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: trigger %d: %s", p.name, p.trigLines[k], t.ID, fmt.Sprintf(format, args...))
		}
		na := len(t.Activators)
		switch {
		case na > 0 && len(t.Targets) == 0 && t.Type != "multishot":
			return at("%d connections activate it but none starts on it (htsim aborts)", na)
		case t.Type == "oneshot" && na > 1:
			return at("a oneshot is activated by %d connections; htsim aborts on the second", na)
		case t.Type == "barrier" && int64(na) > t.Count:
			return at("a barrier of count %d is activated by %d connections; htsim aborts on the extra ones", t.Count, na)
		}
		for j, g := range t.Targets {
			f := &cm.Flows[g]
			switch t.Type {
			case "oneshot":
				f.Need = 1
			case "multishot":
				f.Need = int32(j + 1)
			case "barrier":
				f.Need = int32(t.Count)
			}
		}
	}
	for i, ft := range p.flowTrig {
		f := &cm.Flows[i]
		if ft.sendDone != 0 {
			f.OnSendDone = cm.Triggers[p.trigs[ft.sendDone]].Targets
		}
		if ft.recvDone != 0 {
			f.OnRecvDone = cm.Triggers[p.trigs[ft.recvDone]].Targets
		}
	}
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
	if n := int64(len(p.cm.Triggers)); p.trigCount >= 0 && n != p.trigCount || p.trigCount < 0 && n > 0 {
		return nil, fmt.Errorf("%s:%d: Triggers %d but the file has %d trigger lines", p.name, max(p.trigLine, 1), max(p.trigCount, 0), n)
	}
	if err := p.linkTriggers(); err != nil {
		return nil, err
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
