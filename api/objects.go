package api

import (
	"fmt"
	"strings"
)

// isKyvernoGroup reports whether apiVersion belongs to the kyverno.io group.
func isKyvernoGroup(apiVersion string) bool {
	return strings.HasPrefix(apiVersion, GroupKyverno+"/")
}

// groupOf returns the group of an apiVersion ("" for the core group).
func groupOf(apiVersion string) string {
	if i := strings.IndexByte(apiVersion, '/'); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

// policyVersions are the kyverno.io versions that serve ClusterPolicy and Policy.
var policyVersions = map[string]bool{"kyverno.io/v1": true, "kyverno.io/v2beta1": true, "kyverno.io/v2": true}

// exceptionVersions are the versions that serve PolicyException.
var exceptionVersions = map[string]bool{"kyverno.io/v2": true, "kyverno.io/v2beta1": true, "kyverno.io/v2alpha1": true}

// celVersions are the served versions of the policies.kyverno.io kinds.
var celVersions = map[string]bool{"policies.kyverno.io/v1alpha1": true, "policies.kyverno.io/v1beta1": true, "policies.kyverno.io/v1": true}

// vapVersions serve ValidatingAdmissionPolicy and its bindings.
var vapVersions = map[string]bool{"admissionregistration.k8s.io/v1": true, "admissionregistration.k8s.io/v1beta1": true}

// mapVersions serve MutatingAdmissionPolicy and its bindings.
var mapVersions = map[string]bool{"admissionregistration.k8s.io/v1": true, "admissionregistration.k8s.io/v1beta1": true,
	"admissionregistration.k8s.io/v1alpha1": true}

// policyKind is a policy kind gavel decodes: the versions that serve it
// and the Go type one document decodes into.
type policyKind struct {
	versions map[string]bool
	new      func() PolicyObject
}

// policyKinds are the policy kinds by group and kind.
var policyKinds = map[string]map[string]policyKind{
	GroupKyverno: {
		KindClusterPolicy:        {policyVersions, func() PolicyObject { return &ClusterPolicy{} }},
		KindPolicy:               {policyVersions, func() PolicyObject { return &Policy{} }},
		KindCleanupPolicy:        {cleanupVersions, func() PolicyObject { return &CleanupPolicy{} }},
		KindClusterCleanupPolicy: {cleanupVersions, func() PolicyObject { return &CleanupPolicy{} }},
	},
	GroupPolicies: {
		KindValidatingPolicy:                {celVersions, func() PolicyObject { return &ValidatingPolicy{} }},
		KindNamespacedValidatingPolicy:      {celVersions, func() PolicyObject { return &ValidatingPolicy{} }},
		KindImageValidatingPolicy:           {celVersions, func() PolicyObject { return &ImageValidatingPolicy{} }},
		KindNamespacedImageValidatingPolicy: {celVersions, func() PolicyObject { return &ImageValidatingPolicy{} }},
		KindMutatingPolicy:                  {celVersions, func() PolicyObject { return &MutatingPolicy{} }},
		KindNamespacedMutatingPolicy:        {celVersions, func() PolicyObject { return &MutatingPolicy{} }},
		KindGeneratingPolicy:                {celVersions, func() PolicyObject { return &GeneratingPolicy{} }},
		KindNamespacedGeneratingPolicy:      {celVersions, func() PolicyObject { return &GeneratingPolicy{} }},
		KindDeletingPolicy:                  {celVersions, func() PolicyObject { return &DeletingPolicy{} }},
		KindNamespacedDeletingPolicy:        {celVersions, func() PolicyObject { return &DeletingPolicy{} }},
	},
	GroupAdmissionRegistration: {
		KindValidatingAdmissionPolicy:        {vapVersions, func() PolicyObject { return &ValidatingAdmissionPolicy{} }},
		KindValidatingAdmissionPolicyBinding: {vapVersions, func() PolicyObject { return &ValidatingAdmissionPolicyBinding{} }},
		KindMutatingAdmissionPolicy:          {mapVersions, func() PolicyObject { return &MutatingAdmissionPolicy{} }},
		KindMutatingAdmissionPolicyBinding:   {mapVersions, func() PolicyObject { return &MutatingAdmissionPolicyBinding{} }},
	},
}

// resourceKinds are the other kinds of the policy groups: objects that
// policies may validate like any resource.
var resourceKinds = map[string]map[string]bool{
	GroupKyverno: {KindPolicyException: true, KindUpdateRequest: true, "GlobalContextEntry": true, "AdmissionReport": true,
		"ClusterAdmissionReport": true, "BackgroundScanReport": true, "ClusterBackgroundScanReport": true},
	GroupPolicies:              {KindPolicyException: true},
	GroupAdmissionRegistration: {"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true},
}

// isPolicy reports whether the document is a policy of a kind gavel
// decodes (DecodePolicy): a kyverno.io ClusterPolicy, Policy,
// ClusterCleanupPolicy or CleanupPolicy, a policies.kyverno.io policy (ValidatingPolicy, ImageValidatingPolicy,
// MutatingPolicy, GeneratingPolicy, DeletingPolicy and their Namespaced
// kinds), or an admissionregistration.k8s.io ValidatingAdmissionPolicy,
// MutatingAdmissionPolicy or one of their bindings.
func (d Document) isPolicy() bool {
	_, ok := policyKinds[groupOf(d.APIVersion())][d.Kind()]
	return ok
}

// isPolicyException reports whether the document is a kyverno.io PolicyException.
func (d Document) isPolicyException() bool {
	return d.Kind() == KindPolicyException && isKyvernoGroup(d.APIVersion())
}

// isCELPolicyException reports whether the document is a
// policies.kyverno.io PolicyException.
func (d Document) isCELPolicyException() bool {
	return d.Kind() == KindPolicyException && groupOf(d.APIVersion()) == GroupPolicies
}

// UnknownKindError is a document of one of the policy groups (kyverno.io,
// policies.kyverno.io, admissionregistration.k8s.io) whose kind gavel does
// not know: a misspelt kind, or a kind of a later version.
type UnknownKindError struct {
	Source string
	Index  int
	// APIVersion and Kind are the document's.
	APIVersion, Kind string
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("%s[%d]: unknown kind %q of apiVersion %q", e.Source, e.Index, e.Kind, e.APIVersion)
}

// checkKind returns an *UnknownKindError for a document of a policy group
// (kyverno.io, policies.kyverno.io, admissionregistration.k8s.io) whose
// kind is neither a policy kind nor one of the group's other known kinds
// (PolicyException, UpdateRequest, GlobalContextEntry, webhook
// configurations, ...), and nil for every other document. Readers call it
// so that a misspelt policy kind is an error rather than a resource.
func (d Document) checkKind() error {
	g := groupOf(d.APIVersion())
	kinds, ok := policyKinds[g]
	if !ok {
		return nil
	}
	k := d.Kind()
	if _, ok := kinds[k]; ok || resourceKinds[g][k] {
		return nil
	}
	return &UnknownKindError{Source: d.Source, Index: d.Index, APIVersion: d.APIVersion(), Kind: k}
}

// DecodePolicy decodes a document of any policy kind (see isPolicy)
// strictly, into *ClusterPolicy, *Policy, *CleanupPolicy,
// *ValidatingPolicy, *ImageValidatingPolicy, *MutatingPolicy,
// *GeneratingPolicy, *DeletingPolicy, *ValidatingAdmissionPolicy,
// *ValidatingAdmissionPolicyBinding, *MutatingAdmissionPolicy or
// *MutatingAdmissionPolicyBinding. A namespaced kind without a namespace
// is in "default"; a cluster-wide kind has none (metadata.namespace is
// dropped, as the API server does).
func DecodePolicy(d Document) (PolicyObject, error) {
	pk, ok := policyKinds[groupOf(d.APIVersion())][d.Kind()]
	if !ok {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind(),
			Err: fmt.Errorf("not a policy: apiVersion %q kind %q", d.APIVersion(), d.Kind())}
	}
	if !pk.versions[d.APIVersion()] {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind() + "/" + d.Name(),
			Err: fmt.Errorf("unsupported apiVersion %q", d.APIVersion())}
	}
	p := pk.new()
	if err := DecodeStrict(d, p); err != nil {
		return nil, err
	}
	switch {
	case IsNamespaced(p) && p.GetNamespace() == "":
		setNamespace(p, "default")
	case !IsNamespaced(p) && p.GetNamespace() != "":
		setNamespace(p, "") // as the API server drops it
	}
	return p, nil
}

