package typeconv

import (
	"fmt"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Apply merges an apply configuration (patch, of obj's kind: the caller
// gives it obj's apiVersion and kind) into obj as the API server merges a
// MutatingAdmissionPolicy's ApplyConfiguration: both are typed by the
// kind's schema and merged by structured-merge-diff (associative lists by
// their keys, atomic values replaced). With guard set, a patch that sets
// an atomic list, map or structure is refused, as the API server refuses
// it (setting part of an atomic value would drop the rest); Kyverno's
// MutatingPolicy lifts the guard with useServerSideApply. obj and patch
// are not modified; the result shares no map or list with them that
// structured-merge-diff copies.
func (c *Converter) Apply(obj, patch map[string]any, guard bool) (map[string]any, error) {
	pt, err := c.ToTyped(patch)
	if err != nil {
		return nil, fmt.Errorf("failed to convert patch object to typed object: %w", err)
	}
	if guard {
		if atomics := findAtomics(nil, pt.Schema(), pt.TypeRef(), pt.AsValue()); len(atomics) > 0 {
			return nil, fmt.Errorf("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %v", strings.Join(atomics, ", "))
		}
	}
	live, err := c.ToTyped(obj, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("failed to convert original object to typed object: %w", err)
	}
	merged, err := live.Merge(pt)
	if err != nil {
		return nil, fmt.Errorf("failed to merge patch: %w", err)
	}
	out, err := FromTyped(merged)
	if err != nil {
		return nil, fmt.Errorf("failed to convert typed object to object: %w", err)
	}
	return out, nil
}

// findAtomics returns the paths of the atomic lists, maps and structures a
// patch sets: the fields of structures are followed, the elements of
// lists too, the values of maps with keys of their own are not (as the
// API server's validatePatch walks them).
func findAtomics(path []fieldpath.PathElement, s *schema.Schema, tr schema.TypeRef, v value.Value) []string {
	a, ok := s.Resolve(tr)
	if !ok {
		return nil
	}
	var atomics []string
	if v.IsMap() && a.Map != nil {
		if a.Map.ElementRelationship == schema.Atomic {
			atomics = append(atomics, pathString(path))
		}
		v.AsMap().Iterate(func(key string, val value.Value) bool {
			if sf, ok := a.Map.FindField(key); ok {
				pe := fieldpath.PathElement{FieldName: &key}
				atomics = append(atomics, findAtomics(append(path[:len(path):len(path)], pe), s, sf.Type, val)...)
			}
			return true
		})
	}
	if v.IsList() && a.List != nil {
		if a.List.ElementRelationship == schema.Atomic {
			atomics = append(atomics, pathString(path))
		}
		l := v.AsList()
		for i := 0; i < l.Length(); i++ {
			pe := fieldpath.PathElement{Index: &i}
			atomics = append(atomics, findAtomics(append(path[:len(path):len(path)], pe), s, a.List.ElementType, l.At(i))...)
		}
	}
	return atomics
}

func pathString(path []fieldpath.PathElement) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString(p.String())
	}
	return b.String()
}
