//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestApplyPipe: a resource "file" that can be read only once (a named
// pipe, as a shell's <(...) gives) is evaluated, not read empty the second
// time.
func TestApplyPipe(t *testing.T) {
	text := pods(5)
	dir := writeFiles(t, map[string]string{"policies.yaml": streamPolicies, "pods.yaml": text})
	fifo := filepath.Join(dir, "pods.fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString(text)
	}()
	_, fromFile, _ := applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", filepath.Join(dir, "pods.yaml"), "--policy-report")
	code, fromPipe, stderr := applyRun(t, "", filepath.Join(dir, "policies.yaml"), "--resource", fifo, "--policy-report")
	if code != exitFailed || fromPipe != fromFile || !strings.Contains(fromPipe, "name: web-4") {
		t.Errorf("exit %d, stderr %s; pipe report:\n%s\n--- file report:\n%s", code, stderr, fromPipe, fromFile)
	}
}
