package node

// Progress is what a running node shows outside (Prometheus metrics, a
// readiness probe): counters since setup, read from the node's core and
// never written back. Config.Observe receives one at every heartbeat
// (StatusEvery) from the moment the node has its partition (it joined the
// run) and once more when it finishes; it runs on the node's loop, so it
// must be quick. Nothing in it can change the run's outputs.
type Progress struct {
	Partition int
	Window    uint64 // the last window run
	Now       int64  // virtual time, ps
	Events    uint64
	Sent      uint64 // packets put on a wire
	Drops     uint64 // queue drops and packets lost on wires
	Marks     uint64 // CE marks
	// Cross-partition traffic: packets exported and injected, and the
	// batches published with their encoded bytes.
	Exported, Injected   uint64
	Batches, BatchBytes  uint64
	WaitSeconds, RunSecs float64 // waiting for grants and batches; running windows
	MaxWaitSeconds       float64
	Finished             bool
}

// progress snapshots the core's counters.
func progress(c *Core, window uint64, perf NodePerf, batches, bytes uint64, finished bool) Progress {
	e := c.F.Engine()
	cons := c.F.Conservation()
	var marks uint64
	for n := 0; n < c.F.NumNodes(); n++ {
		if s := c.F.Switch(n); s != nil {
			for i := range s.Ports {
				marks += s.Ports[i].Marked
			}
		}
	}
	return Progress{Partition: c.Partition(), Window: window, Now: int64(e.Now()), Events: e.Stats.Events,
		Sent: e.Stats.Sent, Drops: cons.QueueDrops + cons.LinkLost, Marks: marks,
		Exported: e.Stats.Exported, Injected: e.Stats.Injected, Batches: batches, BatchBytes: bytes,
		WaitSeconds: perf.WaitSeconds, RunSecs: perf.RunSeconds, MaxWaitSeconds: perf.MaxWait, Finished: finished}
}
