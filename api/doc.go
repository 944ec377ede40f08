// Package api defines the Go types of the policy language gavel speaks: the
// kyverno.io ClusterPolicy and Policy (v1, v2beta1, v2), PolicyException,
// UpdateRequest, and the wgpolicyk8s.io/v1alpha2 PolicyReport and
// ClusterPolicyReport, with the field names and JSON tags of the upstream
// project so that real policy YAML decodes unchanged.
//
// Free-form bodies that the upstream API keeps as arbitrary JSON (patterns,
// patches, condition keys and values, generate data, inline variable values)
// are held as decoded JSON values of type any: map[string]any, []any, string,
// float64, bool or nil.
//
// The package also decodes documents (YAML or JSON, one or many per stream)
// into these types, strictly: an unknown field is an error that names the
// document and the field path. It imports nothing else of gavel.
package api
