package deploy

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
	"github.com/lockstep-sim/lockstep/node"
	"github.com/lockstep-sim/lockstep/partition"
	"github.com/lockstep-sim/lockstep/results"
	"github.com/lockstep-sim/lockstep/scenario"
)

// Fetched is a run's results as the nodes stored them in JetStream.
type Fetched struct {
	Bucket    string
	Built     *scenario.Built
	Placement *partition.Placement
	Results   []*node.PartResult // by partition
	Outputs   *results.Outputs   // merged
}

// FetchResults reads run's results back from its JetStream object store
// bucket (node.ResultBucket), which outlives the launcher: the setup (its
// scenario must give its digest, as a node checks) and every partition's
// part. The object store verifies each object's SHA-256 digest as it
// reads it; each part must be its partition's, complete, and the run's.
// Then it merges them, as the launcher does.
func FetchResults(nc *nats.Conn, run string, timeout time.Duration) (*Fetched, error) {
	js, err := nc.JetStream(nats.MaxWait(timeout))
	if err != nil {
		return nil, err
	}
	bucket := node.ResultBucket(run)
	obs, err := js.ObjectStore(bucket)
	if err != nil {
		if errors.Is(err, nats.ErrJetStreamNotEnabled) {
			return nil, fmt.Errorf("fetch-results: the NATS server has no JetStream: results went by request/reply only")
		}
		return nil, fmt.Errorf("fetch-results: run %s: bucket %s: %w", run, bucket, err)
	}
	sd, err := obs.GetBytes(node.SetupObject)
	if err != nil {
		return nil, fmt.Errorf("fetch-results: %s/%s: %w", bucket, node.SetupObject, err)
	}
	m, err := wire.Decode(sd)
	if err != nil || m.Kind != wire.KindControl || m.Control.Type != wire.TypeSetup {
		return nil, fmt.Errorf("fetch-results: %s/%s is not a setup (%v)", bucket, node.SetupObject, err)
	}
	var su wire.Setup
	if err := m.Control.UnmarshalBody(&su); err != nil {
		return nil, fmt.Errorf("fetch-results: %s/%s: %w", bucket, node.SetupObject, err)
	}
	b, pl, err := node.FromSetup(&su)
	if err != nil {
		return nil, fmt.Errorf("fetch-results: %s/%s: %w", bucket, node.SetupObject, err)
	}
	f := &Fetched{Bucket: bucket, Built: b, Placement: pl, Results: make([]*node.PartResult, pl.P)}
	var missing []int
	for i := 0; i < pl.P; i++ {
		data, err := obs.GetBytes(node.ResultObject(i))
		if errors.Is(err, nats.ErrObjectNotFound) {
			missing = append(missing, i)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("fetch-results: %s/%s: %w", bucket, node.ResultObject(i), err)
		}
		r, err := node.DecodeResult(data)
		if err != nil {
			return nil, fmt.Errorf("fetch-results: %s/%s: %w", bucket, node.ResultObject(i), err)
		}
		if r.Part.Partition != i {
			return nil, fmt.Errorf("fetch-results: %s/%s holds partition %d", bucket, node.ResultObject(i), r.Part.Partition)
		}
		if r.Partial() {
			return nil, fmt.Errorf("fetch-results: partition %d's result is partial", i)
		}
		f.Results[i] = r
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("fetch-results: run %s: no result yet from partitions %v", run, missing)
	}
	parts, err := node.Parts(f.Results)
	if err != nil {
		return nil, err
	}
	if f.Outputs, err = results.Merge(b, parts); err != nil {
		return nil, err
	}
	return f, nil
}
