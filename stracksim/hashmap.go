package stracksim

import (
	"math/bits"

	"github.com/lockstep-sim/lockstep/sim"
)

// rustMap reproduces the iteration order of a Rust std HashMap with
// integer keys: hashbrown's RawTable (the std map since Rust 1.36) with
// SSE2 groups of 16 control bytes, as of hashbrown 0.15 (raw/mod.rs:
// find_insert_slot, fix_insert_slot, reserve_rehash, rehash_in_place,
// resize, erase; map.rs: insert reserves one slot before it looks the key
// up). Iteration visits buckets in index order, so the order depends on
// every key's hash and on the table's history of inserts, removals,
// growths and in-place rehashes; this type keeps that history. It holds
// only the keys (their values live with the caller).
//
// Rust hashes with SipHash-1-3 under keys drawn at random per process
// (RandomState), so the positions are those of a random hash function; we
// draw the map's key from the run's seed and hash with sim.Mix64, which
// gives the same distribution of orders without reproducing SipHash.
type rustMap struct {
	k     uint64
	mask  int    // buckets − 1 (0 for the empty singleton)
	ctrl  []byte // buckets + 16 bytes; nil for the empty singleton
	key   []int32
	where []int32 // bucket of each key, −1 when absent
	items int
	grow  int // growth_left
	// rehashes and resizes count the table's reorganisations (tests).
	rehashes, resizes int
}

const (
	ctrlEmpty   byte = 0xff
	ctrlDeleted byte = 0x80
	ctrlFull    byte = 0x00 // we keep no h2 bits: only full/special matters
	groupWidth       = 16
)

func special(c byte) bool { return c&0x80 != 0 }

// newRustMap is HashMap::new() for keys in [0, n): the empty singleton.
func newRustMap(k uint64, n int) *rustMap {
	w := make([]int32, n)
	for i := range w {
		w[i] = -1
	}
	return &rustMap{k: k, where: w}
}

func (m *rustMap) hash(key int32) uint64 { return sim.Mix64(m.k ^ sim.Mix64(uint64(uint32(key)))) }

func (m *rustMap) buckets() int {
	if m.ctrl == nil {
		return 0
	}
	return m.mask + 1
}

// capacityOf is bucket_mask_to_capacity.
func capacityOf(mask int) int {
	if mask < 8 {
		return mask
	}
	return (mask + 1) / 8 * 7
}

// bucketsFor is capacity_to_buckets.
func bucketsFor(c int) int {
	if c < 8 {
		if c < 4 {
			return 4
		}
		return 8
	}
	return 1 << bits.Len(uint(c*8/7-1))
}

// has reports whether key is in the map.
func (m *rustMap) has(key int32) bool { return m.where[key] >= 0 }

// at is bucket i's key, if the bucket is full: iterating i from 0 to
// buckets()−1 visits the keys in the map's iteration order.
func (m *rustMap) at(i int) (int32, bool) { return m.key[i], !special(m.ctrl[i]) }

// insert is HashMap::insert(key, _): reserve(1), then the key's bucket if
// present (its value is replaced in place) or a new slot.
func (m *rustMap) insert(key int32) {
	if m.grow < 1 {
		m.reserveRehash()
	}
	if m.has(key) {
		return
	}
	i := m.findInsertSlot(m.hash(key))
	if m.ctrl[i] == ctrlEmpty {
		m.grow--
	}
	m.setCtrl(i, ctrlFull)
	m.key[i] = key
	m.where[key] = int32(i)
	m.items++
}

// remove is HashMap::remove(key) (erase: a slot whose neighbourhood never
// had a free byte within one group becomes DELETED, else EMPTY).
func (m *rustMap) remove(key int32) {
	i := int(m.where[key])
	if i < 0 {
		return
	}
	m.where[key] = -1
	before := (i - groupWidth) & m.mask
	// leading_zeros of match_empty at before + trailing_zeros at i: the
	// full-or-deleted bytes around i without an EMPTY in between.
	lead := 0
	for j := groupWidth - 1; j >= 0 && m.ctrl[before+j] != ctrlEmpty; j-- {
		lead++
	}
	trail := 0
	for j := 0; j < groupWidth && m.ctrl[i+j] != ctrlEmpty; j++ {
		trail++
	}
	c := ctrlEmpty
	if lead+trail >= groupWidth {
		c = ctrlDeleted
	} else {
		m.grow++
	}
	m.setCtrl(i, c)
	m.items--
}

