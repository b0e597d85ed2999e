package workloads_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/lockstep-sim/lockstep/sim"
	"github.com/lockstep-sim/lockstep/workloads"
)

func ExampleParseCM() {
	const cm = `Nodes 4
Connections 2
0->3 id 1 start 0 size 2000000
2->1 id 2 start 1000000 size 65536
`
	m, err := workloads.ParseCM("example.cm", strings.NewReader(cm))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range m.Flows {
		fmt.Printf("flow %d: %d->%d %d bytes at %d ps\n", f.ID, f.Src, f.Dst, f.Size, int64(f.Start))
	}
	_, err = workloads.ParseCM("x.cm", strings.NewReader("Nodes 4\nConnections 1\n0->1 id 1 start 0 size 10 send_done_trigger 7\n"))
	fmt.Println(err)
	// Output:
	// flow 0: 0->3 2000000 bytes at 0 ps
	// flow 1: 2->1 65536 bytes at 1000000 ps
	// x.cm:3: trigger 7 is used but no trigger line defines it
}

func ExamplePoisson() {
	f, err := os.Open("../examples/workloads/websearch.cdf")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	cdf, err := workloads.ParseCDF("websearch.cdf", f)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := workloads.PoissonConfig{
		NumHosts: 128,
		Load:     0.5,
		HostRate: 100 * sim.GbitPerSecond,
		CDF:      cdf,
		End:      10 * sim.Millisecond,
	}
	flows, err := workloads.Poisson(cfg, sim.NewRand(1, sim.StreamWorkload))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("mean size %.0f bytes, one flow every %d ps\n", cdf.Mean(), int64(cfg.MeanInterArrival()))
	fmt.Printf("%d flows, all before End: %v\n", len(flows), flows[len(flows)-1].Start < cfg.End)
	// Output:
	// mean size 1711250 bytes, one flow every 2139063 ps
	// 4724 flows, all before End: true
}
