//go:build slow

package main

// slowTests is true under -tags slow (make test-slow): the sweeps and
// kill tests run in full.
const slowTests = true
