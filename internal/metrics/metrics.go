// Package metrics serves a node's or a coordinator's Prometheus metrics
// and probes over HTTP (--metrics ADDR; docs/deploy.md): /metrics,
// /healthz (the process is up) and /readyz (it joined the run: a node has
// its partition, a coordinator knows a raft leader). Every value is read
// from what the process already computes (node.Progress, the replica's
// raft state, the run's status messages); nothing here is written back, so
// metrics cannot change a run's outputs.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lockstep-sim/lockstep/coordinator"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
)

// Server is a running metrics listener.
type Server struct {
	Reg   *prometheus.Registry
	addr  string
	srv   *http.Server
	ready func() bool
}

// LoopbackDefault makes an address without a host ("" or ":9100") bind
// loopback: serving every interface takes an explicit 0.0.0.0.
func LoopbackDefault(addr string) (string, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--metrics %q: %w", addr, err)
	}
	if _, err := strconv.Atoi(p); err != nil {
		return "", fmt.Errorf("--metrics %q: bad port", addr)
	}
	if h == "" {
		h = "127.0.0.1"
	}
	return net.JoinHostPort(h, p), nil
}

// Listen starts serving on addr (LoopbackDefault applies). ready says
// whether /readyz answers 200.
func Listen(addr string, ready func() bool) (*Server, error) {
	addr, err := LoopbackDefault(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", err)
	}
	s := &Server{Reg: prometheus.NewRegistry(), addr: ln.Addr().String(), ready: ready}
	s.Reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.Reg, promhttp.HandlerOpts{Registry: s.Reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.ready != nil && !s.ready() {
			http.Error(w, "not joined yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the process goes on without metrics
		}
	}()
	return s, nil
}

// Addr is the address served (the port chosen when addr asked for 0).
func (s *Server) Addr() string { return s.addr }

// Close stops serving.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

const ps = 1e-12 // seconds per virtual-time unit

// Node holds a node's metrics: the last Progress it was shown.
type Node struct {
	mu     sync.Mutex
	p      node.Progress // guarded by mu
	joined bool          // guarded by mu
	rate   float64       // guarded by mu; events per second between the last two
	at     time.Time     // guarded by mu
}

// Joined says whether the node has its partition.
func (n *Node) Joined() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.joined
}

// Observe is the node.Config.Observe hook.
func (n *Node) Observe(p node.Progress) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.joined {
		if dt := now.Sub(n.at).Seconds(); dt > 0 && p.Events >= n.p.Events {
			n.rate = float64(p.Events-n.p.Events) / dt
		}
	}
	n.p, n.joined, n.at = p, true, now
}

func (n *Node) read(f func(p *node.Progress) float64) func() float64 {
	return func() float64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		return f(&n.p)
	}
}

// RegisterNode registers a node's metrics, labelled with run and partition.
func RegisterNode(reg prometheus.Registerer, run string, partition int) *Node {
	n := &Node{}
	l := prometheus.Labels{"run": run, "partition": strconv.Itoa(partition)}
	gauge := func(name, help string, f func(p *node.Progress) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: l}, n.read(f)))
	}
	counter := func(name, help string, f func(p *node.Progress) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l}, n.read(f)))
	}
	gauge("lockstep_node_virtual_time_seconds", "virtual time the node's partition has reached", func(p *node.Progress) float64 { return float64(p.Now) * ps })
	gauge("lockstep_node_window", "the last lockstep window the node ran", func(p *node.Progress) float64 { return float64(p.Window) })
	counter("lockstep_node_windows_total", "windows granted to and run by the node", func(p *node.Progress) float64 { return float64(p.Window) })
	counter("lockstep_node_window_wait_seconds_total", "wall time spent waiting for grants and batches", func(p *node.Progress) float64 { return p.WaitSeconds })
	counter("lockstep_node_window_run_seconds_total", "wall time spent running windows", func(p *node.Progress) float64 { return p.RunSecs })
	gauge("lockstep_node_window_wait_max_seconds", "the longest single wait for a window", func(p *node.Progress) float64 { return p.MaxWaitSeconds })
	counter("lockstep_node_events_total", "events handled", func(p *node.Progress) float64 { return float64(p.Events) })
	counter("lockstep_node_packets_sent_total", "packets put on a wire", func(p *node.Progress) float64 { return float64(p.Sent) })
	counter("lockstep_node_packets_dropped_total", "packets dropped by queues or lost on wires", func(p *node.Progress) float64 { return float64(p.Drops) })
	counter("lockstep_node_packets_marked_total", "packets marked CE", func(p *node.Progress) float64 { return float64(p.Marks) })
	counter("lockstep_node_cross_packets_out_total", "packets sent to other partitions", func(p *node.Progress) float64 { return float64(p.Exported) })
	counter("lockstep_node_cross_packets_in_total", "packets received from other partitions", func(p *node.Progress) float64 { return float64(p.Injected) })
	counter("lockstep_node_cross_messages_total", "batches published to other partitions", func(p *node.Progress) float64 { return float64(p.Batches) })
	counter("lockstep_node_cross_bytes_total", "encoded bytes of the batches published", func(p *node.Progress) float64 { return float64(p.BatchBytes) })
	gauge("lockstep_node_finished", "1 once the node has run its last window", func(p *node.Progress) float64 { return b2f(p.Finished) })
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockstep_node_events_per_second",
		Help: "events per wall second between the last two heartbeats", ConstLabels: l}, func() float64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.rate
	}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "lockstep_node_joined",
		Help: "1 once the node has fetched the setup and built its partition", ConstLabels: l}, func() float64 { return b2f(n.Joined()) }))
	return n
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Coordinator holds a replica's metrics.
type Coordinator struct {
	mu    sync.Mutex
	c     *coordinator.Coordinator // guarded by mu; nil until started
	st    wire.Status              // guarded by mu; the leader's last status
	parts *prometheus.GaugeVec
	pvt   *prometheus.GaugeVec
	pev   *prometheus.GaugeVec
}

