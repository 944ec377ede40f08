// Package manifests holds the pure part of validate.manifests rules (the
// engine asks the host to verify signatures, and decides the rest): which
// signed document stands for a resource, the comparison of the two leaf
// by leaf as k8s-manifest-sigstore makes it, the fields that may differ
// (the policy's ignoreFields and the default lists), and the object a dry
// run creates in place of the signed manifest. It reads canonical
// JSON-like values (maps, lists, strings, float64, bools, nil) and never
// modifies them.
package manifests
