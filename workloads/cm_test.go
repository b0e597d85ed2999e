package workloads

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstep-sim/lockstep/sim"
)

func TestParseCM_HtsimFile(t *testing.T) {
	f, err := os.Open("testdata/example.cm")
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer f.Close()
	cm, err := ParseCM("example.cm", f)
	if err != nil {
		t.Fatalf("ParseCM: unexpected error %v", err)
	}
	if cm.Nodes != 8 || cm.Connections != 10 || len(cm.Flows) != 10 || len(cm.FileIDs) != 10 {
		t.Fatalf("Nodes %d Connections %d, %d flows, %d ids; want 8, 10, 10, 10", cm.Nodes, cm.Connections, len(cm.Flows), len(cm.FileIDs))
	}
	checkIDs(t, cm.Flows)
	wantFirst := Flow{ID: 0, Src: 0, Dst: 5, Size: 2000000, Start: 0}
	if !reflect.DeepEqual(cm.Flows[0], wantFirst) {
		t.Errorf("Flows[0] = %+v, want %+v", cm.Flows[0], wantFirst)
	}
	// start is in picoseconds: 10000000 ps = 10 us.
	wantLast := []Flow{
		{ID: 8, Src: 1, Dst: 0, Size: 65536, Start: 10 * sim.Microsecond},
		{ID: 9, Src: 2, Dst: 0, Size: 65536, Start: 10 * sim.Microsecond},
	}
	if !reflect.DeepEqual(cm.Flows[8:], wantLast) {
		t.Errorf("Flows[8:] = %+v, want %+v", cm.Flows[8:], wantLast)
	}
	wantIDs := []int64{1, 2, 3, 4, 5, 6, 7, 8, 0, 10}
	if !reflect.DeepEqual(cm.FileIDs, wantIDs) {
		t.Errorf("FileIDs = %v, want %v", cm.FileIDs, wantIDs)
	}
	// The first 8 flows are a permutation.
	recv := map[int]int{}
	for _, fl := range cm.Flows[:8] {
		recv[fl.Dst]++
	}
	if len(recv) != 8 {
		t.Errorf("first 8 flows reach %d distinct hosts, want 8", len(recv))
	}
	if _, err := Explicit(cm.Flows, cm.Nodes); err != nil {
		t.Errorf("parsed flows fail validation: %v", err)
	}
}

func TestParseCM_Empty(t *testing.T) {
	cm, err := ParseCM("e.cm", strings.NewReader("Nodes 4\nConnections 0\n"))
	if err != nil {
		t.Fatalf("ParseCM: unexpected error %v", err)
	}
	if cm.Nodes != 4 || len(cm.Flows) != 0 {
		t.Fatalf("got %+v, want 4 nodes and no flows", cm)
	}
}

func TestParseCM_Loose(t *testing.T) {
	// Tabs, CRLF, runs of blanks, comments in the body, attributes in any
	// order, decimal start times: accepted, same meaning as htsim.
	text := "Nodes 4\r\nConnections 2\r\nFailures 0\r\n0->1\tsize  100 start 1.5e6\r\n# a comment\r\n\r\n3->2 start 0.000000 size 7 id 4\r\n"
	cm, err := ParseCM("x.cm", strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseCM: unexpected error %v", err)
	}
	want := []Flow{
		{ID: 0, Src: 0, Dst: 1, Size: 100, Start: 1500000},
		{ID: 1, Src: 3, Dst: 2, Size: 7, Start: 0},
	}
	if !reflect.DeepEqual(cm.Flows, want) {
		t.Fatalf("Flows = %+v, want %+v", cm.Flows, want)
	}
}

