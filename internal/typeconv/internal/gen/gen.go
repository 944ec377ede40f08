// Package gen computes the table of package typeconv: the
// structured-merge-diff schema of the built-in kinds, read from the
// source of client-go's apply configurations (the schema they embed, the
// API server's OpenAPI of those kinds with list types and map keys), and
// the type of each kind k8s.io/api registers, named as the API server's
// type converters name them (runtime.Scheme.ToOpenAPIDefinitionName).
// Only typeconv's tests import it: binaries link neither client-go nor
// the k8s.io/api packages for it.
package gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// clientGoSchema is the file of client-go that holds the schema, and the
// variable that holds it.
const (
	clientGoSchema = "applyconfigurations/internal/internal.go"
	schemaVar      = "schemaYAML"
)

// Build returns the schema of the built-in kinds (restricted to the types
// they reach) and the type name of each kind, by "group/version/Kind".
// It runs the go command to find client-go's source in the module cache.
func Build() (*schema.Schema, map[string]string, error) {
	dir, err := moduleDir("k8s.io/client-go")
	if err != nil {
		return nil, nil, err
	}
	text, err := schemaText(filepath.Join(dir, clientGoSchema))
	if err != nil {
		return nil, nil, err
	}
	p, err := typed.NewParser(typed.YAMLObject(text))
	if err != nil {
		return nil, nil, fmt.Errorf("client-go's schema: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range builders {
		if err := add(scheme); err != nil {
			return nil, nil, err
		}
	}
	kinds := map[string]string{}
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name, err := scheme.ToOpenAPIDefinitionName(gvk)
		if err != nil {
			continue
		}
		if _, ok := p.Schema.FindNamedType(name); !ok {
			// list types, options and the like have no schema
			continue
		}
		av := gvk.Version
		if gvk.Group != "" {
			av = gvk.Group + "/" + av
		}
		kinds[av+"/"+gvk.Kind] = name
	}
	if len(kinds) == 0 {
		return nil, nil, errors.New("no kind of k8s.io/api has a schema in client-go's")
	}
	return reachable(&p.Schema, kinds), kinds, nil
}

// moduleDir returns the directory of a module of the build list.
func moduleDir(path string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-json", path).Output()
	if err != nil {
		return "", fmt.Errorf("go list -m %s: %w", path, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go list -m %s: no directory (%v)", path, err)
	}
	return m.Dir, nil
}

// schemaText reads the string literal of schemaVar in a Go file.
func schemaText(file string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return "", err
	}
	var lit *ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || lit != nil {
			return lit == nil
		}
		for i, id := range vs.Names {
			if id.Name != schemaVar || i >= len(vs.Values) {
				continue
			}
			ast.Inspect(vs.Values[i], func(n ast.Node) bool {
				if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
					lit = b
				}
				return lit == nil
			})
		}
		return false
	})
	if lit == nil {
		return "", fmt.Errorf("%s: no %s", file, schemaVar)
	}
	return strconv.Unquote(lit.Value)
}

// reachable returns the types of s that the kinds' types reach.
func reachable(s *schema.Schema, kinds map[string]string) *schema.Schema {
	seen := map[string]bool{}
	var visitAtom func(a schema.Atom)
	var visit func(name string)
	visitRef := func(r schema.TypeRef) {
		if r.NamedType != nil {
			visit(*r.NamedType)
		}
		visitAtom(r.Inlined)
	}
	visitAtom = func(a schema.Atom) {
		if a.List != nil {
			visitRef(a.List.ElementType)
		}
		if a.Map != nil {
			visitRef(a.Map.ElementType)
			for _, f := range a.Map.Fields {
				visitRef(f.Type)
			}
		}
	}
	visit = func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if t, ok := s.FindNamedType(name); ok {
			visitAtom(t.Atom)
		}
	}
	for _, n := range kinds {
		visit(n)
	}
	out := &schema.Schema{}
	for _, t := range s.Types {
		if seen[t.Name] {
			out.Types = append(out.Types, t)
		}
	}
	return out
}
