// Command mkimage writes lockstep's container image as a `docker load`
// archive (make image): mkimage --binary BIN --tag lockstep:V --out FILE.
// The creation time is $SOURCE_DATE_EPOCH (default 0), so the same binary
// gives the same image ID.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/lockstep-sim/lockstep/deploy/image"
)

func main() {
	bin := flag.String("binary", "", "the static lockstep binary")
	tag := flag.String("tag", "lockstep:dev", "repository:tag")
	out := flag.String("out", "", "archive to write")
	ver := flag.String("version", "", "version label")
	commit := flag.String("commit", "", "commit label")
	name := flag.String("name", "lockstep", "the binary's name in the image, its entrypoint")
	flag.Parse()
	if err := run(*bin, *tag, *out, *ver, *commit, *name); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(bin, tag, out, ver, commit, name string) error {
	if bin == "" || out == "" {
		return fmt.Errorf("--binary and --out are required")
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	created := time.Unix(0, 0)
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", s, err)
		}
		created = time.Unix(n, 0)
	}
	im, err := image.Build(image.Spec{Binary: b, Tag: tag, Created: created, Version: ver, Commit: commit, Name: name})
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, im.Archive, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s %s layer %s %d bytes\n", tag, im.ID, im.Layer, im.Size)
	return nil
}
