package celpolicy

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
)

// The matching of Constraints is compared with k8s.io/apiserver's own
// predicates (rules and objects, which the package does not link) on
// every combination of a set of rules and requests.

type selectorProvider struct{ sel labels.Selector }

func (s selectorProvider) GetParsedObjectSelector() (labels.Selector, error) { return s.sel, nil }

// apiserverMatch is the API server's matching of resource rules (exact
// match policy) and the object selector.
func apiserverMatch(m *admissionregistrationv1.MatchResources, a *Attributes) bool {
	var obj, old runtime.Object
	if a.Object != nil {
		obj = &unstructured.Unstructured{Object: a.Object}
	}
	if a.OldObject != nil {
		old = &unstructured.Unstructured{Object: a.OldObject}
	}
	attr := admission.NewAttributesRecord(obj, old, schema.GroupVersionKind{}, a.Namespace, a.Name,
		schema.GroupVersionResource{Group: a.Group, Version: a.Version, Resource: a.Resource}, a.Subresource,
		admission.Operation(a.Operation), nil, false, nil)
	sel := labels.Everything()
	if m.ObjectSelector != nil {
		sel, _ = metav1.LabelSelectorAsSelector(m.ObjectSelector)
	}
	if ok, _ := (&object.Matcher{}).MatchObjectSelector(selectorProvider{sel}, attr); !ok {
		return false
	}
	matches := func(rs []admissionregistrationv1.NamedRuleWithOperations) bool {
		for _, r := range rs {
			if !(&rules.Matcher{Rule: r.RuleWithOperations, Attr: attr}).Matches() {
				continue
			}
			if len(r.ResourceNames) == 0 {
				return true
			}
			for _, n := range r.ResourceNames {
				if n == a.Name {
					return true
				}
			}
		}
		return false
	}
	if matches(m.ExcludeResourceRules) {
		return false
	}
	return len(m.ResourceRules) == 0 || matches(m.ResourceRules)
}

func rule(groups, versions, resources []string, ops []admissionregistrationv1.OperationType, scope string, names ...string) admissionregistrationv1.NamedRuleWithOperations {
	r := admissionregistrationv1.NamedRuleWithOperations{ResourceNames: names,
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}}
	if scope != "" {
		s := admissionregistrationv1.ScopeType(scope)
		r.Scope = &s
	}
	return r
}

func TestConstraintsMatchAPIServer(t *testing.T) {
	create, all := admissionregistrationv1.Create, admissionregistrationv1.OperationAll
	core, apps := []string{""}, []string{"apps"}
	exact := admissionregistrationv1.Exact
	constraints := []*admissionregistrationv1.MatchResources{
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(core, []string{"v1"}, []string{"pods"}, []admissionregistrationv1.OperationType{create}, "")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"}, []admissionregistrationv1.OperationType{all}, "Namespaced")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*/*"}, []admissionregistrationv1.OperationType{all}, "Cluster")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(core, []string{"v1"}, []string{"pods/status", "pods/exec"}, []admissionregistrationv1.OperationType{all}, "*")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(apps, []string{"v1"}, []string{"deployments"}, []admissionregistrationv1.OperationType{create, admissionregistrationv1.Update}, "", "web", "api")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"v1"}, []string{"*"}, []admissionregistrationv1.OperationType{all}, "")},
			ExcludeResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(core, []string{"*"}, []string{"namespaces", "pods"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete}, "")},
			MatchPolicy:          &exact},
		{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"}, []admissionregistrationv1.OperationType{all}, "")}},
		{ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpDoesNotExist}}},
			ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"}, []admissionregistrationv1.OperationType{create}, "")}},
		{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule(core, []string{"v1"}, []string{"pods"}, nil, "")}},
	}
	labelled := map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}
	other := map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}
	var attrs []Attributes
	for _, res := range [][3]string{{"", "v1", "pods"}, {"apps", "v1", "deployments"}, {"", "v1", "namespaces"}, {"apps", "v1beta1", "deployments"}, {"", "v1", "nodes"}} {
		for _, sub := range []string{"", "status", "exec"} {
			for _, op := range []string{"CREATE", "UPDATE", "DELETE", "CONNECT"} {
				for _, ns := range []string{"", "shop"} {
					for _, name := range []string{"web", "db", ""} {
						for _, objs := range [][2]map[string]any{{labelled, nil}, {nil, labelled}, {other, nil}, {nil, nil}} {
							attrs = append(attrs, Attributes{Group: res[0], Version: res[1], Resource: res[2], Subresource: sub,
								Operation: op, Namespace: ns, Name: name, Object: objs[0], OldObject: objs[1]})
						}
					}
				}
			}
		}
	}
	for i, m := range constraints {
		c, errs := CompileConstraints(m, field.NewPath("m"), false)
		if len(errs) > 0 {
			t.Fatalf("constraints %d: %v", i, errs)
		}
		for j := range attrs {
			a := &attrs[j]
			got, err := c.Matches(a)
			if err != nil {
				t.Fatalf("constraints %d, %+v: %v", i, a, err)
			}
			if want := apiserverMatch(m, a); got != want {
				t.Errorf("constraints %d on %s: got %v, want %v (the API server's)", i, describe(a), got, want)
			}
		}
	}
}

