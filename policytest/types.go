// Package policytest runs policy tests written in the upstream CLI's test
// format (cli.kyverno.io/v1alpha1 Test, and the older untyped form): each
// test names policies, resources, optional exceptions, values (with
// foreachValues and per-resource values), user info, cluster resources,
// mutate-existing targets, and mocks of apiCall responses and global
// context entries, and lists the expected result of rules on resources
// (optionally under another operation), patched resources and targets,
// and generated resources.
//
// Run evaluates one test with the engine and an in-memory cluster and
// returns one Row per expected (policy, rule, resource) result, counted as
// the upstream CLI counts them.
package policytest

import "encoding/json"

// Test is a decoded kyverno-test.yaml.
type Test struct {
	// Path is the file the test was read from; relative paths in the test
	// are resolved against its folder.
	Path string `json:"-"`

	APIVersion string       `json:"apiVersion,omitempty"`
	Kind       string       `json:"kind,omitempty"`
	Metadata   testMetadata `json:"metadata,omitempty"`
	// Name is the older untyped form's name field.
	Name       string   `json:"name,omitempty"`
	Policies   []string `json:"policies,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Exceptions []string `json:"exceptions,omitempty"`
	// ClusterResources are files of kind ClusterResource: objects of the
	// cluster, and CRDs (spec.crds, paths relative to the test) that name
	// the resources of custom kinds. With them the CEL libraries read the
	// test's cluster and the registries, as upstream's.
	ClusterResources []string `json:"clusterResources,omitempty"`
	TargetResources  []string `json:"targetResources,omitempty"`
	// ParamResources are files of the parameter objects CEL rules select
	// (paramKind, paramRef): in the cluster, not evaluated.
	ParamResources []string `json:"paramResources,omitempty"`
	// Context is upstream's context file (kind Context): its objects are
	// in the cluster, its image data answers imageRegistry entries; in a
	// test without ClusterResources they are all the CEL resource library
	// and image.GetMetadata read, as upstream's.
	Context   string  `json:"context,omitempty"`
	Variables string  `json:"variables,omitempty"`
	Values    *Values `json:"values,omitempty"`
	UserInfo  string  `json:"userinfo,omitempty"`
	// JSONPayloads are JSON files that are not Kubernetes objects: the
	// ValidatingPolicies in JSON evaluation mode are applied to them.
	JSONPayloads []string `json:"jsonPayloads,omitempty"`
	Results      []Result `json:"results,omitempty"`

	// mocks are the test's apiCallResponses and globalContextEntries,
	// which only Run reads.
	mocks testMocks
}

// testMocks are the mock sections of a test file.
type testMocks struct {
	// APICallResponses mock the responses of apiCall context entries
	// (service calls by URL, Kubernetes API calls by urlPath) and of the
	// CEL http library, which gets upstream's {"body": BODY,
	// "statusCode": CODE}.
	APICallResponses []apiCallResponse `json:"apiCallResponses,omitempty"`
	// GlobalContextEntries mock the data of GlobalContextEntries that
	// globalReference context entries and globalContext.Get read.
	GlobalContextEntries []globalContextEntryValue `json:"globalContextEntries,omitempty"`
}

// UnmarshalJSON decodes a test file's document, its mocks of apiCall
// responses and global context entries included.
func (t *Test) UnmarshalJSON(b []byte) error {
	type plain Test
	if err := json.Unmarshal(b, (*plain)(t)); err != nil {
		return err
	}
	return json.Unmarshal(b, &t.mocks)
}

type testMetadata struct {
	Name string `json:"name,omitempty"`
}

// TestName returns the test's name.
func (t *Test) TestName() string {
	if t.Metadata.Name != "" {
		return t.Metadata.Name
	}
	return t.Name
}

// Result is one expected result.
type Result struct {
	Policy    string   `json:"policy,omitempty"`
	Rule      string   `json:"rule,omitempty"`
	Kind      string   `json:"kind,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Resources []string `json:"resources,omitempty"`
	// Resource is the deprecated single-resource form.
	Resource string `json:"resource,omitempty"`
	Result   string `json:"result,omitempty"`
	// Operation, when set, is the admission operation (CREATE, UPDATE,
	// DELETE or CONNECT) the resources are evaluated with for this
	// result, instead of the one their values give.
	Operation string `json:"operation,omitempty"`
	// Status is the deprecated spelling of Result.
	Status              string `json:"status,omitempty"`
	PatchedResources    string `json:"patchedResources,omitempty"`
	PatchedResource     string `json:"patchedResource,omitempty"`
	GeneratedResource   string `json:"generatedResource,omitempty"`
	CloneSourceResource string `json:"cloneSourceResource,omitempty"`
	// FailOnMissingResources fails a check whose patchedResources file
	// does not hold the resource; without it the check is skipped, as
	// upstream's test command skips it (a passed row whose reason says
	// so).
	FailOnMissingResources bool `json:"failOnMissingResources,omitempty"`

	// The policy kind flags of upstream's format: informative (a
	// result is matched with the policy of its name whatever its kind).
	IsValidatingAdmissionPolicy bool `json:"isValidatingAdmissionPolicy,omitempty"`
	IsMutatingAdmissionPolicy   bool `json:"isMutatingAdmissionPolicy,omitempty"`
	IsValidatingPolicy          bool `json:"isValidatingPolicy,omitempty"`
	IsImageValidatingPolicy     bool `json:"isImageValidatingPolicy,omitempty"`
	IsMutatingPolicy            bool `json:"isMutatingPolicy,omitempty"`
	IsGeneratingPolicy          bool `json:"isGeneratingPolicy,omitempty"`
	IsDeletingPolicy            bool `json:"isDeletingPolicy,omitempty"`
}

