package deploy

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/member"
	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
)

// Collector receives the nodes' results over NATS (request/reply, one
// acknowledged chunk at a time) on behalf of whoever started the run
// (docs/design.md §7: results "are merged by whoever started the run").
type Collector struct {
	p     int
	subj  wire.Subjects
	creds *member.Creds // nil: chunks are not signed
	sub   *nats.Subscription
	done  chan struct{}
	errs  chan error
	fails chan error

	mu      sync.Mutex
	enc     *wire.Encoder            // guarded by mu
	chunks  map[int][][]byte         // guarded by mu
	results map[int]*node.PartResult // guarded by mu
	// rejected counts chunks dropped: malformed, out of bounds, or not
	// from the node they claim; guarded by mu.
	rejected uint64
}

// MaxResultBytes bounds one node's encoded result, and so the number of
// chunks a collector accepts for it (MaxChunks).
const MaxResultBytes = 4 << 30

// MaxChunks is the most chunks a node's result may come in.
const MaxChunks = MaxResultBytes / node.ResultChunkBytes

// NewCollector subscribes to the result subjects of run for p partitions.
// With creds (the launcher's), every chunk must carry its node's
// signature.
func NewCollector(nc *nats.Conn, run string, p int, creds *member.Creds) (*Collector, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, err
	}
	c := &Collector{p: p, subj: subj, creds: creds, done: make(chan struct{}), errs: make(chan error, 1), fails: make(chan error, 1), enc: wire.NewEncoder(),
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

// Failures delivers the reason of the first partial result a node
// pushed on its own failure (node.PartResult.Reason: an external
// element's error), naming its partition.
func (c *Collector) Failures() <-chan error { return c.fails }

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

// Rejected is the number of chunks dropped as malformed, out of bounds, or
// not from the node they claim.
func (c *Collector) Rejected() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rejected
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
	if err == nil {
		err = c.check(msg.Subject, &ch)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		// Every chunk of a result has the same Total: a chunk that
		// disagrees with the first is not that result's.
		if cs, ok := c.chunks[ch.Partition]; ok && len(cs) != ch.Total {
			err = fmt.Errorf("chunk %d/%d of partition %d, which sends %d", ch.Index, ch.Total, ch.Partition, len(cs))
		}
	}
	typ, body := wire.TypeAck, any(struct{}{})
	if err != nil {
		c.rejected++
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

// check refuses a chunk whose bounds are wrong (checked before anything
// is allocated for it) or that is not from the node it claims: node i
// sends on result.i only, and signs its chunks when the run has keys.
func (c *Collector) check(subject string, ch *wire.ResultChunk) error {
	if ch.Partition < 0 || ch.Partition >= c.p || ch.Total < 1 || ch.Total > MaxChunks || ch.Index < 0 ||
		ch.Index >= ch.Total || len(ch.Data) > node.ResultChunkBytes {
		return fmt.Errorf("chunk %d/%d of partition %d (%d bytes)", ch.Index, ch.Total, ch.Partition, len(ch.Data))
	}
	if from, ok := c.subj.Sender(subject); !ok || subject != c.subj.Result(from) || from != ch.Partition {
		return fmt.Errorf("chunk of partition %d on %s", ch.Partition, subject)
	}
	if c.creds != nil && (ch.Partition >= len(c.creds.NodeKeys) ||
		!member.Verify(c.creds.NodeKeys[ch.Partition], wire.ChunkMessage(c.creds.Run, ch), ch.Sig)) {
		return fmt.Errorf("chunk %d/%d of partition %d: not signed by node %d", ch.Index, ch.Total, ch.Partition, ch.Partition)
	}
	return nil
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
	if r.Partial() && r.Reason != "" {
		select {
		case c.fails <- fmt.Errorf("partition %d: %s", ch.Partition, r.Reason):
		default:
		}
	}
	if len(c.results) == c.p {
		close(c.done)
	}
}