// setCtrl writes bucket i's control byte and its mirror after the table.
func (m *rustMap) setCtrl(i int, c byte) {
	m.ctrl[i] = c
	m.ctrl[((i-groupWidth)&m.mask)+groupWidth] = c
}

// findInsertSlot is find_insert_slot: triangular probing by groups of 16
// from hash & mask, the first EMPTY or DELETED byte of the first group
// that has one, fixed for tables smaller than a group.
func (m *rustMap) findInsertSlot(h uint64) int {
	pos, stride := int(h&uint64(m.mask)), 0
	for {
		for j := 0; j < groupWidth; j++ {
			if special(m.ctrl[pos+j]) {
				i := (pos + j) & m.mask
				if !special(m.ctrl[i]) { // fix_insert_slot
					for k := 0; k < groupWidth; k++ {
						if special(m.ctrl[k]) {
							return k
						}
					}
				}
				return i
			}
		}
		stride += groupWidth
		pos = (pos + stride) & m.mask
	}
}

// reserveRehash is reserve_rehash(1): rehash in place when at most half
// the capacity would be used, else grow.
func (m *rustMap) reserveRehash() {
	n := m.items + 1
	full := capacityOf(m.mask)
	if m.ctrl != nil && n <= full/2 {
		m.rehashes++
		m.rehashInPlace()
		return
	}
	m.resizes++
	m.resize(max(n, full+1))
}

// resize moves every key, in bucket order, into a new table for c items.
func (m *rustMap) resize(c int) {
	oldCtrl, oldKey, oldN := m.ctrl, m.key, m.buckets()
	nb := bucketsFor(c)
	m.mask = nb - 1
	m.ctrl = make([]byte, nb+groupWidth)
	for i := range m.ctrl {
		m.ctrl[i] = ctrlEmpty
	}
	m.key = make([]int32, nb)
	for i := 0; i < oldN; i++ {
		if special(oldCtrl[i]) {
			continue
		}
		k := oldKey[i]
		j := m.findInsertSlot(m.hash(k))
		m.setCtrl(j, ctrlFull)
		m.key[j] = k
		m.where[k] = int32(j)
	}
	m.grow = capacityOf(m.mask) - m.items
}

// rehashInPlace is rehash_in_place: tombstones are reclaimed and every key
// moves to the first free slot of its probe sequence unless it already
// sits in the probe group it would land in.
func (m *rustMap) rehashInPlace() {
	n := m.buckets()
	// prepare_rehash_in_place: FULL becomes DELETED and the rest EMPTY,
	// by aligned groups (one group for tables smaller than a group).
	for i := 0; i < max(n, groupWidth); i++ {
		if special(m.ctrl[i]) {
			m.ctrl[i] = ctrlEmpty
		} else {
			m.ctrl[i] = ctrlDeleted
		}
	}
	if n < groupWidth {
		copy(m.ctrl[groupWidth:], m.ctrl[:n])
	} else {
		copy(m.ctrl[n:], m.ctrl[:groupWidth])
	}
	for i := 0; i < n; i++ {
		if m.ctrl[i] != ctrlDeleted {
			continue
		}
		for {
			k := m.key[i]
			h := m.hash(k)
			j := m.findInsertSlot(h)
			probe := int(h & uint64(m.mask))
			if ((i-probe)&m.mask)/groupWidth == ((j-probe)&m.mask)/groupWidth {
				m.setCtrl(i, ctrlFull)
				break
			}
			prev := m.ctrl[j]
			m.setCtrl(j, ctrlFull)
			if prev == ctrlEmpty {
				m.setCtrl(i, ctrlEmpty)
				m.key[j] = k
				m.where[k] = int32(j)
				break
			}
			// j held a key not yet rehashed: swap and place that one next.
			m.key[i], m.key[j] = m.key[j], k
			m.where[k] = int32(j)
			m.where[m.key[i]] = int32(i)
		}
	}
	m.grow = capacityOf(m.mask) - m.items
}
