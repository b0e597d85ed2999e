//go:build !slow

package runner_test

// slowTests is false in make test: the checkpoint tests resume the
// longer examples from some of their checkpoints (resumesFrom).
const slowTests = false
