package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--policies", "../../testdata/policies"},
		{"--no-such-flag"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), args, &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2\n%s", args, code, stderr.String())
		}
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var stderr bytes.Buffer
	code := run(ctx, []string{"--policies", "../../testdata/policies", "--self-signed", "--addr", "127.0.0.1:0"}, &stderr)
	if code != 0 {
		t.Fatalf("run = %d\n%s", code, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"BEGIN CERTIFICATE", "policies loaded: generation 1, 4 policies", "serving on https://127.0.0.1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunBadPolicies(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--policies", "does-not-exist", "--self-signed"}, &stderr); code != 1 {
		t.Errorf("run = %d, want 1\n%s", code, stderr.String())
	}
}
