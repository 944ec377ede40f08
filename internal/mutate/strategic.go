package mutate

import (
	"errors"
	"fmt"
	"reflect"
)

// Result is the outcome of applying a patch to a resource.
type Result struct {
	// Object is the patched resource: a fresh tree, never the caller's map.
	// When Skipped is true it holds the same content as the input.
	Object map[string]any
	// Skipped is true when the patch left the resource unchanged, which
	// upstream reports as a skipped rule with the message "no patches
	// applied".
	Skipped bool
	// Message is upstream's message for the outcome: "resource patched" or
	// "no patches applied".
	Message string
	// Condition is set when an anchor condition of a strategic merge patch did
	// not hold, which made upstream apply an empty patch instead.
	Condition *ConditionError
}

const (
	msgPatched   = "resource patched"
	msgNoPatches = "no patches applied"
)

// Patcher is implemented by the compiled patch kinds.
type Patcher interface {
	// Mutate returns the patched resource and whether the patch was skipped.
	Mutate(resource map[string]any) (Result, error)
}

var (
	_ Patcher = (*StrategicMerge)(nil)
	_ Patcher = (*JSONPatch)(nil)
)

// StrategicMerge is a compiled strategic merge patch (patchStrategicMerge).
// It is immutable and safe for concurrent use.
type StrategicMerge struct {
	patch *node
}

// CompileStrategicMerge pre-processes a patch tree once. The patch must be a
// map (the partial resource of patchStrategicMerge); anchors in its keys are
// interpreted at Apply time, against each resource. The patch tree is copied:
// later changes to it do not affect the compiled patch.
func CompileStrategicMerge(patch any) (*StrategicMerge, error) {
	n, err := fromValue(patch, rootPath())
	if err != nil {
		return nil, err
	}
	if n.kind != mapNode {
		what := "a list"
		if n.kind == scalarNode {
			what = "a scalar"
			if n.null {
				what = "null"
			}
		}
		return nil, &Error{Err: fmt.Errorf("%w: a strategic merge patch must be a map, got %s", ErrInvalidPatch, what)}
	}
	return &StrategicMerge{patch: n}, nil
}

// Mutate merges the patch into resource and reports the outcome the way
// upstream does: when a conditional anchor on a map or a global anchor does
// not hold, the patch becomes empty (Result.Condition tells which anchor), and
// a patch that changes nothing is reported as Skipped.
//
// resource is not modified, and the maps and lists of resource the patch
// does not reach are shared with Result.Object (copy on write), which saves
// converting and copying most of a large resource: neither may be modified
// afterwards.
func (s *StrategicMerge) Mutate(resource map[string]any) (Result, error) {
	return s.mutate(resource, true, true)
}

// Memo remembers what merges learn about one resource, so that the
// patches applied to it in turn do not work it out again (whether merging
// leaves it as it is, a walk of the whole resource). The zero value knows
// nothing. A Memo describes the last resource given with it, which must not
// change while the Memo is used; given another map, it starts over. It is
// not safe for concurrent use.
//
// It pays: without the engine's Memo (and CanonicalMemo's single walk),
// BenchmarkMutate takes 123.0k instead of 105.3k instructions per Pod.
type Memo struct {
	of     map[string]any
	stable int8 // 0 unknown, 1 yes, -1 no
}

// CanonicalMemo reports CanonicalTree(resource) and, when it is one,
// returns a Memo for it that already knows what the merges would work out
// by walking it: a single walk for both, for callers that check the
// resource first and merge patches into it next.
func CanonicalMemo(resource map[string]any) (bool, Memo) {
	canonical, stable := canonicalStable(resource, nil)
	if !canonical {
		return false, Memo{}
	}
	m := Memo{of: resource, stable: -1}
	if stable {
		m.stable = 1
	}
	return true, m
}

// stableTree reports stableRaw(resource), remembered.
func (m *Memo) stableTree(resource map[string]any) bool {
	if m == nil {
		return stableRaw(resource, nil)
	}
	if !sameMap(m.of, resource) {
		*m = Memo{of: resource}
	}
	if m.stable == 0 {
		m.stable = -1
		if stableRaw(resource, nil) {
			m.stable = 1
		}
	}
	return m.stable > 0
}

