package coordinator

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"github.com/vmihailenco/msgpack/v5"
	bolt "go.etcd.io/bbolt"
)

// BoltStore is a raft.LogStore and raft.StableStore in one BoltDB file,
// the layout of hashicorp/raft-boltdb: bucket "logs" maps big-endian log
// indices to encoded raft.Log values, bucket "conf" holds the stable keys.
//
// NB(coordinator): raft-boltdb/v2 v2.3.1 imports go-metrics/compat, which
// go-metrics v0.7.0 (required by raft v1.8.0) no longer has, so the two
// cannot be built together; this is the small subset of it raft needs.
type BoltStore struct {
	db *bolt.DB
}

var (
	bucketLogs = []byte("logs")
	bucketConf = []byte("conf")
	// errKeyNotFound must read "not found": raft compares the message
	// (raft api.go, NewRaft and HasExistingState).
	errKeyNotFound = errors.New("not found")
)

var (
	_ raft.LogStore    = (*BoltStore)(nil)
	_ raft.StableStore = (*BoltStore)(nil)
)

// OpenBoltStore opens (or creates) the store at path.
func OpenBoltStore(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return nil, fmt.Errorf("coordinator: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bucketLogs); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bucketConf)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("coordinator: init %s: %w", path, err)
	}
	return &BoltStore{db: db}, nil
}

// Close closes the database.
func (s *BoltStore) Close() error { return s.db.Close() }

func key(i uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], i)
	return k[:]
}

// FirstIndex implements raft.LogStore.FirstIndex.
func (s *BoltStore) FirstIndex() (uint64, error) {
	var i uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().First(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

// LastIndex implements raft.LogStore.LastIndex.
func (s *BoltStore) LastIndex() (uint64, error) {
	var i uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketLogs).Cursor().Last(); k != nil {
			i = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	return i, err
}

// GetLog implements raft.LogStore.GetLog.
func (s *BoltStore) GetLog(index uint64, log *raft.Log) error {
	return s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketLogs).Get(key(index))
		if v == nil {
			return raft.ErrLogNotFound
		}
		return msgpack.Unmarshal(v, log)
	})
}

// StoreLog implements raft.LogStore.StoreLog.
func (s *BoltStore) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs implements raft.LogStore.StoreLogs.
func (s *BoltStore) StoreLogs(logs []*raft.Log) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLogs)
		for _, l := range logs {
			v, err := msgpack.Marshal(l)
			if err != nil {
				return err
			}
			if err := b.Put(key(l.Index), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteRange implements raft.LogStore.DeleteRange (inclusive).
func (s *BoltStore) DeleteRange(lo, hi uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLogs).Cursor()
		for k, _ := c.Seek(key(lo)); k != nil && binary.BigEndian.Uint64(k) <= hi; k, _ = c.Next() {
			if err := c.Delete(); err != nil {
				return err
			}
		}
		return nil
	})
}

// Set implements raft.StableStore.Set.
func (s *BoltStore) Set(k, v []byte) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketConf).Put(k, v) })
}

// Get implements raft.StableStore.Get.
func (s *BoltStore) Get(k []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketConf).Get(k)
		if v == nil {
			return errKeyNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// SetUint64 implements raft.StableStore.SetUint64.
func (s *BoltStore) SetUint64(k []byte, v uint64) error { return s.Set(k, key(v)) }

// GetUint64 implements raft.StableStore.GetUint64.
func (s *BoltStore) GetUint64(k []byte) (uint64, error) {
	v, err := s.Get(k)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("coordinator: stable key %q holds %d bytes, want 8", k, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
