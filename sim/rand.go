package sim

import "math/rand/v2"

// Random stream namespaces, so that element i and link i never share a stream.
const (
	StreamElement  uint64 = 1 << 40
	StreamLink     uint64 = 2 << 40
	StreamWorkload uint64 = 3 << 40
)

// splitmix64 is the finaliser of SplitMix64: it spreads nearby seeds apart.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// NewRand returns the random stream for (seed, stream). The same pair always
// gives the same sequence, wherever it runs.
func NewRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(splitmix64(seed), splitmix64(stream^0x5851f42d4c957f2d)))
}

// Mix64 hashes x (SplitMix64's finaliser); forwarding uses it for ECMP.
func Mix64(x uint64) uint64 { return splitmix64(x) }
