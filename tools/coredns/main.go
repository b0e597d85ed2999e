// Command coredns is CoreDNS with the plugins the k8sapi kubelet test
// needs (cluster DNS for the pods: kubernetes, with errors, log and bind):
// CoreDNS's own main, coremain.Run, with a shorter plugin list, as
// CoreDNS documents for custom builds.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	// The order the plugins run in, as CoreDNS's plugin.cfg has them.
	dnsserver.Directives = []string{"bind", "errors", "log", "kubernetes"}
}

func main() { coremain.Run() }
