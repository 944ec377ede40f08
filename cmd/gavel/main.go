// Command gavel applies and tests Kyverno-language policies.
//
//	gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]
//	gavel test PATH... [flags]
//	gavel jp query|function ...
//	gavel version
//
// Exit codes: 0 when everything passed, 1 when a policy or test failed, 2
// for usage and load errors.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

var version = "dev"

const usage = `gavel: an embeddable policy engine for Kyverno-language policies

Usage:
  gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]
  gavel test PATH... [flags]
  gavel jp query EXPRESSION [-i INPUT]
  gavel jp function [NAME...]
  gavel version

Run "gavel COMMAND -h" for the flags of a command.

Exit codes: 0 clean, 1 failures (an Enforce violation for apply, a failing
entry for test), 2 usage or load error.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "apply":
		return runApply(args[1:], stdin, stdout, stderr)
	case "test":
		return runTest(args[1:], stdout, stderr)
	case "jp":
		return runJP(args[1:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "gavel %s\n", version)
		return exitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "gavel: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
