package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/loader"
)

// TestEachFileDocument reads a file one document at a time: the documents are
// those Load decodes, and fn's error stops the reading.
func TestEachFileDocument(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.yaml")
	text := "kind: A\nmetadata: {name: a}\n---\n# nothing\n---\nkind: B\n---\nkind: C\n"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := loader.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	err = eachFileDocument(path, func(raw api.RawDocument) error {
		docs, err := raw.Decode()
		for _, d := range docs {
			kinds = append(kinds, fmt.Sprintf("%s@%d", d.Kind(), d.Index))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range set.Resources {
		want = append(want, fmt.Sprintf("%s@%d", d.Kind(), d.Index))
	}
	if strings.Join(kinds, ",") != strings.Join(want, ",") || len(want) != 3 {
		t.Errorf("documents %v, want %v", kinds, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := eachFileDocument(path, func(api.RawDocument) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("stop: %v after %d documents", err, n)
	}
	if err := eachFileDocument(filepath.Join(dir, "missing.yaml"), func(api.RawDocument) error { return nil }); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
