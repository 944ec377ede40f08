package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestRun(t *testing.T) {
	policies := filepath.Join("testdata", "policies")
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"good", []string{"--policies", policies, filepath.Join("testdata", "good")}, exitOK, "good.golden"},
		{"good all", []string{"--all", "--policies", policies, filepath.Join("testdata", "good")}, exitOK, "good-all.golden"},
		{"bad", []string{"--policies", policies, filepath.Join("testdata", "bad")}, exitViolation, "bad.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("stderr: %s", stderr.String())
			}
			golden := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got := stdout.String(); got != string(want) {
				t.Errorf("output differs from %s:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestRunLoadErrors(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: kyverno.io/v1\nkind: ClusterPolicy\nmetadata: {name: x}\nspec: {rules: []}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		nil,
		{"testdata/good"},
		{"--policies", "testdata/missing", "testdata/good"},
		{"--policies", "testdata/policies", "testdata/missing"},
		{"--policies", broken, "testdata/good"},
		{"--unknown"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != exitLoad {
			t.Errorf("run(%q) = %d, want %d", args, code, exitLoad)
		}
		if stderr.Len() == 0 {
			t.Errorf("run(%q): nothing on stderr", args)
		}
	}
}
