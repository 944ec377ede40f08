package mutate

import (
	"strconv"
	"strings"
	"sync"
)

//go:generate go test -run ^TestSchemaTable$ -update

// schemaNode is the part of an OpenAPI schema the merge walker uses: object
// properties, map values, array items and, on list properties, the patch
// strategy and merge keys.
type schemaNode struct {
	props      map[string]*schemaNode
	additional *schemaNode
	items      *schemaNode
	array      bool
	strategy   string
	merge      bool // strategy lists "merge" (see associative)
	keys       []string
}

// field mirrors kyaml's ResourceSchema.Field: the property schema, else the
// schema of map values, else nil.
func (s *schemaNode) field(k string) *schemaNode {
	if s == nil {
		return nil
	}
	if c, ok := s.props[k]; ok {
		return c
	}
	return s.additional
}

// elements returns the schema of array items, nil when s is not an array.
func (s *schemaNode) elements() *schemaNode {
	if s == nil || !s.array {
		return nil
	}
	return s.items
}

// associative reports whether a list with this schema merges element-wise.
func (s *schemaNode) associative() bool {
	if s == nil {
		return false
	}
	return s.merge
}

// mergeStrategy reports whether a patchStrategy tag lists "merge".
func mergeStrategy(strategy string) bool {
	for _, st := range strings.Split(strategy, ",") {
		if st == "merge" {
			return true
		}
	}
	return false
}

// schemaIndex maps "apiVersion/kind" to the schema of the kind.
type schemaIndex map[string]*schemaNode

var builtinSchemas = sync.OnceValue(func() schemaIndex { return parseSchemas(schemaTable) })

// schemaFor returns the schema of a built-in kind, nil for unknown kinds.
func schemaFor(apiVersion, kind string) *schemaNode {
	return builtinSchemas()[apiVersion+"/"+kind]
}

// parseSchemas reads a table written by schemagen.Encode: the schemas that
// the struct tags of k8s.io/api give the kinds of kyaml's built-in Kubernetes
// 1.21 schema (kinds missing there are treated like custom resources: no
// schema, lists are replaced). The table is generated (go generate runs
// TestSchemaTable -update) so that the binaries link no k8s.io/api package
// for it; TestSchemaTable checks it against k8s.io/api.
func parseSchemas(table string) schemaIndex {
	idx := schemaIndex{}
	nodes := make([]schemaNode, 0, strings.Count(table, "\n"))
	ref := func(s string) *schemaNode {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= len(nodes) {
			panic("mutate: bad schema table reference " + strconv.Quote(s))
		}
		return &nodes[i]
	}
	type kindRef struct{ gvk, node string }
	var kinds []kindRef
	for line := range strings.Lines(table) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var n schemaNode
		switch {
		case f[0] == "k" && len(f) == 3:
			kinds = append(kinds, kindRef{f[1], f[2]})
			continue
		case f[0] == "." && len(f) == 1:
		case f[0] == "s":
			n.props = make(map[string]*schemaNode, len(f)-1)
			for _, p := range f[1:] {
				name, child, _ := strings.Cut(p, ":")
				n.props[name] = ref(child)
			}
		case f[0] == "m" && len(f) == 2:
			n.additional = ref(f[1])
		case f[0] == "a" && len(f) >= 2 && len(f) <= 4:
			n.array, n.items = true, ref(f[1])
			if len(f) > 2 {
				n.strategy = f[2]
				n.merge = mergeStrategy(n.strategy)
			}
			if len(f) > 3 {
				n.keys = strings.Split(f[3], ",")
			}
		default:
			panic("mutate: bad schema table line " + strconv.Quote(line))
		}
		// Children come before their parents: nodes never grows past its
		// capacity, so the pointers taken by ref stay valid.
		nodes = append(nodes, n)
	}
	for _, k := range kinds {
		idx[k.gvk] = ref(k.node)
	}
	return idx
}
