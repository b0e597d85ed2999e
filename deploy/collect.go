package deploy

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
)

// Collector receives the nodes' results over NATS (request/reply, one
// acknowledged chunk at a time) on behalf of whoever started the run
// (docs/design.md §7: results "are merged by whoever started the run").
type Collector struct {
	p    int
	sub  *nats.Subscription
	done chan struct{}
	errs chan error

	mu      sync.Mutex
	enc     *wire.Encoder            // guarded by mu
	chunks  map[int][][]byte         // guarded by mu
	results map[int]*node.PartResult // guarded by mu
}

// NewCollector subscribes to the result subjects of run for p partitions.
func NewCollector(nc *nats.Conn, run string, p int) (*Collector, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, err
	}
	c := &Collector{p: p, done: make(chan struct{}), errs: make(chan error, 1), enc: wire.NewEncoder(),
		chunks: map[int][][]byte{}, results: map[int]*node.PartResult{}}
	c.sub, err = nc.Subscribe(subj.Results(), c.onChunk)
	if err != nil {
		return nil, err
	}
	_ = c.sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		return nil, err
	}
	return c, nil
}

// Done is closed when every partition's result is in.
func (c *Collector) Done() <-chan struct{} { return c.done }

// Errors delivers the first result that could not be decoded.
func (c *Collector) Errors() <-chan error { return c.errs }

// Has reports whether partition i's result is in.
func (c *Collector) Has(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results[i] != nil
}

// Results returns the results by partition (nil where missing).
func (c *Collector) Results() []*node.PartResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*node.PartResult, c.p)
	for i := range out {
		out[i] = c.results[i]
	}
	return out
}

// Close unsubscribes.
func (c *Collector) Close() { _ = c.sub.Unsubscribe() }

func (c *Collector) onChunk(msg *nats.Msg) {
	m, err := wire.Decode(msg.Data)
	var ch wire.ResultChunk
	if err == nil && m.Kind == wire.KindControl && m.Control.Type == wire.TypeResultChunk {
		err = m.Control.UnmarshalBody(&ch)
	} else if err == nil {
		err = fmt.Errorf("unexpected %v message", m.Kind)
	}
	if err == nil && (ch.Partition < 0 || ch.Partition >= c.p || ch.Total < 1 || ch.Index < 0 || ch.Index >= ch.Total) {
		err = fmt.Errorf("chunk %d/%d of partition %d", ch.Index, ch.Total, ch.Partition)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	typ, body := wire.TypeAck, any(struct{}{})
	if err != nil {
		typ, body = wire.TypeError, wire.ErrorReply{Msg: err.Error()}
	} else {
		// Record before acknowledging: a node process exits right after
		// its last acknowledgement.
		c.add(ch)
	}
	if data, err := c.enc.Control(typ, body); err == nil {
		_ = msg.Respond(data)
	}
}

// add stores a chunk; precondition: mu held.
func (c *Collector) add(ch wire.ResultChunk) {
	if c.results[ch.Partition] != nil {
		return // a retried chunk
	}
	cs := c.chunks[ch.Partition]
	if len(cs) != ch.Total {
		cs = make([][]byte, ch.Total)
		c.chunks[ch.Partition] = cs
	}
	cs[ch.Index] = ch.Data
	var data []byte
	for _, part := range cs {
		if part == nil {
			return
		}
		data = append(data, part...)
	}
	delete(c.chunks, ch.Partition)
	r, err := node.DecodeResult(data)
	if err == nil && r.Part.Partition != ch.Partition {
		err = fmt.Errorf("result of partition %d sent as %d", r.Part.Partition, ch.Partition)
	}
	if err != nil {
		select {
		case c.errs <- fmt.Errorf("partition %d: %w", ch.Partition, err):
		default:
		}
		return
	}
	c.results[ch.Partition] = r
	if len(c.results) == c.p {
		close(c.done)
	}
}
