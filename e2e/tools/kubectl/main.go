// Command kubectl is kubectl v1.37.2, built from the module proxy for the
// scripts of upstream's chainsaw tests (see ../../build.sh): the judge puts
// it first on their PATH, so that they do not depend on the host's kubectl.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