// Values is a values file (kind Values) or the inline values of a test:
// global values, and the values of policies, rules and resources,
// namespaces and subresources that only the runner reads (RuleValues and
// ForeachValues give a rule's, NewRequest applies the others).
type Values struct {
	APIVersion   string         `json:"apiVersion,omitempty"`
	Kind         string         `json:"kind,omitempty"`
	Metadata     testMetadata   `json:"metadata,omitempty"`
	GlobalValues map[string]any `json:"globalValues,omitempty"`

	sections valuesSections
}

// valuesSections are the sections of a values file besides its global
// values.
type valuesSections struct {
	Policies          []policyValues      `json:"policies,omitempty"`
	NamespaceSelector []namespaceLabels   `json:"namespaceSelector,omitempty"`
	Namespaces        []namespaceObject   `json:"namespaces,omitempty"`
	Subresources      []subresourceValues `json:"subresources,omitempty"`
}

// UnmarshalJSON decodes a values file or a test's inline values, all
// their sections.
func (v *Values) UnmarshalJSON(b []byte) error {
	type plain Values
	if err := json.Unmarshal(b, (*plain)(v)); err != nil {
		return err
	}
	return json.Unmarshal(b, &v.sections)
}

// policyValues are the values of one policy.
type policyValues struct {
	Name      string           `json:"name"`
	Rules     []ruleValues     `json:"rules,omitempty"`
	Resources []resourceValues `json:"resources,omitempty"`
}

// ruleValues are the context values of one rule.
type ruleValues struct {
	Name          string           `json:"name"`
	Values        map[string]any   `json:"values,omitempty"`
	ForeachValues map[string][]any `json:"foreachValues,omitempty"`
}

// resourceValues are values for one resource.
type resourceValues struct {
	Name   string         `json:"name"`
	Values map[string]any `json:"values,omitempty"`
}

// namespaceLabels gives the labels of a namespace.
type namespaceLabels struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// namespaceObject is a namespace given in full.
type namespaceObject struct {
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	// Object is the namespace as written, the namespaceObject of CEL
	// policy kinds.
	Object map[string]any `json:"-"`
}

// UnmarshalJSON keeps the namespace as written besides its name and
// labels.
func (n *namespaceObject) UnmarshalJSON(b []byte) error {
	type plain namespaceObject
	if err := json.Unmarshal(b, (*plain)(n)); err != nil {
		return err
	}
	return json.Unmarshal(b, &n.Object)
}

// subresourceValues declares a subresource and its parent.
type subresourceValues struct {
	Subresource    apiResource `json:"subresource"`
	ParentResource apiResource `json:"parentResource"`
}

// apiResource names a resource of the API.
type apiResource struct {
	Name    string `json:"name"`
	Group   string `json:"group,omitempty"`
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind"`
}

// UserInfoFile is a user-info file (kind UserInfo, or the older bare form).
type UserInfoFile struct {
	APIVersion   string       `json:"apiVersion,omitempty"`
	Kind         string       `json:"kind,omitempty"`
	Metadata     testMetadata `json:"metadata,omitempty"`
	Roles        []string     `json:"roles,omitempty"`
	ClusterRoles []string     `json:"clusterRoles,omitempty"`
	UserInfo     struct {
		Username string              `json:"username,omitempty"`
		UID      string              `json:"uid,omitempty"`
		Groups   []string            `json:"groups,omitempty"`
		Extra    map[string][]string `json:"extra,omitempty"`
	} `json:"userInfo,omitempty"`
}

// Row is one counted test entry.
type Row struct {
	// Test is the path of the test file.
	Test      string
	Policy    string
	Rule      string
	Kind      string
	Namespace string
	Resource  string
	// Expected is the expected result; Got the computed one ("" when the
	// resource or rule was not found, "excluded" when the rule did not
	// apply to the resource).
	Expected string
	Got      string
	Passed   bool
	// Reason explains the outcome: "Ok", "excluded", "not found",
	// "Want pass, got fail", "Resource diff", an error text.
	Reason  string
	Message string
}
