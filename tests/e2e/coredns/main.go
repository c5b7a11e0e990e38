// CoreDNS with only the plugins the e2e node's cluster DNS needs (the upstream build links every
// plugin, cloud providers included). Built by tests/e2e/build-node.sh from the Go module proxy.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order plugins handle a query in: upstream's plugin.cfg order, restricted to these.
	dnsserver.Directives = []string{"ready", "health", "errors", "log", "cache", "kubernetes", "forward"}
}

func main() { coremain.Run() }
