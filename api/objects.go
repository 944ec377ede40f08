package api

import (
	"fmt"
	"strings"
)

// isKyvernoGroup reports whether apiVersion belongs to the kyverno.io group.
func isKyvernoGroup(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, GroupKyverno+"/")
}

// policyVersions are the kyverno.io versions that serve ClusterPolicy and Policy.
var policyVersions = map[string]bool{"kyverno.io/v1": true, "kyverno.io/v2beta1": true, "kyverno.io/v2": true}

// exceptionVersions are the versions that serve PolicyException.
var exceptionVersions = map[string]bool{"kyverno.io/v2": true, "kyverno.io/v2beta1": true, "kyverno.io/v2alpha1": true}

// IsPolicy reports whether the document is a ClusterPolicy or Policy.
func (d Document) IsPolicy() bool {
	k := d.Kind()
	return (k == KindClusterPolicy || k == KindPolicy) && isKyvernoGroup(d.APIVersion())
}

// IsPolicyException reports whether the document is a kyverno.io PolicyException.
func (d Document) IsPolicyException() bool {
	return d.Kind() == KindPolicyException && isKyvernoGroup(d.APIVersion())
}

// DecodePolicy decodes a ClusterPolicy or Policy document strictly.
func DecodePolicy(d Document) (PolicyObject, error) {
	if !d.IsPolicy() {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind(),
			Err: fmt.Errorf("not a policy: apiVersion %q kind %q", d.APIVersion(), d.Kind())}
	}
	if !policyVersions[d.APIVersion()] {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind() + "/" + d.Name(),
			Err: fmt.Errorf("unsupported apiVersion %q", d.APIVersion())}
	}
	var p PolicyObject
	if d.Kind() == KindClusterPolicy {
		p = &ClusterPolicy{}
	} else {
		p = &Policy{}
	}
	if err := DecodeStrict(d, p); err != nil {
		return nil, err
	}
	if p.IsNamespaced() && p.GetNamespace() == "" {
		p.(*Policy).Namespace = "default"
	}
	return p, nil
}

// DecodePolicyException decodes a PolicyException document strictly.
func DecodePolicyException(d Document) (*PolicyException, error) {
	if !d.IsPolicyException() {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind(),
			Err: fmt.Errorf("not a PolicyException: apiVersion %q kind %q", d.APIVersion(), d.Kind())}
	}
	if !exceptionVersions[d.APIVersion()] {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind() + "/" + d.Name(),
			Err: fmt.Errorf("unsupported apiVersion %q", d.APIVersion())}
	}
	var e PolicyException
	if err := DecodeStrict(d, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// PolicyKey returns how exceptions and reports name a policy: the name of a
// ClusterPolicy, "<namespace>/<name>" of a Policy.
func PolicyKey(p PolicyObject) string {
	if p.IsNamespaced() {
		return p.GetNamespace() + "/" + p.GetName()
	}
	return p.GetName()
}
