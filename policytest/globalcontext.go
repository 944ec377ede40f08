package policytest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/internal/jmespath"
)

// globalContextEntryValue is one entry of a test's globalContextEntries:
// the data a GlobalContextEntry of that name holds, for globalReference
// context entries. Exactly one of Data (any JSON value), Resources
// (manifests, as the list a kubernetesResource entry caches) and
// ResourceFiles (files of manifests, relative to the test) gives it;
// FieldPath narrows it, and Projections, when given, replace it by an
// object of their names and values.
type globalContextEntryValue struct {
	Name          string                    `json:"name"`
	Data          json.RawMessage           `json:"data,omitempty"`
	Resources     []map[string]any          `json:"resources,omitempty"`
	ResourceFiles []string                  `json:"resourceFiles,omitempty"`
	FieldPath     string                    `json:"fieldPath,omitempty"`
	Projections   []globalContextProjection `json:"projections,omitempty"`
}

// globalContextProjection is a named JMESPath extract of an entry's data.
type globalContextProjection struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// mockGlobalContext answers globalReference context entries from a test's
// globalContextEntries (engine.GlobalContext). An entry whose data cannot
// be shaped is an error of the context entries that read it, as upstream's
// mock store reports it; the other entries still answer.
type mockGlobalContext map[string]mockEntry

type mockEntry struct {
	value any
	err   error
}

// GlobalContextEntry implements engine.GlobalContext.
func (m mockGlobalContext) GlobalContextEntry(_ context.Context, name string) (any, error) {
	e, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("global context entry %q not found in globalContextEntries", name)
	}
	return e.value, e.err
}

// GlobalReference implements cel.GlobalContextReader, as upstream's CLI
// answers globalContext.Get from the mocks: an entry no mock names is
// null, a projection a key of the entry's object.
func (m mockGlobalContext) GlobalReference(_ context.Context, name, projection string) (any, error) {
	e, ok := m[name]
	if !ok {
		return nil, nil
	}
	if e.err != nil || projection == "" {
		return e.value, e.err
	}
	obj, ok := e.value.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q: stored value is not an object", projection, name)
	}
	v, ok := obj[projection]
	if !ok {
		return nil, fmt.Errorf("projection %q not found in global context entry %q", projection, name)
	}
	return v, nil
}

// newMockGlobalContext checks the entries as upstream does before a test
// runs (a unique name, one source, named projections with a path) and
// shapes each one's data.
func (e *env) newMockGlobalContext(entries []globalContextEntryValue) (mockGlobalContext, error) {
	jp, err := jmespath.New()
	if err != nil {
		return nil, err
	}
	out := mockGlobalContext{}
	for i := range entries {
		g := &entries[i]
		name := strings.TrimSpace(g.Name)
		if name == "" {
			return nil, fmt.Errorf("globalContextEntries[%d]: name is required", i)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("globalContextEntries: duplicate name %q", name)
		}
		sources := 0
		for _, has := range []bool{len(g.Data) > 0, g.Resources != nil, g.ResourceFiles != nil} {
			if has {
				sources++
			}
		}
		if sources != 1 {
			return nil, fmt.Errorf("globalContextEntries entry %q: exactly one of data, resources and resourceFiles is required", name)
		}
		for _, p := range g.Projections {
			if strings.TrimSpace(p.Name) == "" {
				return nil, fmt.Errorf("globalContextEntries entry %q: projection name is required", name)
			}
			if strings.TrimSpace(p.Path) == "" {
				return nil, fmt.Errorf("globalContextEntries entry %q projection %q: path is required", name, p.Name)
			}
		}
		v, err := e.shapeEntry(jp, g)
		out[name] = mockEntry{value: v, err: err}
	}
	return out, nil
}

// shapeEntry is the value of an entry: its source, narrowed by the field
// path, then projected.
func (e *env) shapeEntry(jp *jmespath.Interpreter, g *globalContextEntryValue) (any, error) {
	var root any
	switch {
	case len(g.Data) > 0:
		if err := json.Unmarshal(g.Data, &root); err != nil {
			return nil, fmt.Errorf("globalContextEntries %q: data: %w", g.Name, err)
		}
	case g.Resources != nil:
		list := make([]any, len(g.Resources))
		for i, r := range g.Resources {
			list[i] = r
		}
		root = list
	default:
		docs, err := e.readFiles(g.ResourceFiles, "globalContextEntries "+g.Name+" resourceFiles")
		if err != nil {
			return nil, err
		}
		list := make([]any, len(docs))
		for i, d := range docs {
			list[i] = d.Object
		}
		root = list
	}
	root, err := jmespath.Canonical(root)
	if err != nil {
		return nil, fmt.Errorf("globalContextEntries %q: %w", g.Name, err)
	}
	if g.FieldPath != "" {
		if root, err = jp.Search(g.FieldPath, root); err != nil {
			return nil, fmt.Errorf("globalContextEntries %q fieldPath: %w", g.Name, err)
		}
	}
	if len(g.Projections) == 0 {
		return root, nil
	}
	out := make(map[string]any, len(g.Projections))
	for _, p := range g.Projections {
		v, err := jp.Search(p.Path, root)
		if err != nil {
			return nil, fmt.Errorf("globalContextEntries %q projection %q path %q: %w", g.Name, p.Name, p.Path, err)
		}
		out[p.Name] = v
	}
	return out, nil
}
