package match

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// TestKindsOnly: a rule is KindsOnly only when nothing but kinds can
// decide its outcome.
func TestKindsOnly(t *testing.T) {
	for _, tc := range []struct {
		name           string
		match, exclude string
		want           bool
	}{
		{"any, kinds", `{any: [{resources: {kinds: [Pod]}}]}`, ``, true},
		{"any, two kind filters", `{any: [{resources: {kinds: [Pod]}}, {resources: {kinds: [Deployment, "apps/v1/StatefulSet"]}}]}`, ``, true},
		{"inline resources", `{resources: {kinds: [Pod]}}`, ``, true},
		{"all, one filter", `{all: [{resources: {kinds: [Pod]}}]}`, ``, true},
		{"all, two filters", `{all: [{resources: {kinds: [Pod]}}, {resources: {kinds: ["*"]}}]}`, ``, false},
		{"subresource kind", `{any: [{resources: {kinds: [Pod/exec]}}]}`, ``, true},
		{"operations", `{any: [{resources: {kinds: [Pod], operations: [CREATE]}}]}`, ``, false},
		{"name", `{any: [{resources: {kinds: [Pod], name: x}}]}`, ``, false},
		{"names", `{any: [{resources: {kinds: [Pod], names: [x]}}]}`, ``, false},
		{"namespaces", `{any: [{resources: {kinds: [Pod], namespaces: [x]}}]}`, ``, false},
		{"annotations", `{any: [{resources: {kinds: [Pod], annotations: {a: b}}}]}`, ``, false},
		{"selector", `{any: [{resources: {kinds: [Pod], selector: {matchLabels: {a: b}}}}]}`, ``, false},
		{"namespaceSelector", `{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {a: b}}}}]}`, ``, false},
		{"roles", `{any: [{resources: {kinds: [Pod]}, roles: [ns:r]}]}`, ``, false},
		{"clusterRoles", `{any: [{resources: {kinds: [Pod]}, clusterRoles: [r]}]}`, ``, false},
		{"subjects", `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: u}]}]}`, ``, false},
		{"second filter has a name", `{any: [{resources: {kinds: [Pod]}}, {resources: {kinds: [Deployment], names: [x]}}]}`, ``, false},
		{"exclude by namespace", `{any: [{resources: {kinds: [Pod]}}]}`, `{any: [{resources: {namespaces: [kube-system]}}]}`, false},
		{"exclude by kind", `{any: [{resources: {kinds: [Pod, Deployment]}}]}`, `{any: [{resources: {kinds: [Deployment]}}]}`, false},
		{"exclude by user", `{any: [{resources: {kinds: [Pod]}}]}`, `{any: [{subjects: [{kind: User, name: u}]}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m api.MatchResources
			if err := yaml.UnmarshalStrict([]byte(tc.match), &m); err != nil {
				t.Fatal(err)
			}
			var ex *api.MatchResources
			if tc.exclude != "" {
				ex = &api.MatchResources{}
				if err := yaml.UnmarshalStrict([]byte(tc.exclude), ex); err != nil {
					t.Fatal(err)
				}
			}
			r, errs := Compile(m, ex, field.NewPath("spec", "rules").Index(0))
			if len(errs) > 0 {
				t.Fatal(errs.ToAggregate())
			}
			if got := r.KindsOnly(); got != tc.want {
				t.Errorf("KindsOnly() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKindsOnlyAgreesWithMatches: for every rule of the corpus that is
// KindsOnly, Matches decides as its kind selectors do, for every resource
// of the corpus (and the same under other kinds and subresources) and
// requests with and without operations and user information.
func TestKindsOnlyAgreesWithMatches(t *testing.T) {
	root := corpusRoot(t)
	var rules []*Rule
	var resources []Resource
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		for _, doc := range readDocs(t, path) {
			if isPolicyDoc(doc) {
				po, err := api.DecodePolicy(doc)
				if err != nil {
					continue
				}
				p, ok := po.(api.ClassicPolicy)
				if !ok {
					continue
				}
				for i := range p.GetSpec().Rules {
					if r, errs := compileRule(p, i); len(errs) == 0 {
						rules = append(rules, r)
					}
				}
				continue
			}
			if doc.Object != nil {
				resources = append(resources, ResourceFromObject(doc.Object, ""))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// the same resources under other kinds, versions and subresources
	for _, gvk := range []Resource{
		{Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Pod", Subresource: "ephemeralcontainers"},
		{Version: "v1", Kind: "Pod", Subresource: "exec"}, {Group: "apps", Version: "v1", Kind: "Deployment"},
		{Group: "batch", Version: "v1beta1", Kind: "CronJob"}, {Version: "v1", Kind: "Namespace"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, {Kind: ""},
	} {
		r := gvk
		r.Name, r.Namespace = "x", "default"
		resources = append(resources, r)
	}
	requests := []Request{
		{},
		{Operation: "CREATE"},
		{Operation: "DELETE", Username: "system:serviceaccount:ns:sa", Groups: []string{"system:authenticated"}, Roles: []string{"ns:r"}, ClusterRoles: []string{"cluster-admin"}},
		{Operation: "UPDATE", Username: "someone"},
	}
	kindsOnly, matched, notMatched := 0, 0, 0
	for _, r := range rules {
		if !r.KindsOnly() {
			continue
		}
		kindsOnly++
		for _, res := range resources {
			want := false
			for _, ks := range r.Kinds() {
				if ks.Matches(res.Group, res.Version, res.Kind, res.Subresource) {
					want = true
					break
				}
			}
			for _, req := range requests {
				got, _, err := r.Matches(res, req)
				if err != nil || got != want {
					t.Fatalf("rule with kinds %v on %+v, request %+v: Matches = %v, %v; kinds say %v", r.Kinds(), res, req, got, err, want)
				}
				if got {
					matched++
				} else {
					notMatched++
				}
			}
		}
	}
	if kindsOnly < 100 || matched == 0 || notMatched == 0 {
		t.Fatalf("too little compared: %d KindsOnly rules of %d, %d matches, %d non-matches", kindsOnly, len(rules), matched, notMatched)
	}
	t.Logf("%d of %d rules are KindsOnly; %d matching and %d non-matching pairs compared", kindsOnly, len(rules), matched, notMatched)
}