// Started is the coordinator.Config.OnStart hook.
func (m *Coordinator) Started(c *coordinator.Coordinator) {
	m.mu.Lock()
	m.c = c
	m.mu.Unlock()
}

func (m *Coordinator) raft() (coordinator.RaftInfo, bool) {
	m.mu.Lock()
	c := m.c
	m.mu.Unlock()
	if c == nil {
		return coordinator.RaftInfo{}, false
	}
	return c.RaftState(), true
}

// Ready says whether the replica is in a raft cluster with a leader.
func (m *Coordinator) Ready() bool {
	in, ok := m.raft()
	return ok && in.Leader != ""
}

// RegisterCoordinator registers a replica's metrics (labelled with run and
// id) and follows the run's status messages on nc for the run's and the
// partitions' progress.
func RegisterCoordinator(reg prometheus.Registerer, nc *nats.Conn, run, id string) (*Coordinator, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, err
	}
	m := &Coordinator{}
	l := prometheus.Labels{"run": run, "id": id}
	raftGauge := func(name, help string, f func(coordinator.RaftInfo) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: l}, func() float64 {
			in, _ := m.raft()
			return f(in)
		}))
	}
	raftGauge("lockstep_raft_term", "this replica's raft term", func(in coordinator.RaftInfo) float64 { return float64(in.Term) })
	raftGauge("lockstep_raft_leader", "1 while this replica is the raft leader", func(in coordinator.RaftInfo) float64 { return b2f(in.Leading) })
	raftGauge("lockstep_raft_applied_index", "the last raft log index this replica applied", func(in coordinator.RaftInfo) float64 { return float64(in.Applied) })
	raftGauge("lockstep_run_finished", "1 once the run's end is applied", func(in coordinator.RaftInfo) float64 { return b2f(in.Finished) })
	status := func(name, help string, f func(wire.Status) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: l}, func() float64 {
			m.mu.Lock()
			defer m.mu.Unlock()
			return f(m.st)
		}))
	}
	status("lockstep_run_window", "the last window every node accepted (the leader's view, from the nodes' statuses)", func(s wire.Status) float64 { return float64(s.Window) })
	status("lockstep_run_windows_granted", "windows the nodes completed while the current leader led", func(s wire.Status) float64 { return float64(s.Grants) })
	status("lockstep_run_virtual_time_seconds", "start of the last window every node accepted", func(s wire.Status) float64 { return float64(s.Start) * ps })
	status("lockstep_run_leader_term", "the raft term of the leader's last status", func(s wire.Status) float64 { return float64(s.Term) })
	m.parts = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockstep_partition_window", Help: "the last window each partition reported", ConstLabels: l}, []string{"partition"})
	m.pvt = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockstep_partition_virtual_time_seconds", Help: "each partition's virtual time", ConstLabels: l}, []string{"partition"})
	m.pev = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "lockstep_partition_events", Help: "events each partition has handled", ConstLabels: l}, []string{"partition"})
	reg.MustRegister(m.parts, m.pvt, m.pev)
	if _, err := nc.Subscribe(subj.Status(), func(msg *nats.Msg) {
		d, err := wire.Decode(msg.Data)
		if err != nil || d.Kind != wire.KindControl || d.Control.Type != wire.TypeStatus {
			return
		}
		var st wire.Status
		if d.Control.UnmarshalBody(&st) == nil {
			m.mu.Lock()
			if st.Term >= m.st.Term {
				m.st = st
			}
			m.mu.Unlock()
		}
	}); err != nil {
		return nil, err
	}
	if _, err := nc.Subscribe(subj.NodeStatuses(), func(msg *nats.Msg) {
		d, err := wire.Decode(msg.Data)
		if err != nil || d.Kind != wire.KindControl || d.Control.Type != wire.TypeNodeStatus {
			return
		}
		var st wire.NodeStatus
		if from, ok := subj.Sender(msg.Subject); d.Control.UnmarshalBody(&st) == nil && ok && from == st.Partition && st.Partition >= 0 {
			p := strconv.Itoa(st.Partition)
			m.parts.WithLabelValues(p).Set(float64(st.Window))
			m.pvt.WithLabelValues(p).Set(float64(st.Now) * ps)
			m.pev.WithLabelValues(p).Set(float64(st.Events))
		}
	}); err != nil {
		return nil, err
	}
	return m, nil
}
