package mutate

import (
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/internal/mutate/internal/schemagen"
)

// TestSchemaTable checks the generated table against the struct tags of
// k8s.io/api: after an upgrade of k8s.io/api it fails until the table is
// generated again, with -update (go generate ./internal/mutate).
func TestSchemaTable(t *testing.T) {
	want := schemagen.Build()
	src := schemagen.GoFile(want)
	if *update {
		if err := os.WriteFile("zz_schema_table.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile("zz_schema_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, src) {
		t.Fatal("zz_schema_table.go differs from k8s.io/api: run go generate ./internal/mutate")
	}
	got := builtinSchemas()
	if len(got) != len(want) {
		t.Errorf("%d kinds in the table, %d in k8s.io/api", len(got), len(want))
	}
	for gvk, w := range want {
		if err := sameSchema(got[gvk], w, map[*schemagen.Node]*schemaNode{}); err != nil {
			t.Errorf("%s: %v", gvk, err)
		}
	}
}

// sameSchema compares a parsed schema with the one reflection builds.
func sameSchema(got *schemaNode, want *schemagen.Node, seen map[*schemagen.Node]*schemaNode) error {
	if got == nil {
		return fmt.Errorf("no schema")
	}
	if s, ok := seen[want]; ok && s == got {
		return nil
	}
	seen[want] = got
	if got.array != want.Array || got.strategy != want.Strategy || got.merge != mergeStrategy(want.Strategy) ||
		!slices.Equal(got.keys, want.Keys) || (got.props == nil) != (want.Props == nil) ||
		len(got.props) != len(want.Props) || (got.additional == nil) != (want.Additional == nil) ||
		(got.items == nil) != (want.Items == nil) {
		return fmt.Errorf("got %+v, want %+v", *got, *want)
	}
	for name, w := range want.Props {
		if err := sameSchema(got.props[name], w, seen); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if want.Additional != nil {
		if err := sameSchema(got.additional, want.Additional, seen); err != nil {
			return fmt.Errorf("map values: %w", err)
		}
	}
	if want.Items != nil {
		if err := sameSchema(got.items, want.Items, seen); err != nil {
			return fmt.Errorf("items: %w", err)
		}
	}
	return nil
}

// TestSchemaNoAPIImports keeps the package's own files off k8s.io/api: the
// schema comes from the generated table, and importing an API package
// would link it, its methods and its type data into every binary.
func TestSchemaNoAPIImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "k8s.io/api/") ||
				strings.HasSuffix(p, "/schemagen") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
}