// sameMap reports whether a and b are the same map.
func sameMap(a, b map[string]any) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// MutateCanonical is Mutate for a resource the caller knows to be a
// canonical tree (CanonicalTree or CanonicalMemo true), which is then not
// walked again, with a Memo (nil for none) that the patches applied to the
// same resource share. What the two save (a walk of the whole resource
// each) is most of what a Mutate of a Pod by a strategic merge costs; a
// resource that is not canonical must go through Mutate.
func (s *StrategicMerge) MutateCanonical(resource map[string]any, memo *Memo) (Result, error) {
	if resource == nil {
		return Result{}, &Error{Err: fmt.Errorf("%w: the resource is nil", ErrApply)}
	}
	return s.apply(resource, lazyNode(resource), true, memo)
}

// mutate applies the patch; with lazy, the resource is converted only where
// the patch reaches it (lazy false converts it all, as a reference for
// tests).
func (s *StrategicMerge) mutate(resource map[string]any, share, lazy bool) (Result, error) {
	if resource == nil {
		return Result{}, &Error{Err: fmt.Errorf("%w: the resource is nil", ErrApply)}
	}
	var res *node
	var err error
	if lazy {
		res, err = fromResource(resource, rootPath())
	} else {
		res, err = fromValue(resource, rootPath())
	}
	if err != nil {
		return Result{}, err
	}
	return s.apply(resource, res, share, nil)
}

// apply merges the patch into res, the converted resource.
func (s *StrategicMerge) apply(resource map[string]any, res *node, share bool, memo *Memo) (Result, error) {
	patch := copyTree(s.patch)
	var cond *ConditionError
	if err := preprocess(patch, res); err != nil {
		if !errors.As(err, &cond) {
			return Result{}, wrapApply(err)
		}
		patch = newMap()
		if share && res.raw != nil && memo.stableTree(resource) {
			// merging an empty patch leaves a stable resource as it is
			return Result{Object: resource, Skipped: true, Message: msgNoPatches, Condition: cond}, nil
		}
	}
	merged, err := merge(res, patch)
	if err != nil {
		return Result{}, wrapApply(err)
	}
	out, err := toValueMode(merged, rootPath(), share)
	if err != nil {
		return Result{}, err
	}
	obj, ok := out.(map[string]any)
	if !ok {
		return Result{}, &Error{Err: fmt.Errorf("%w: the patched resource is not a map", ErrApply)}
	}
	skipped := equalToValue(merged, resource)
	r := Result{Object: obj, Skipped: skipped, Message: msgPatched, Condition: cond}
	if skipped {
		r.Message = msgNoPatches
	}
	return r, nil
}

func wrapApply(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Err: err}
}

// equalNodes compares two trees the way upstream compares the JSON of the
// resource before and after the patch.
func equalNodes(a, b *node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.kind != b.kind {
		return false
	}
	if a.raw != nil && b.raw != nil && sameRaw(a.raw, b.raw) {
		return true
	}
	a.expand()
	b.expand()
	switch a.kind {
	case mapNode:
		if len(a.keys) != len(b.keys) {
			return false
		}
		for i, k := range a.keys {
			bv := b.field(k)
			if bv == nil || !equalNodes(a.vals[i], bv) {
				return false
			}
		}
		return true
	case seqNode:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !equalNodes(a.items[i], b.items[i]) {
				return false
			}
		}
		return true
	}
	aNull := a.null || a.value == nil
	bNull := b.null || b.value == nil
	if aNull || bNull {
		return aNull == bNull
	}
	return equalScalars(a.value, b.value)
}

// equalToValue compares a tree with a Go value, like equalNodes.
func equalToValue(n *node, v any) bool {
	if n == nil {
		return false
	}
	if n.raw != nil && sameRaw(n.raw, v) {
		return true
	}
	n.expand()
	switch t := v.(type) {
	case map[string]any:
		if n.kind != mapNode || len(n.keys) != len(t) {
			return false
		}
		for i, k := range n.keys {
			ov, ok := t[k]
			if !ok || !equalToValue(n.vals[i], ov) {
				return false
			}
		}
		return true
	case []any:
		if n.kind != seqNode || len(n.items) != len(t) {
			return false
		}
		for i, e := range t {
			if !equalToValue(n.items[i], e) {
				return false
			}
		}
		return true
	case nil:
		return n.kind == scalarNode && (n.null || n.value == nil)
	case string, bool, float64, int64, int:
		return n.kind == scalarNode && !n.null && n.value != nil && equalScalars(n.value, v)
	}
	c, err := fromValue(v, rootPath())
	return err == nil && equalNodes(n, c)
}
