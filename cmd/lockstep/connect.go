package main

import (
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
)

// connectWait connects to NATS, retrying for up to wait while the server
// is not up yet (a container or pod that starts before NATS does), and
// says once on stderr that it waits.
func connectWait(url string, wait time.Duration, stderr io.Writer, who string, opts ...nats.Option) (*nats.Conn, error) {
	deadline := time.Now().Add(wait)
	said := false
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		if !said {
			said = true
			fmt.Fprintf(stderr, "lockstep %s: waiting up to %v for NATS at %s: %v\n", who, wait, url, err)
		}
		time.Sleep(200 * time.Millisecond) // retrying against the deadline
	}
}