func TestParseCM_Errors(t *testing.T) {
	const head = "Nodes 8\nConnections 2\n"
	tests := []struct {
		name, text, want string
	}{
		{"too few", head + "0->1 start 0 size 10\n", "x.cm:2: Connections 2 but the file has 1 connection lines"},
		{"too many", head + "0->1 start 0 size 10\n1->2 start 0 size 10\n2->3 start 0 size 10\n", "x.cm:5: more connections than Connections 2 (line 2)"},
		{"bad arrow", head + "0-1 start 0 size 10\n", "x.cm:3: connection must look like \"<src>-><dst>\", got \"0-1\""},
		{"spaced arrow", head + "0 -> 1 start 0 size 10\n", "x.cm:3: connection must look like \"<src>-><dst>\", got \"0\""},
		{"no dst", head + "0-> start 0 size 10\n", "x.cm:3: connection must look like \"<src>-><dst>\", got \"0->\""},
		{"double arrow", head + "0->1->2 start 0 size 10\n", "x.cm:3: dst: \"1->2\" is not a whole number"},
		{"negative src", head + "-1->2 start 0 size 10\n", "x.cm:3: src: \"-1\" must not be negative"},
		{"dst out of range", head + "0->8 start 0 size 10\n", "x.cm:3: dst: host 8 does not exist (Nodes 8)"},
		{"self", head + "3->3 start 0 size 10\n", "x.cm:3: src and dst are both host 3"},
		{"trigger undefined", "Nodes 8\nConnections 1\n0->1 id 1 start 0 size 10 send_done_trigger 1\n", "x.cm:3: trigger 1 is used but no trigger line defines it"},
		{"trigger and start", "Nodes 8\nConnections 1\nTriggers 1\n0->1 id 1 trigger 2 start 0 size 10\ntrigger id 2 oneshot\n", "x.cm:4: start and trigger: a flow starts at a time or on a trigger, not both"},
		{"trigger zero", head + "0->1 id 1 start 0 size 10 recv_done_trigger 0\n", "x.cm:3: recv_done_trigger: trigger ids are 1..4294967295 (htsim's triggerid_t), got 0"},
		{"addon", head + "0->1 id 1 start 0 size 10 addon\n", "x.cm:3: the addon attribute is not supported"},
		{"trigger count mismatch", "Nodes 8\nConnections 1\nTriggers 0\n0->1 start 0 size 10\ntrigger id 1 oneshot\n", "x.cm:3: Triggers 0 but the file has 1 trigger lines"},
		{"trigger no header", "Nodes 8\nConnections 1\n0->1 start 0 size 10\ntrigger id 1 oneshot\n", "x.cm:1: Triggers 0 but the file has 1 trigger lines"},
		{"trigger no type", "Nodes 8\nConnections 0\nTriggers 1\ntrigger id 1\n", "x.cm:4: trigger 1: missing type (oneshot, multishot or barrier)"},
		{"trigger no id", "Nodes 8\nConnections 0\nTriggers 1\ntrigger oneshot\n", "x.cm:4: trigger: missing id"},
		{"trigger twice", "Nodes 8\nConnections 0\nTriggers 2\ntrigger id 1 oneshot\ntrigger id 1 barrier count 2\n", "x.cm:5: trigger 1 is already defined on line 4"},
		{"barrier no count", "Nodes 8\nConnections 0\nTriggers 1\ntrigger id 1 barrier\n", "x.cm:4: trigger 1: a barrier needs a positive count"},
		{"trigger bad attr", "Nodes 8\nConnections 0\nTriggers 1\ntrigger id 1 twoshot\n", "x.cm:4: trigger: unknown attribute \"twoshot\" (want id, oneshot, multishot, barrier or count)"},
		{"oneshot twice", "Nodes 8\nConnections 3\nTriggers 1\n0->1 start 0 size 10 send_done_trigger 1\n1->2 start 0 size 10 recv_done_trigger 1\n2->3 trigger 1 size 10\ntrigger id 1 oneshot\n", "x.cm:7: trigger 1: a oneshot is activated by 2 connections; htsim aborts on the second"},
		{"barrier overflow", "Nodes 8\nConnections 3\nTriggers 1\n0->1 start 0 size 10 send_done_trigger 1\n1->2 start 0 size 10 recv_done_trigger 1\n2->3 trigger 1 size 10\ntrigger id 1 barrier count 1\n", "x.cm:7: trigger 1: a barrier of count 1 is activated by 2 connections; htsim aborts on the extra ones"},
		{"no targets", "Nodes 8\nConnections 1\nTriggers 1\n0->1 start 0 size 10 send_done_trigger 1\ntrigger id 1 barrier count 1\n", "x.cm:5: trigger 1: 1 connections activate it but none starts on it (htsim aborts)"},
		{"triggers twice", "Nodes 8\nConnections 0\nTriggers 0\nTriggers 0\n", "x.cm:4: Triggers given twice (also line 3)"},
		{"failures header", "Nodes 8\nFailures 2\n", "x.cm:2: link failures are not supported yet (Failures 2)"},
		{"failure line", head + "failure switch_type TOR switch_id 0 link_id 1\n", "x.cm:3: link failures are not supported yet (failure line)"},
		{"prio", head + "0->1 start 0 size 10 prio 3\n", "x.cm:3: flow priorities are not supported yet (prio)"},
		{"non-numeric size", head + "0->1 start 0 size 10k\n", "x.cm:3: size: \"10k\" is not a whole number"},
		{"float size", head + "0->1 start 0 size 2e6\n", "x.cm:3: size: \"2e6\" is not a whole number"},
		{"zero size", head + "0->1 start 0 size 0\n", "x.cm:3: size: 0 is an unbounded flow in htsim, which is not supported yet"},
		{"no size", head + "0->1 start 0\n", "x.cm:3: size: missing (htsim runs such a flow until the end, which is not supported yet)"},
		{"no start", head + "0->1 size 10\n", "x.cm:3: start: missing (htsim needs a start time or a trigger)"},
		{"fractional start", head + "0->1 start 0.5 size 10\n", "x.cm:3: start: \"0.5\" is not a whole number of picoseconds"},
		{"negative start", head + "0->1 start -5 size 10\n", "x.cm:3: start: \"-5\" must not be negative"},
		{"huge start", head + "0->1 start 1e30 size 10\n", "x.cm:3: start: \"1e30\" is too large"},
		{"missing value", head + "0->1 start 0 size\n", "x.cm:3: size: missing value"},
		{"repeated attr", head + "0->1 start 0 size 10 size 20\n", "x.cm:3: size given twice"},
		{"unknown attribute", head + "0->1 start 0 size 10 priority 2\n", "x.cm:3: unknown attribute \"priority\" (want start, size or id)"},
		{"unknown keyword", "Nodes 8\nHosts 8\n", "x.cm:2: unknown keyword \"Hosts\""},
		{"id zero", head + "0->1 id 0 start 0 size 10\n", "x.cm:3: id: must be positive (htsim rejects flow id 0)"},
		{"duplicate id", head + "0->1 id 5 start 0 size 10\n1->2 id 5 start 0 size 10\n", "x.cm:4: id: 5 is already used on line 3"},
		{"header after body", head + "0->1 start 0 size 10\nNodes 9\n", "x.cm:4: Nodes must come before the first connection (line 3)"},
		{"repeated header", "Nodes 8\nNodes 9\n", "x.cm:2: Nodes given twice (also line 1)"},
		{"bad nodes", "Nodes eight\n", "x.cm:1: Nodes: \"eight\" is not a whole number"},
		{"zero nodes", "Nodes 0\n", "x.cm:1: Nodes: must be in [1, 2147483647], got 0"},
		{"header extra field", "Nodes 8 9\n", "x.cm:1: Nodes: want \"Nodes <count>\", got 3 fields"},
		{"no nodes", "Connections 0\n", "x.cm:1: missing header \"Nodes <count>\""},
		{"no connections header", "Nodes 8\n\n", "x.cm:2: missing header \"Connections <count>\""},
		{"connection before header", "Nodes 8\n0->1 start 0 size 1\n", "x.cm:2: connection before the \"Connections <count>\" header"},
		{"empty", "", "x.cm:1: missing header \"Nodes <count>\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCM("x.cm", strings.NewReader(tc.text))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ParseCM error = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans lines: %q", err)
			}
		})
	}
}

