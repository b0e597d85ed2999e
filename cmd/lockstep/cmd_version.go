package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lockstep-sim/lockstep/internal/version"
)

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and the Go version of this binary",
		Long: `Print the version (set at link time; "dev" otherwise), the VCS commit the
binary was built from ("+modified" when the tree had uncommitted changes) and
the Go version. summary.json records the same three under "build".`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, version.Get().String())
			return err
		},
	}
}
