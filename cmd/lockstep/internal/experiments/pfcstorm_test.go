package experiments

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPFCStorm_QuickPipeline runs the experiment in quick mode and checks
// its page, data and figure, and the storm's signature in the numbers:
// the stall nearly stops the victims and pauses every tier in order (the
// ToR, then a spine, then another leaf); the switch watchdog finds the
// storm and gives the victims most of their goodput back, and the NIC
// watchdog trips once.
func TestPFCStorm_QuickPipeline(t *testing.T) {
	env := &Env{Examples: examplesDir, Out: t.TempDir(), Quick: true}
	x, err := Find("pfc-storm")
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Run(env); err != nil {
		t.Fatalf("pfc-storm (quick): %v", err)
	}
	md, err := os.ReadFile(filepath.Join(env.Out, "pfc_storm.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no storm", "switch watchdog (drop)", "NIC watchdog", "How fast the pause spreads", "goodput.png"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("pfc_storm.md lacks %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(env.Out, "pfc_storm", "goodput.png")); err != nil || st.Size() == 0 {
		t.Errorf("goodput.png: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(env.Out, "pfc_storm", "storm.csv"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", data)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	head := strings.Split(lines[0], ",")
	rows := map[string]map[string]float64{}
	for _, line := range lines[1:] {
		f := strings.Split(line, ",")
		row := map[string]float64{}
		for i, h := range head[1:] {
			v, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil && f[i+1] != "NaN" {
				t.Fatalf("%s: %s = %q", f[0], h, f[i+1])
			}
			row[h] = v
		}
		rows[f[0]] = row
	}
	calm, storm := rows["no storm"], rows["storm"]
	drop, nic := rows["storm + switch watchdog (drop)"], rows["storm + NIC watchdog"]
	if calm == nil || storm == nil || drop == nil || nic == nil {
		t.Fatalf("missing rows: %v", rows)
	}
	if storm["victims_during_gbps"] > calm["victims_during_gbps"]/4 {
		t.Errorf("storm: want the victims under a quarter of their goodput without it, got %.0f vs %.0f Gb/s",
			storm["victims_during_gbps"], calm["victims_during_gbps"])
	}
	if storm["pause_host0"] == 0 || storm["pause_tor"] == 0 || storm["pause_spines"] == 0 || storm["pause_leaves"] == 0 {
		t.Errorf("storm: want PAUSE frames from every tier, got %v", storm)
	}
	if !(storm["tor_paused_us"] < storm["spine_paused_us"] && storm["spine_paused_us"] < storm["leaf_paused_us"]) {
		t.Errorf("storm: want the ToR paused first, then a spine, then another leaf; got %v, %v, %v",
			storm["tor_paused_us"], storm["spine_paused_us"], storm["leaf_paused_us"])
	}
	if drop["storms"] == 0 || drop["victims_during_gbps"] < 3*storm["victims_during_gbps"] || drop["switch_drops"] == 0 {
		t.Errorf("switch watchdog: want a storm found, dropped packets and the victims far above the storm's goodput, got %v", drop)
	}
	if nic["nic_trips"] != 1 || nic["victims_during_gbps"] <= storm["victims_during_gbps"] {
		t.Errorf("NIC watchdog: want one trip and more goodput than the storm's, got %v", nic)
	}
}
