package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/internal/checkpoint"
	"github.com/lockstep-sim/lockstep/internal/wire"
)

// CheckpointBucket is the JetStream object store bucket of a run's
// checkpoint parts (a run whose nodes share no directory: Kubernetes, an
// operator's NATS server with JetStream): one object per part,
// "w<window>/part-<i>.ckpt".
func CheckpointBucket(run string) string {
	return strings.Replace(ResultBucket(run), "lockstep-results-", "lockstep-ckpt-", 1)
}

// jsStore keeps the parts in a JetStream object store.
type jsStore struct {
	os     nats.ObjectStore
	bucket string
}

// NewJetStreamStore opens (creating it if need be) the run's checkpoint
// bucket on nc's server; an error if the server has no JetStream.
func NewJetStreamStore(ctx context.Context, nc *nats.Conn, run string, wait time.Duration) (PartStore, error) {
	if on, _ := nc.ConnectedServerJetStream(); !on {
		return nil, fmt.Errorf("the NATS server has no JetStream and the run has no shared checkpoint directory")
	}
	js, err := nc.JetStream(nats.MaxWait(wait))
	if err != nil {
		return nil, err
	}
	bucket := CheckpointBucket(run)
	os, err := js.ObjectStore(bucket)
	if errors.Is(err, nats.ErrStreamNotFound) || errors.Is(err, nats.ErrBucketNotFound) {
		os, err = js.CreateObjectStore(&nats.ObjectStoreConfig{Bucket: bucket, Description: "lockstep checkpoint parts"})
	}
	if err != nil {
		return nil, fmt.Errorf("JetStream object store %s: %w", bucket, err)
	}
	return &jsStore{os: os, bucket: bucket}, nil
}

func objectName(window uint64, part int) string { return fmt.Sprintf("w%d/%s", window, PartName(part)) }

// Put implements PartStore.
func (s *jsStore) Put(_ context.Context, window uint64, part int, data []byte) error {
	_, err := s.os.PutBytes(objectName(window, part), data)
	return err
}

// Get implements PartStore.
func (s *jsStore) Get(_ context.Context, ref *wire.CheckpointRef, part int) ([]byte, error) {
	if part < 0 || part >= len(ref.Parts) {
		return nil, fmt.Errorf("checkpoint of window %d has %d parts, no part %d", ref.Window, len(ref.Parts), part)
	}
	name := s.Where(ref.Window, part)
	data, err := s.os.GetBytes(objectName(ref.Window, part))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", checkpoint.ErrCorrupt, name, err)
	}
	if err := checkpoint.CheckPart(name, data, FilePart(ref.Parts[part])); err != nil {
		return nil, err
	}
	return data, nil
}

// Where implements PartStore.
func (s *jsStore) Where(window uint64, part int) string {
	return "JetStream object " + s.bucket + "/" + objectName(window, part)
}
