// Package api defines the Go types of the policy language gavel speaks: the
// kyverno.io ClusterPolicy and Policy (v1, v2beta1, v2), PolicyException,
// UpdateRequest, and the wgpolicyk8s.io/v1alpha2 PolicyReport and
// ClusterPolicyReport, with the field names and JSON tags of the upstream
// project so that real policy YAML decodes unchanged; and the envelopes of
// the policies.kyverno.io kinds (ValidatingPolicy and the others, with the
// spec types of github.com/kyverno/api, one Go type for every served
// version), their PolicyException (CELPolicyException), and Kubernetes'
// admission policies and bindings (the spec types of k8s.io/api). Every
// policy kind implements PolicyObject; ClusterPolicy and Policy are the
// ClassicPolicy.
//
// Free-form bodies that the upstream API keeps as arbitrary JSON (patterns,
// patches, condition keys and values, generate data, inline variable values)
// are held as decoded JSON values of type any: map[string]any, []any, string,
// float64, bool or nil.
//
// The package also decodes documents (YAML or JSON, one or many per stream)
// into these types, strictly: an unknown field is an error that names the
// document and the field path (a key that differs from a field name only
// in case is read as encoding/json reads it). A document of a policy group
// whose kind gavel does not know is an UnknownKindError (CheckKind). It
// imports nothing else of gavel.
package api
