//go:build slow

package runner_test

// slowTests is true under -tags slow (make test-slow): the checkpoint
// tests then resume from every checkpoint of every example.
const slowTests = true
