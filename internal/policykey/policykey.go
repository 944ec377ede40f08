// Package policykey names a policy the way exceptions, reports and
// generated resources do. It is internal: the engine, autogen, report
// and generate share it, and an embedder reads the same names from
// engine.Policy.Key.
package policykey

import "github.com/gavelpolicy/gavel/api"

// Key returns a policy's name, or "<namespace>/<name>" for a namespaced
// kind (Policy, NamespacedValidatingPolicy, ...).
func Key(p api.PolicyObject) string {
	if api.IsNamespaced(p) {
		return p.GetNamespace() + "/" + p.GetName()
	}
	return p.GetName()
}

// Namespace returns the namespace of a policy of a namespaced kind, and ""
// for a cluster-wide kind (whatever its metadata.namespace says, as the
// API server would drop it).
func Namespace(p api.PolicyObject) string {
	if api.IsNamespaced(p) {
		return p.GetNamespace()
	}
	return ""
}
