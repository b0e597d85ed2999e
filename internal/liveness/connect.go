package liveness

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectWait connects to NATS, retrying for up to wait while the server
// is not up yet (a container or pod that starts before NATS does), and
// says once on stderr that it waits.
func ConnectWait(url string, wait time.Duration, stderr io.Writer, who string, opts ...nats.Option) (*nats.Conn, error) {
	deadline := time.Now().Add(wait)
	said := false
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		if Refused(err) {
			// The server is up and says no: waiting will not change it.
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		if !said {
			said = true
			fmt.Fprintf(stderr, "lockstep %s: waiting up to %v for NATS at %s: %v\n", who, wait, url, err)
		}
		// Every 20 ms: a member started at once with its server
		// (compose, Kubernetes) connects within 20 ms of the server
		// listening; a refused connection costs a fraction of a ms.
		time.Sleep(20 * time.Millisecond) // retrying against the deadline
	}
}

// Refused says whether err is the server refusing the client's
// credentials or the client refusing the server's certificate, rather than
// a server that is not up yet.
func Refused(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var alert tls.AlertError
	return errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) ||
		errors.Is(err, nats.ErrAuthRevoked) || errors.Is(err, nats.ErrAccountAuthExpired) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &certInvalid) ||
		errors.As(err, &alert)
}