func describe(a *Attributes) string {
	return fmt.Sprintf("%s %s/%s/%s/%s ns=%q name=%q object=%v old=%v", a.Operation, a.Group, a.Version, a.Resource, a.Subresource,
		a.Namespace, a.Name, a.Object != nil, a.OldObject != nil)
}

func TestConstraintsNamespaceSelector(t *testing.T) {
	m := &admissionregistrationv1.MatchResources{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{rule([]string{"*"}, []string{"*"}, []string{"*"},
			[]admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}, "")},
	}
	c, errs := CompileConstraints(m, field.NewPath("m"), false)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	prod := func() (map[string]string, error) { return map[string]string{"env": "prod"}, nil }
	dev := func() (map[string]string, error) { return map[string]string{"env": "dev"}, nil }
	broken := func() (map[string]string, error) { return nil, fmt.Errorf("unreachable") }
	nsObject := map[string]any{"metadata": map[string]any{"labels": map[string]any{"env": "prod"}}}
	tests := []struct {
		name    string
		a       Attributes
		want    bool
		wantErr bool
	}{
		{"namespaced, labels match", Attributes{Resource: "pods", Version: "v1", Operation: "CREATE", Namespace: "a", NamespaceLabels: prod}, true, false},
		{"namespaced, labels differ", Attributes{Resource: "pods", Version: "v1", Operation: "CREATE", Namespace: "a", NamespaceLabels: dev}, false, false},
		{"cluster-scoped: never exempted", Attributes{Resource: "nodes", Version: "v1", Operation: "CREATE", NamespaceLabels: dev}, true, false},
		{"namespace created: its own labels", Attributes{Resource: "namespaces", Version: "v1", Operation: "CREATE", Object: nsObject, NamespaceLabels: dev}, true, false},
		{"namespace deleted: the stored labels", Attributes{Resource: "namespaces", Version: "v1", Operation: "DELETE", Namespace: "x", OldObject: nsObject, NamespaceLabels: dev}, false, false},
		{"labels fail", Attributes{Resource: "pods", Version: "v1", Operation: "CREATE", Namespace: "a", NamespaceLabels: broken}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Matches(&tt.a)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestConstraintsEquivalent(t *testing.T) {
	m := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{
		rule([]string{"apps"}, []string{"v1"}, []string{"deployments"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, "")}}
	beta := &Attributes{Group: "apps", Version: "v1beta1", Resource: "deployments", Operation: "CREATE", Namespace: "a"}
	for _, tt := range []struct {
		name       string
		policy     *admissionregistrationv1.MatchPolicyType
		equivalent bool
		want       bool
	}{
		{"default exact (ValidatingPolicy)", nil, false, false},
		{"default equivalent (ValidatingAdmissionPolicy)", nil, true, true},
		{"explicit exact", ptr(admissionregistrationv1.Exact), true, false},
		{"explicit equivalent", ptr(admissionregistrationv1.Equivalent), false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mm := *m
			mm.MatchPolicy = tt.policy
			c, errs := CompileConstraints(&mm, field.NewPath("m"), tt.equivalent)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got, _ := c.Matches(beta); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
