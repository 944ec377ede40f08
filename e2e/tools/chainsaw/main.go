// Command chainsaw is chainsaw v0.2.12 (github.com/kyverno/chainsaw), the
// end-to-end test runner of upstream's policy library, built from the module
// proxy for gavel's chainsaw judge (see ../../build.sh).
package main

import (
	"os"

	"github.com/go-logr/logr"
	"github.com/kyverno/chainsaw/pkg/commands"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	// controller-runtime warns on stderr when no logger is set
	log.SetLogger(logr.Discard())
	if err := commands.RootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
