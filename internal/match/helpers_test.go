package match

import (
	"os"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// ruleCase is one rule with resources to match, as read from testdata.
type ruleCase struct {
	Name    string              `json:"name"`
	Match   api.MatchResources  `json:"match"`
	Exclude *api.MatchResources `json:"exclude,omitempty"`
	Cases   []resourceCase      `json:"cases"`
}

type resourceCase struct {
	Name            string            `json:"name"`
	Resource        map[string]any    `json:"resource"`
	Subresource     string            `json:"subresource,omitempty"`
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	Request         *requestSpec      `json:"request,omitempty"`
	Want            bool              `json:"want"`
	Reason          string            `json:"reason,omitempty"`
}

type requestSpec struct {
	Operation    string   `json:"operation"`
	Username     string   `json:"username,omitempty"`
	Groups       []string `json:"groups,omitempty"`
	Roles        []string `json:"roles,omitempty"`
	ClusterRoles []string `json:"clusterRoles,omitempty"`
}

func (c *resourceCase) request() Request {
	req := Request{Operation: "CREATE"}
	if c.Request != nil {
		req = Request{
			Operation:    c.Request.Operation,
			Username:     c.Request.Username,
			Groups:       c.Request.Groups,
			Roles:        c.Request.Roles,
			ClusterRoles: c.Request.ClusterRoles,
		}
	}
	labels := c.NamespaceLabels
	req.NamespaceLabels = func() (map[string]string, error) { return labels, nil }
	return req
}

func loadRuleCases(t *testing.T, file string) []ruleCase {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []ruleCase
	if err := yaml.UnmarshalStrict(data, &out); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return out
}

// mustRule compiles YAML match and exclude blocks.
func mustRule(t testing.TB, matchYAML, excludeYAML string, opts ...Option) *Rule {
	t.Helper()
	m := mustBlock(t, matchYAML)
	var ex *api.MatchResources
	if excludeYAML != "" {
		b := mustBlock(t, excludeYAML)
		ex = &b
	}
	r, errs := Compile(m, ex, field.NewPath("spec", "rules").Index(0), opts...)
	if len(errs) > 0 {
		t.Fatalf("compile: %v", errs.ToAggregate())
	}
	return r
}

func mustBlock(t testing.TB, y string) api.MatchResources {
	t.Helper()
	var m api.MatchResources
	if err := yaml.UnmarshalStrict([]byte(y), &m); err != nil {
		t.Fatalf("block: %v", err)
	}
	return m
}

func mustFilter(t testing.TB, y string) *Filter {
	t.Helper()
	f, errs := CompileFilter(mustBlock(t, y), field.NewPath("spec", "match"))
	if len(errs) > 0 {
		t.Fatalf("compile filter: %v", errs.ToAggregate())
	}
	return f
}

func podRes(name, ns string, labels map[string]string) Resource {
	return Resource{Version: "v1", Kind: "Pod", Name: name, Namespace: ns, Labels: labels}
}
