// Command extswitch serves the example external switch (package
// extswitch) over NATS for one element of a run:
//
//	extswitch -nats nats://127.0.0.1:4222 -run R -node 17
//
// It imports nothing of lockstep but the element protocol and its NATS
// transport (docs/external-elements.md).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/nats-io/nats.go"

	"github.com/lockstep-sim/lockstep/elementproto/natspeer"
	"github.com/lockstep-sim/lockstep/examples/extswitch"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "extswitch:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("nats", nats.DefaultURL, "the NATS server")
	runID := flag.String("run", "", "the run's id")
	node := flag.Int("node", -1, "the topology node this element replaces")
	flag.Parse()
	if *runID == "" || *node < 0 {
		return fmt.Errorf("-run and -node are required")
	}
	nc, err := nats.Connect(*url, nats.Token(os.Getenv("LOCKSTEP_NATS_TOKEN")))
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := natspeer.Serve(nc, natspeer.Subject(*runID, *node), extswitch.New())
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	<-stop
	return nil
}
