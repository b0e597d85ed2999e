package topologies

import (
	"math/bits"
	"slices"
)

// levelBlockBytes bounds the memory of levelColumns' level sets: columns
// are taken in blocks (of blockBytes) small enough that a block's sets,
// for the levels a fabric of few tiers has, stay about this size.
const levelBlockBytes = 64 << 20

// levelColumns computes what searchColumns does, for fabrics with no host
// column (every host is on exactly one switch) and no groups: there every
// search starts at a switch and never expands a host, so it runs on the
// switches alone, and all the columns' searches run at once as bit sets
// (one bit per column): F_d[n], the columns at distance d from switch n,
// is the union of F_{d-1} over n's switch peers minus the columns seen at
// a shorter distance. Port i of a row n, to switch q, belongs to the cell
// of column c when c is in F_d[n] and in F_{d-1}[q] for some d >= 1: the
// peer is one hop closer. The ports of a row fall into a few classes of
// equal column sets (the uplinks of a ToR, each downlink of a spine), so
// a cell is the set of classes whose column sets hold it, and the port
// lists are interned once per distinct class set of the row. It costs
// O(levels x links x columns / 64) word operations, where the searches
// cost O(columns x (nodes + links)).
//
// The cells and hop counts equal searchColumns' (the set ids may be
// numbered differently: they are internal; TestLevelColumns_EqualTheSearches).
func levelColumns(ix *Index, r *Routes, sets *setTable, src, rowNodes []int32, pairs []HostPair, byCol, pstart, hops []int32, blockBytes int) {
	ncol := r.numCols
	// Switches and their switch peers (one entry per port).
	sidx := make([]int32, ix.nodes)
	var sw []int32
	for n := range ix.nodes {
		sidx[n] = -1
		if ix.hostOf[n] < 0 {
			sidx[n] = int32(len(sw))
			sw = append(sw, int32(n))
		}
	}
	ns := len(sw)
	if ns == 0 || ncol == 0 {
		return
	}
	adjStart := make([]int32, ns+1)
	var adj []int32
	for si, n := range sw {
		for _, q := range ix.peer[ix.portStart[n]:ix.portStart[n+1]] {
			if sq := sidx[q]; sq >= 0 {
				adj = append(adj, sq)
			}
		}
		adjStart[si+1] = int32(len(adj))
	}
	// Block width in words: 8 levels of ns x w words within the bound.
	w := max(1, min((ncol+63)/64, blockBytes/(8*8*ns)))
	var cls []int32      // by port of the row: its class, or -1
	var clsSets []uint64 // class j's column set: clsSets[j*w:(j+1)*w]
	var b []uint64       // scratch: one port's column set
	var colMask []uint64 // by column of the block: its classes, mw words each
	var rowKey []byte    // scratch: a class mask as a map key
	byHash := map[uint64][]int32{}
	byMask := map[string]int32{}
	var ports []int32
	for c0 := 0; c0 < ncol; c0 += 64 * w {
		nb := min(64*w, ncol-c0)
		bw := (nb + 63) / 64
		// Level 0: each column at its source switch.
		f0 := make([]uint64, ns*bw)
		for c := c0; c < c0+nb; c++ {
			if s := src[c]; s >= 0 {
				x := c - c0
				f0[int(sidx[s])*bw+x/64] |= 1 << uint(x%64)
			}
		}
		seen := slices.Clone(f0)
		levels := [][]uint64{f0}
		for {
			prev := levels[len(levels)-1]
			fd := make([]uint64, ns*bw)
			grew := false
			for si := range ns {
				row := fd[si*bw : (si+1)*bw]
				for _, q := range adj[adjStart[si]:adjStart[si+1]] {
					pq := prev[int(q)*bw : (int(q)+1)*bw]
					for k := range row {
						row[k] |= pq[k]
					}
				}
				sn := seen[si*bw : (si+1)*bw]
				for k := range row {
					row[k] &^= sn[k]
					sn[k] |= row[k]
					if row[k] != 0 {
						grew = true
					}
				}
			}
			if !grew {
				break
			}
			levels = append(levels, fd)
		}
		// Hop counts of the pairs whose column is in the block: the
		// source host's edge switch is at distance d, the host one more,
		// and the destination's edge switch adds its last hop.
		for c := c0; c < c0+nb; c++ {
			x := c - c0
			for _, pi := range byCol[pstart[c]:pstart[c+1]] {
				p := pairs[pi]
				from := ix.hostNode[p.Src]
				if p.Src == p.Dst || from < 0 {
					continue
				}
				e := sidx[ix.peer[ix.portStart[from]]]
				for d, fd := range levels {
					if fd[int(e)*bw+x/64]&(1<<uint(x%64)) != 0 {
						hops[pi] = int32(d) + 2
						break
					}
				}
			}
		}
		// The rows.
		b = slices.Grow(b[:0], bw)[:bw]
		for ri, n := range rowNodes {
			si := int(sidx[n])
			plo, phi := ix.portStart[n], ix.portStart[n+1]
			cls = cls[:0]
			clsSets = clsSets[:0]
			clear(byHash)
			for _, q := range ix.peer[plo:phi] {
				sq := int(sidx[q])
				if sq < 0 {
					cls = append(cls, -1) // a host: never in a cell here
					continue
				}
				clear(b)
				nonzero := false
				for d := 1; d < len(levels); d++ {
					fn := levels[d][si*bw : (si+1)*bw]
					fq := levels[d-1][sq*bw : (sq+1)*bw]
					for k := range b {
						b[k] |= fn[k] & fq[k]
					}
				}
				h := uint64(14695981039346656037)
				for _, x := range b {
					nonzero = nonzero || x != 0
					h = (h ^ x) * 1099511628211
				}
				if !nonzero {
					cls = append(cls, -1)
					continue
				}
				j := int32(-1)
				for _, k := range byHash[h] {
					if slices.Equal(clsSets[int(k)*bw:(int(k)+1)*bw], b) {
						j = k
						break
					}
				}
				if j < 0 {
					j = int32(len(clsSets) / bw)
					clsSets = append(clsSets, b...)
					byHash[h] = append(byHash[h], j)
				}
				cls = append(cls, j)
			}
			m := len(clsSets) / bw
			if m == 0 {
				continue // every cell of the block stays 0: no route
			}
			mw := (m + 63) / 64
			colMask = slices.Grow(colMask[:0], nb*mw)[:nb*mw]
			clear(colMask)
			for j := range m {
				for k, x := range clsSets[j*bw : (j+1)*bw] {
					for x != 0 {
						t := bits.TrailingZeros64(x)
						x &= x - 1
						colMask[(k*64+t)*mw+j/64] |= 1 << uint(j%64)
					}
				}
			}
			clear(byMask)
			var last []uint64
			lastID := int32(0)
			cells := r.cells[ri*ncol+c0 : ri*ncol+c0+nb]
			for x := range nb {
				mask := colMask[x*mw : (x+1)*mw]
				if last != nil && slices.Equal(mask, last) {
					cells[x] = lastID
					continue
				}
				empty := true
				for _, v := range mask {
					empty = empty && v == 0
				}
				id := int32(0)
				if !empty {
					rowKey = rowKey[:0]
					for _, v := range mask {
						for sh := 0; sh < 64; sh += 8 {
							rowKey = append(rowKey, byte(v>>uint(sh)))
						}
					}
					var ok bool
					if id, ok = byMask[string(rowKey)]; !ok {
						ports = ports[:0]
						for i, j := range cls {
							if j >= 0 && mask[j/64]&(1<<uint(j%64)) != 0 {
								ports = append(ports, int32(i))
							}
						}
						id = sets.intern(ports)
						byMask[string(rowKey)] = id
					}
				}
				cells[x] = id
				last, lastID = mask, id
			}
		}
	}
}