func TestParseWholeDecimal(t *testing.T) {
	ok := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"000", 0}, {"0.000000", 0}, {"12", 12}, {"+12", 12},
		{"1.5e6", 1500000}, {"1E3", 1000}, {"2500e-2", 25}, {".5e1", 5},
		{"5.", 5}, {"0e-999", 0}, {"9223372036854775807", math64Max},
		{"10000000.000000", 10000000}, {"120.0e-1", 12},
	}
	for _, tc := range ok {
		got, err := parseWholeDecimal(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseWholeDecimal(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	bad := []struct {
		in   string
		want error
	}{
		{"", errNotNumber}, {".", errNotNumber}, {"e5", errNotNumber}, {"1e", errNotNumber},
		{"0x10", errNotNumber}, {"1.2.3", errNotNumber}, {"inf", errNotNumber}, {"nan", errNotNumber},
		{"-1", errNegative}, {"0.5", errFractional}, {"125e-2", errFractional},
		{"9223372036854775808", errNumTooLarge}, {"1e19", errNumTooLarge}, {"1e99999", errNumTooLarge},
		{"1e99999999999999999999", errNumTooLarge},
	}
	for _, tc := range bad {
		if _, err := parseWholeDecimal(tc.in); err != tc.want {
			t.Errorf("parseWholeDecimal(%q) error = %v, want %v", tc.in, err, tc.want)
		}
	}
}

const math64Max = 1<<63 - 1

// TestParseCM_QuotesOnlyTheTokenAtFault: an error quotes at most
// maxQuoted bytes of the token at fault and nothing else of the file.
func TestParseCM_QuotesOnlyTheTokenAtFault(t *testing.T) {
	long := strings.Repeat("secret", 20)
	for _, text := range []string{long + " more words\n", "Nodes 4\nConnections 1\n0->1 id 1 start " + long + " size 10\n"} {
		_, err := ParseCM("x.cm", strings.NewReader(text))
		if err == nil {
			t.Fatalf("ParseCM(%q) accepted it", text)
		}
		if msg := err.Error(); strings.Contains(msg, long[:maxQuoted+1]) || strings.Contains(msg, "more words") {
			t.Errorf("error quotes more than the token's first %d bytes: %s", maxQuoted, msg)
		}
	}
}

func TestParseCM_Triggers(t *testing.T) {
	// htsim's semantics (sim/trigger.cpp): a oneshot starts all its
	// targets on the first activation, a multishot its k-th target on its
	// k-th activation, a barrier all its targets on its count-th.
	in := `Nodes 8
Connections 6
Triggers 3
0->1 id 1 start 0 size 100 recv_done_trigger 1
1->2 id 2 trigger 1 size 100 send_done_trigger 2
3->4 id 3 start 0 size 100 recv_done_trigger 2
2->5 id 4 trigger 2 size 100 recv_done_trigger 3
5->6 id 5 trigger 3 size 100
6->7 id 6 trigger 3 size 100
trigger id 1 oneshot
trigger id 2 barrier count 2
trigger id 3 multishot
`
	cm, err := ParseCM("t.cm", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	type dep struct {
		need     int32
		rec, snd []int32
	}
	want := []dep{{0, []int32{1}, nil}, {1, nil, []int32{3}}, {0, []int32{3}, nil}, {2, []int32{4, 5}, nil}, {1, nil, nil}, {2, nil, nil}}
	for i, f := range cm.Flows {
		got := dep{f.Need, f.OnRecvDone, f.OnSendDone}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("flow %d: need %d, on recv %v, on send %v; want %+v", i, f.Need, f.OnRecvDone, f.OnSendDone, want[i])
		}
	}
	if len(cm.Triggers) != 3 || cm.Triggers[1].Type != "barrier" || cm.Triggers[1].Count != 2 ||
		!reflect.DeepEqual(cm.Triggers[1].Activators, []int32{1, 2}) || !reflect.DeepEqual(cm.Triggers[2].Targets, []int32{4, 5}) {
		t.Errorf("triggers %+v", cm.Triggers)
	}
}
