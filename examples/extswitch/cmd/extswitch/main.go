// Command extswitch serves the example external switch (package
// extswitch) over NATS, one instance per element it is given:
//
//	extswitch -nats nats://127.0.0.1:4222 -run R -element tor0,core0
//
// Each element answers on lockstep.R.element.NAME.setup and .step (the
// scenario's external list names them: the switch's name unless the
// entry gives element). A token, if the server wants one, comes from
// $LOCKSTEP_NATS_TOKEN; on a run's embedded server the element logs in
// with the key lockstep wrote (-nkey DIR/NAME.nk, lockstep run
// --element-keys DIR), one element per process. It serves until SIGINT
// or SIGTERM.
//
// It imports nothing of lockstep but the element protocol and its NATS
// transport (docs/external-elements.md).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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
	runID := flag.String("run", "", "the run's id (lockstep run --run-id)")
	elements := flag.String("element", "", "the elements to serve, comma-separated (the switches' names unless the scenario names them)")
	nkey := flag.String("nkey", "", "the element's key (lockstep run --element-keys DIR writes DIR/NAME.nk): its login on the run's embedded server")
	flag.Parse()
	if *runID == "" || *elements == "" {
		return fmt.Errorf("-run and -element are required")
	}
	opts := []nats.Option{nats.Token(os.Getenv("LOCKSTEP_NATS_TOKEN")), nats.Name("extswitch"),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}
	if *nkey != "" {
		o, err := nats.NkeyOptionFromSeed(*nkey)
		if err != nil {
			return err
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(*url, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	for _, el := range strings.Split(*elements, ",") {
		sub, err := natspeer.Serve(nc, natspeer.Subject(*runID, el), extswitch.New())
		if err != nil {
			return fmt.Errorf("element %s: %w", el, err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	fmt.Fprintf(os.Stderr, "extswitch: serving %s of run %s on %s\n", *elements, *runID, *url)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}