// setNamespace sets the namespace of a namespaced policy.
func setNamespace(p PolicyObject, ns string) {
	if o, ok := p.(interface{ SetNamespace(string) }); ok {
		o.SetNamespace(ns)
	}
}

// decodePolicyException decodes a PolicyException document strictly.
func decodePolicyException(d Document) (*PolicyException, error) {
	if !d.isPolicyException() {
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

// decodeCELPolicyException decodes a policies.kyverno.io PolicyException
// document strictly (v1alpha1, v1beta1 or v1).
func decodeCELPolicyException(d Document) (*CELPolicyException, error) {
	if !d.isCELPolicyException() {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind(),
			Err: fmt.Errorf("not a policies.kyverno.io PolicyException: apiVersion %q kind %q", d.APIVersion(), d.Kind())}
	}
	if !celVersions[d.APIVersion()] {
		return nil, &DecodeError{Source: d.Source, Index: d.Index, Object: d.Kind() + "/" + d.Name(),
			Err: fmt.Errorf("unsupported apiVersion %q", d.APIVersion())}
	}
	var e CELPolicyException
	if err := DecodeStrict(d, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// DecodeObject decodes a document by its kind, strictly: a policy of any
// kind (DecodePolicy) into its PolicyObject, a kyverno.io PolicyException
// into a *PolicyException, a policies.kyverno.io PolicyException into a
// *CELPolicyException, and any other object into nil (a resource: the
// caller reads d.Object). A document of a policy group (kyverno.io,
// policies.kyverno.io, admissionregistration.k8s.io) whose kind is neither
// one of those nor one of the group's other known kinds (UpdateRequest,
// GlobalContextEntry, webhook configurations, ...) is an *UnknownKindError,
// so that a misspelt policy kind is an error rather than a resource.
// The exception types have a PolicyObject's methods too: a type switch on
// the result names them before PolicyObject.
func DecodeObject(d Document) (any, error) {
	var obj any
	var err error
	switch {
	case d.isPolicy():
		obj, err = DecodePolicy(d)
	case d.isPolicyException():
		obj, err = decodePolicyException(d)
	case d.isCELPolicyException():
		obj, err = decodeCELPolicyException(d)
	default:
		err = d.checkKind()
	}
	if err != nil {
		return nil, err // never a typed nil
	}
	return obj, nil
}
