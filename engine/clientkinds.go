package engine

import (
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
)

// ClientKinds returns the kinds of the objects the set's rules may read
// through the Client: generate targets (read to find existing downstream
// resources) and clone sources, cloneList kinds, and mutate-existing
// targets, the parameter objects of CEL rules and
// ValidatingAdmissionPolicies (paramKind), Namespaces for CEL
// expressions that read namespaceObject or policies that select
// namespaces, and any kind for GeneratingPolicies and DeletingPolicies
// that call the resource library. A host that keeps objects only to serve the Client (as the CLI's
// in-memory cluster does) may keep just these kinds. all is true when a
// kind is known only at evaluation (it holds a variable, or is empty): then
// any object may be read.
func (s *PolicySet) ClientKinds() (kinds []string, all bool) {
	seen := map[string]bool{}
	add := func(kind string) {
		if kind == "" || strings.Contains(kind, "{{") {
			all = true
			return
		}
		// cloneList kinds may name a group and version: "v1/Secret"
		kind = kind[strings.LastIndex(kind, "/")+1:]
		if !seen[kind] {
			seen[kind] = true
			kinds = append(kinds, kind)
		}
	}
	pattern := func(spec api.ResourceSpec, cloneList *api.CloneList) {
		// as compile: a cloneList without kinds is no cloneList
		if cloneList == nil || cloneList.Kinds == nil {
			add(spec.Kind)
			return
		}
		// a cloneList generates the kinds it lists
		for _, k := range cloneList.Kinds {
			add(k)
		}
	}
	for _, p := range s.policies {
		for _, k := range p.bodyClientKinds() {
			add(k)
		}
		for _, r := range p.rules {
			switch {
			case r.src.Generation != nil:
				g := r.src.Generation
				if len(g.ForEachGeneration) == 0 {
					pattern(g.ResourceSpec, g.CloneList)
				}
				for i := range g.ForEachGeneration {
					f := &g.ForEachGeneration[i]
					pattern(f.ResourceSpec, f.CloneList)
				}
			case r.src.Mutation != nil:
				for i := range r.src.Mutation.Targets {
					add(r.src.Mutation.Targets[i].Kind)
				}
			}
			// CEL rules read their parameter objects, and the Namespace
			// of the resource for namespaceObject
			if v := r.validate; v != nil && v.cel != nil {
				if v.cel.paramKind != nil {
					add(v.cel.paramKind.Kind)
				}
				if v.cel.needsNamespace {
					add("Namespace")
				}
			}
			if r.celPre != nil && r.celPre.needsNamespace {
				add("Namespace")
			}
		}
	}
	sort.Strings(kinds)
	return kinds, all
}

// bodyClientKinds are the kinds a policy of a CEL kind reads through the
// Client: its parameter objects, and Namespaces when its expressions read
// namespaceObject or its constraints select namespaces.
func (p *Policy) bodyClientKinds() []string {
	var out []string
	switch b := p.body.(type) {
	case *validatingPolicy:
		for _, v := range b.variants {
			if v.body.Reads().Namespace || v.match.SelectsNamespaces() {
				out = append(out, "Namespace")
				break
			}
		}
	case *generatingPolicy:
		out = append(out, celKindsRead(b.body.Reads(), b.match.SelectsNamespaces())...)
	case *deletingPolicy:
		out = append(out, celKindsRead(b.body.Reads(), b.match.SelectsNamespaces())...)
	case *vapPolicy:
		if b.paramKind != nil {
			out = append(out, b.paramKind.Kind)
		}
		if b.body.Reads().Namespace || b.match.SelectsNamespaces() {
			out = append(out, "Namespace")
		}
		for _, bp := range b.bindings {
			if bb := bp.body.(*vapBinding); bb.match.SelectsNamespaces() {
				out = append(out, "Namespace")
			}
		}
	case *mutatingPolicy:
		if b.existing {
			// the targets are listed by resource: any kind may be read
			out = append(out, "")
		}
		for _, v := range b.variants {
			if v.body.Reads().Namespace || v.match.SelectsNamespaces() {
				out = append(out, "Namespace")
				break
			}
		}
	case *mapPolicy:
		if b.paramKind != nil {
			out = append(out, b.paramKind.Kind)
		}
		if b.body.Reads().Namespace || b.match.SelectsNamespaces() {
			out = append(out, "Namespace")
		}
		for _, bp := range b.bindings {
			if bb := bp.body.(*mapBinding); bb.match.SelectsNamespaces() {
				out = append(out, "Namespace")
			}
		}
	}
	return out
}

// celKindsRead are the kinds the expressions of a CEL kind read through
// the Client: Namespaces for namespaceObject and namespace selectors, and
// any kind (the empty kind) when they may call the resource library.
func celKindsRead(r celpolicy.Reads, selectsNamespaces bool) []string {
	var out []string
	if r.Namespace || selectsNamespaces {
		out = append(out, "Namespace")
	}
	if r.Resources {
		out = append(out, "")
	}
	return out
}
