// Package testshared locates, for tests, the shared corpus that lives
// beside the repository in development and CI checkouts (../shared: the
// conformance corpus of upstream policies and CLI tests, the bench
// workload). Tests read it only when the GAVEL_SHARED environment
// variable names it (.ci/run sets it), so that go test ./... on a fresh
// clone needs nothing beside the repository: a test that needs the corpus
// is skipped, saying so; a test that only adds the corpus to its own
// testdata runs on its testdata alone.
package testshared

import (
	"os"
	"path/filepath"
	"testing"
)

// Env is the environment variable naming the shared corpus's directory.
const Env = "GAVEL_SHARED"

// Dir returns the directory sub of the shared corpus ("conformance",
// "bench"), or skips the test (or benchmark) when GAVEL_SHARED is not set
// or sub is not there, naming what it needs.
func Dir(tb testing.TB, sub string) string {
	tb.Helper()
	dir, ok := lookup(sub)
	if !ok {
		tb.Skipf("needs the shared corpus (%s): set %s to its directory, e.g. %s=$(pwd)/../shared (.ci/run does)", sub, Env, Env)
	}
	return dir
}

// Optional returns the directory sub of the shared corpus and true when
// GAVEL_SHARED names it; otherwise "" and false, and the test logs that it
// runs on the repository's data only.
func Optional(tb testing.TB, sub string) (string, bool) {
	tb.Helper()
	dir, ok := lookup(sub)
	if !ok {
		tb.Logf("%s not set: the shared corpus (%s) is not read, only the repository's data", Env, sub)
	}
	return dir, ok
}

func lookup(sub string) (string, bool) {
	root := os.Getenv(Env)
	if root == "" {
		return "", false
	}
	dir := filepath.Join(root, sub)
	if _, err := os.Stat(dir); err != nil {
		return "", false
	}
	return dir, true
}
