//go:build !slow

package main

// slowTests is false in make test: the mutation sweep tries every second
// mutation and the kill tests kill at fewer points (make test-slow runs
// them in full).
const slowTests = false
