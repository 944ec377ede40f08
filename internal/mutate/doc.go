// Package mutate implements the patch machinery behind Kyverno-style mutate
// rules: strategic merge patches with anchors (patchStrategicMerge), RFC 6902
// JSON patches (patchesJson6902) and an RFC 6902 diff generator for
// admission responses.
//
// Both patch kinds follow the compile-once / apply-many shape: compile a patch
// once with [CompileStrategicMerge] or [CompileJSONPatch], then call Apply (or
// Mutate, which also reports whether the patch was skipped) for every
// resource. Compiled patches are immutable and safe for concurrent use.
//
// # Strategic merge
//
// A strategic merge patch is processed in two steps, exactly like upstream:
//
//  1. Anchor preprocessing. Conditional anchors "(key)" and global anchors
//     "<(key)" are checked against the resource; add-if-not-present anchors
//     "+(key)" are kept only when the key is absent. For lists of maps, every
//     resource element whose conditions hold contributes its own copy of the
//     patch element, tied to it by the element's "name". A failing condition
//     on a map (or a failing global anchor anywhere) turns the whole patch
//     into an empty patch, which upstream reports as a skip ("no patches
//     applied").
//  2. Merge. The preprocessed patch is merged with the semantics of
//     kustomize's kyaml merge2 walker used with list direction "prepend":
//     maps merge recursively, null deletes, "$patch: delete|replace|merge"
//     directives apply to maps and associative lists, lists of built-in
//     Kubernetes types merge by their patch merge keys (with the multi-key
//     "x-kubernetes-list-map-keys" of container and service ports), primitive
//     associative lists (finalizers) are unioned, and every other list is
//     replaced. New list elements go first; existing elements named by the
//     patch move to the front in patch order. This is why upstream runs a
//     foreach loop of strategic merge patches over the elements in reverse
//     order by default: engines must do the same to keep the order of
//     containers.
//
// The merge keys come from the struct tags of k8s.io/api (patchStrategy and
// patchMergeKey), restricted to the kinds that kyaml's built-in Kubernetes
// 1.21 schema knows. They are computed by reflection at development time
// (internal/schemagen, through go generate) into a table compiled into the
// package, which TestSchemaTable checks against k8s.io/api: the binaries do
// not link the k8s.io/api packages for them. Custom resources have no
// schema, so all their lists are replaced, as in kyaml.
//
// # JSON patch
//
// JSON patches are applied with github.com/evanphx/json-patch/v5 using the
// options upstream uses: negative indices, remove of a missing path is a
// no-op, and add creates missing parent objects.
//
// # Diff
//
// [Diff] computes a deterministic RFC 6902 patch between two trees, suitable
// for an AdmissionReview response.
//
// # Values
//
// Trees are JSON-like: map[string]any, []any, string, bool, nil and numbers
// (float64, int, int64, json.Number and the other Go integer types are
// accepted). Inputs are never mutated; outputs are fresh trees that keep the
// caller's scalar values where they were not changed.
package mutate
