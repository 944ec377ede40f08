// Command gavel applies and tests Kyverno-language policies.
//
//	gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]
//	gavel test PATH... [-o text|table|json|yaml|junit] [flags]
//	gavel create test|values|user-info|exception [flags]
//	gavel jp query|function ...
//	gavel migrate POLICY_PATH... [-o DIR] [--verify --resource PATH... | --test DIR]
//	gavel version
//	gavel completion bash|zsh|fish
//
// Exit codes, as the upstream CLI's: 0 when everything passed, 1 when a
// policy or test failed, and 1 for usage and load errors too.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// Exit codes. The upstream CLI (cobra) exits 1 for any error: usage and
// load errors share the code of failures, so that scripts that test for 1
// see the same status.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 1
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); when it
// is not, the module version recorded in the binary is used.
var version = "dev"

const usage = `gavel: an embeddable policy engine for Kyverno-language policies

Usage:
  gavel apply POLICY_PATH... --resource RESOURCE_PATH... [flags]
  gavel test PATH... [flags]
  gavel create test|values|user-info|exception [flags]
  gavel jp query EXPRESSION [-i INPUT]
  gavel jp function [NAME...]
  gavel migrate POLICY_PATH... [-o DIR] [--verify --resource PATH... | --test DIR]
  gavel version
  gavel completion bash|zsh|fish
  gavel help [COMMAND]

Commands:
  apply       evaluate policies on resources; print failing rules and a summary
  test        run kyverno-test.yaml files; output as text, table, markdown,
              json, yaml or junit; the text output ends with "N passed, N failed"
  create      write a test, values, user info or PolicyException file
  jp          JMESPath helpers for policy authors
  migrate     convert ClusterPolicies into the CEL policy types, and verify
              the conversions on resources by evaluating both
  version     print the version of gavel, its module and Go
  completion  print a shell completion script

Run "gavel COMMAND -h" for the flags of a command.

The upstream CLI's flags work as in kyverno apply and kyverno test: replace
"kyverno" with "gavel" in a script.

Exit codes:
  0  clean: no failing or erroring result (apply), every entry passed (test)
  1  failures: a failing (Audit too, unless --audit-warn) or erroring
     result (apply), a failing entry (test); and, as upstream, a usage
     error, or policies, resources or tests that cannot be loaded
  N  apply --warn-exit-code N: warnings only, or no pass with --warn-no-pass

Environment:
  NO_COLOR    when set, output is never coloured (colour is only used when
              standard output is a terminal)
  GOGC        the garbage collector's target (Go's variable); gavel uses 200
              when it is not set: a run keeps little memory alive, so less
              frequent collections cost little memory and save CPU time
`

// commands are the top-level command names, for help and suggestions.
var commands = []string{"apply", "test", "create", "jp", "migrate", "version", "completion", "help"}

// gcPercent is the garbage collector's target when GOGC is not set: a
// run's live heap is small (apply keeps neither resources nor full
// results), so doubling Go's default keeps the peak low and saves ~15% of
// the CPU time of a large apply.
const gcPercent = 200

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
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
	case "create":
		return runCreate(args[1:], stdout, stderr)
	case "jp":
		return runJP(args[1:], stdin, stdout, stderr)
	case "migrate":
		return runMigrate(args[1:], stdout, stderr)
	case "version", "--version":
		return runVersion(args[1:], stdout, stderr)
	case "completion":
		return runCompletion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return runHelp(args[1], stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		fmt.Fprintf(stderr, "gavel: unknown flag %s: flags follow the command\nRun \"gavel --help\" for usage.\n", args[0])
		return exitUsage
	}
	msg := fmt.Sprintf("gavel: unknown command %q", args[0])
	if s := suggest(args[0], commands); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	fmt.Fprintf(stderr, "%s\nRun \"gavel --help\" for usage.\n", msg)
	return exitUsage
}

// runHelp prints the help of one command on stdout.
func runHelp(cmd string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch cmd {
	case "apply":
		// apply prints its flags on its error stream
		runApply([]string{"-h"}, stdin, stdout, stdout)
	case "test":
		return runTest([]string{"-h"}, stdout, stderr)
	case "jp":
		runJP(nil, stdin, stdout, stdout)
		runJP([]string{"query", "-h"}, stdin, stdout, stdout)
	case "version":
		fmt.Fprintln(stdout, "Usage: gavel version\n\nPrints the version of gavel (from the module version embedded by the Go\ntoolchain, or -ldflags \"-X main.version=...\"), of Go and the commit.")
	case "migrate":
		return runMigrate([]string{"-h"}, stdout, stdout)
	case "completion":
		fmt.Fprint(stdout, completionUsage)
	case "create":
		fmt.Fprint(stdout, createUsage)
	case "help":
		fmt.Fprint(stdout, usage)
	default:
		return run([]string{cmd}, stdin, stdout, stderr)
	}
	return exitOK
}

// versionInfo describes the running binary.
type versionInfo struct {
	Version   string
	Module    string
	GoVersion string
	Platform  string
	Revision  string
	Modified  bool
}

// currentVersion reads the build information embedded in the binary.
func currentVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module = bi.Main.Path
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "gavel version: unexpected argument %q\n", args[0])
		return exitUsage
	}
	v := currentVersion()
	fmt.Fprintf(stdout, "gavel %s\n", v.Version)
	if v.Module != "" {
		fmt.Fprintf(stdout, "module: %s\n", v.Module)
	}
	fmt.Fprintf(stdout, "go: %s %s\n", v.GoVersion, v.Platform)
	if v.Revision != "" {
		rev := v.Revision
		if v.Modified {
			rev += " (modified)"
		}
		fmt.Fprintf(stdout, "commit: %s\n", rev)
	}
	return exitOK
}
