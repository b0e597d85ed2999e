// Command lockstep runs packet-level network emulations. See README.md and
// docs/scenario.md.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
