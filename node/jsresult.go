package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/wire"
)

// ResultBucket is the JetStream object store bucket of a run's results
// (docs/design.md §7): one object per partition ("part-I", the encoded
// PartResult, chunked by the object store with its SHA-256 digest) and
// the run's setup ("setup"), so that `lockstep fetch-results` can merge
// them after the launcher is gone.
func ResultBucket(run string) string {
	var b strings.Builder
	b.WriteString("lockstep-results-")
	for _, r := range run {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteRune('_')
		}
	}
	return b.String()
}

// ResultObject names partition i's object in the bucket.
func ResultObject(i int) string { return fmt.Sprintf("part-%d", i) }

// SetupObject names the setup's object in the bucket.
const SetupObject = "setup"

// errNoJetStream means the server has no JetStream: request/reply only.
var errNoJetStream = errors.New("no JetStream")

// storeResult puts the node's result (and the setup) in the run's object
// store bucket when the server has JetStream; errNoJetStream otherwise.
// It is in addition to the request/reply upload, which stays the path the
// launcher collects by.
func storeResult(ctx context.Context, nc *nats.Conn, cfg Config, su *wire.Setup, res *PartResult) error {
	if on, _ := nc.ConnectedServerJetStream(); !on {
		// The server says it has no JetStream (the launcher's embedded
		// one, whose members may use only the run's own subjects).
		return errNoJetStream
	}
	js, err := nc.JetStream(nats.MaxWait(cfg.RequestTimeout))
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	_, err = js.AccountInfo(nats.Context(actx))
	cancel()
	if err != nil {
		if errors.Is(err, nats.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrJetStreamNotEnabledForAccount) {
			return errNoJetStream
		}
		return err
	}
	bucket := ResultBucket(cfg.Run)
	obs, err := js.ObjectStore(bucket)
	if errors.Is(err, nats.ErrStreamNotFound) || errors.Is(err, nats.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(&nats.ObjectStoreConfig{Bucket: bucket, Storage: nats.FileStorage,
			Description: "lockstep results of run " + cfg.Run, TTL: 7 * 24 * time.Hour})
		if err != nil {
			obs, err = js.ObjectStore(bucket) // another node created it first
		}
	}
	if err != nil {
		return fmt.Errorf("object store %s: %w", bucket, err)
	}
	data, err := EncodeResult(res)
	if err != nil {
		return err
	}
	if cfg.Partition == 0 {
		sd, err := wire.NewEncoder().Control(wire.TypeSetup, su)
		if err != nil {
			return err
		}
		if _, err := obs.PutBytes(SetupObject, sd, nats.Context(ctx)); err != nil {
			return fmt.Errorf("put %s/%s: %w", bucket, SetupObject, err)
		}
	}
	if _, err := obs.PutBytes(ResultObject(cfg.Partition), data, nats.Context(ctx)); err != nil {
		return fmt.Errorf("put %s/%s: %w", bucket, ResultObject(cfg.Partition), err)
	}
	return nil
}
