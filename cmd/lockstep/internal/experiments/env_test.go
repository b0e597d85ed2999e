package experiments

// examplesDir is the repository's examples/ directory, seen from this
// package's directory.
const examplesDir = "../../../../examples"
