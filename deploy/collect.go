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
// Each partition's chunks arrive on a subscription of their own, so the
// nodes' results (which they send at once, at the finish) are checked
// and decoded in parallel; a chunk is acknowledged once its bytes are
// recorded, and a complete result decoded after its last
// acknowledgement, while its node exits.
type Collector struct {
	p       int
	subj    wire.Subjects
	creds   *member.Creds // nil: chunks are not signed
	subs    []*nats.Subscription
	done    chan struct{}
	errs    chan error
	fails   chan error
	first   func() // called once, when the first chunk that passes the checks arrives
	firstMu sync.Once
	// decoding counts the complete results being decoded (Results waits
	// for them).
	decoding sync.WaitGroup

	mu       sync.Mutex
	enc      *wire.Encoder            // guarded by mu
	chunks   map[int][][]byte         // guarded by mu
	complete map[int]bool             // every chunk in (decoded or not); guarded by mu
	results  map[int]*node.PartResult // guarded by mu
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
// signature. first, if not nil, is called once when the first chunk
// from a node arrives (a node sends its result when the run is over for
// it: the nodes have finished computing).
func NewCollector(nc *nats.Conn, run string, p int, creds *member.Creds, first func()) (*Collector, error) {
	subj, err := wire.NewSubjects(run)
	if err != nil {
		return nil, err
	}
	if first == nil {
		first = func() {}
	}
	c := &Collector{p: p, subj: subj, creds: creds, done: make(chan struct{}), errs: make(chan error, 1), fails: make(chan error, 1), enc: wire.NewEncoder(),
		first: first, chunks: map[int][][]byte{}, complete: map[int]bool{}, results: map[int]*node.PartResult{}}
	for i := 0; i < p; i++ {
		sub, err := nc.Subscribe(subj.Result(i), c.onChunk)
		if err != nil {
			c.Close()
			return nil, err
		}
		_ = sub.SetPendingLimits(-1, -1)
		c.subs = append(c.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		c.Close()
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

// Has reports whether partition i's result is in (every chunk of it
// acknowledged: its node may exit).
func (c *Collector) Has(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.complete[i]
}

// Results returns the results by partition (nil where missing or not
// decodable), once the complete ones are decoded.
func (c *Collector) Results() []*node.PartResult {
	c.decoding.Wait()
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
func (c *Collector) Close() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
}

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
	if err == nil {
		c.firstMu.Do(c.first)
	}
	var whole []byte // the complete result, when this chunk completes it
	c.mu.Lock()
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
		whole = c.add(ch)
		if whole != nil {
			c.decoding.Add(1)
		}
	}
	data, eerr := c.enc.Control(typ, body)
	c.mu.Unlock()
	if eerr == nil {
		_ = msg.Respond(data)
	}
	if whole != nil {
		c.decode(ch.Partition, whole)
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

// add stores a chunk and returns the partition's whole result when the
// chunk completes it (nil otherwise); precondition: mu held.
func (c *Collector) add(ch wire.ResultChunk) []byte {
	if c.complete[ch.Partition] {
		return nil // a retried chunk
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
			return nil
		}
		data = append(data, part...)
	}
	delete(c.chunks, ch.Partition)
	c.complete[ch.Partition] = true
	return data
}

// decode decodes partition part's whole result and records it.
func (c *Collector) decode(part int, data []byte) {
	defer c.decoding.Done()
	r, err := node.DecodeResult(data)
	if err == nil && r.Part.Partition != part {
		err = fmt.Errorf("result of partition %d sent as %d", r.Part.Partition, part)
	}
	if err != nil {
		select {
		case c.errs <- fmt.Errorf("partition %d: %w", part, err):
		default:
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results[part] = r
	if r.Partial() && r.Reason != "" {
		select {
		case c.fails <- fmt.Errorf("partition %d: %s", part, r.Reason):
		default:
		}
	}
	if len(c.results) == c.p {
		close(c.done)
	}
}
