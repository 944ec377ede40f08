package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/autogen"
)

// gavelResourcesDir holds gavel's own verification requests for the corpus
// folders that give none (no test, or a chainsaw test that only runs
// kubectl): testdata/resources/<folder>/requests.yaml. They are gavel's,
// written by reading each policy, not upstream's.
const gavelResourcesDir = "testdata/resources"

// gavelCases is a folder's requests.yaml.
type gavelCases struct {
	// Clock, when set (RFC 3339), is the time both sides' time functions
	// read: without it a policy that reads the clock could not be compared.
	Clock string `json:"clock,omitempty"`
	// Cluster are the objects of the in-memory cluster (the Namespace
	// default is added).
	Cluster []map[string]any `json:"cluster,omitempty"`
	// Requests are the admission requests both sides are evaluated on.
	Requests []gavelRequest `json:"requests"`
}

// gavelRequest is one admission request, in the fields the engine's
// Request has.
type gavelRequest struct {
	// Name says what the request shows (which rule it passes or fails).
	Name      string           `json:"name"`
	Operation string           `json:"operation,omitempty"`
	Object    map[string]any   `json:"object,omitempty"`
	OldObject map[string]any   `json:"oldObject,omitempty"`
	UserInfo  api.UserInfoData `json:"userInfo,omitempty"`
	// Kind and SubResource are the request's for a subresource (the
	// parent's kind, as the API server sends it).
	Kind            *schema.GroupVersionKind `json:"kind,omitempty"`
	SubResource     string                   `json:"subResource,omitempty"`
	NamespaceLabels map[string]string        `json:"namespaceLabels,omitempty"`
	// Clock, when set, replaces the folder's for this request.
	Clock string `json:"clock,omitempty"`
}

// request is the engine's request of the case, on copies of its objects.
func (g *gavelRequest) request() *engine.Request {
	req := &engine.Request{Operation: api.AdmissionOperation(g.Operation), UserInfo: g.UserInfo,
		SubResource: g.SubResource, NamespaceLabels: g.NamespaceLabels}
	if req.Operation == "" {
		req.Operation = api.Create
	}
	if g.Object != nil {
		req.Object = copyJSON(g.Object)
	}
	if g.OldObject != nil {
		req.OldObject = copyJSON(g.OldObject)
	}
	if g.Kind != nil {
		req.Kind = *g.Kind
	}
	if req.NamespaceLabels == nil {
		req.NamespaceLabels = map[string]string{}
	}
	// the name and namespace the API server sends: the object's
	md, _ := g.resource()["metadata"].(map[string]any)
	req.Name, _ = md["name"].(string)
	req.Namespace, _ = md["namespace"].(string)
	return req
}

// resource is the object the case's request is about.
func (g *gavelRequest) resource() map[string]any {
	if g.Object != nil {
		return g.Object
	}
	return g.OldObject
}

// loadGavelCases reads gavel's requests for a corpus folder; nil when it
// has none.
func loadGavelCases(t *testing.T, folder string) *gavelCases {
	t.Helper()
	path := filepath.Join(gavelResourcesDir, folder, "requests.yaml")
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var cs gavelCases
	if err := yaml.UnmarshalStrict(raw, &cs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i, r := range cs.Requests {
		if r.Name == "" || r.resource() == nil {
			t.Fatalf("%s: requests[%d]: a request needs a name and an object or oldObject", path, i)
		}
	}
	return &cs
}

// engineOptions are the hosts both sides are evaluated with.
func (cs *gavelCases) engineOptions(t *testing.T, clock string) []engine.Option {
	t.Helper()
	if clock == "" {
		clock = cs.Clock
	}
	cluster := inmem.New(clusterObjects(cs.Cluster)...)
	opts := []engine.Option{engine.WithClient(cluster), engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster),
		engine.WithNamespaceLabeler(cluster)}
	if clock != "" {
		now, err := time.Parse(time.RFC3339, clock)
		if err != nil {
			t.Fatalf("clock: %v", err)
		}
		opts = append(opts, engine.WithClock(func() time.Time { return now }))
	}
	return opts
}

// verifyGavelCases verifies the conversions on gavel's requests for the
// folder, each request on its own, and checks that the requests can
// show a difference: every rule of every source has a request it fails
// (validate) or applies to (mutate, generate) and one it passes or skips.
func verifyGavelCases(t *testing.T, folder string, cs *gavelCases, all, convs []*Conversion, merge func(*Verification)) {
	t.Helper()
	ctx := context.Background()
	for i := range cs.Requests {
		r := &cs.Requests[i]
		v, err := Verify(ctx, all, []map[string]any{copyJSON(r.resource())}, WithEngineOptions(cs.engineOptions(t, r.Clock)...),
			WithRequests(func(string, map[string]any) *engine.Request { return r.request() }))
		if err != nil {
			t.Errorf("%s: request %s: %v", folder, r.Name, err)
			continue
		}
		merge(v)
	}
	for _, c := range convs {
		if missing := uncovered(t, c, cs); len(missing) > 0 {
			t.Errorf("%s: gavel's requests do not cover %s: %s", folder, c.Name, strings.Join(missing, "; "))
		}
	}
}

// uncovered lists the rules of the source that gavel's requests do not
// both apply (fail, or mutate/generate) and spare (pass or skip).
func uncovered(t *testing.T, c *Conversion, cs *gavelCases) []string {
	t.Helper()
	p, ok := c.Source.(api.ClassicPolicy)
	if !ok {
		return nil
	}
	ctx := context.Background()
	seen := map[string]map[string]bool{} // rule: "applied", "spared"
	for _, r := range p.GetSpec().Rules {
		seen[r.Name] = map[string]bool{}
	}
	for i := range cs.Requests {
		eng, err := engine.New(cs.engineOptions(t, cs.Requests[i].Clock)...)
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := eng.CompilePolicy(p)
		if err != nil {
			return []string{"the source does not compile: " + err.Error()}
		}
		set := eng.NewPolicySet(compiled)
		got := map[string]string{}
		for _, call := range []func(context.Context, *engine.Request) (*engine.Response, error){set.Validate, set.Mutate, set.Generate} {
			resp, err := call(ctx, cs.Requests[i].request())
			if err != nil {
				t.Errorf("%s: %s: %v", c.Name, cs.Requests[i].Name, err)
				continue
			}
			for _, pr := range resp.Policies {
				for _, rr := range pr.Rules {
					name := rr.Name
					if orig, ok := autogen.Original(name); ok {
						name = orig
					}
					if got[name] != "applied" {
						got[name] = coverage(rr)
					}
				}
			}
		}
		for rule, m := range seen {
			if k, ok := got[rule]; ok {
				m[k] = true
			} else {
				// no result: the rule did not match
				m["spared"] = true
			}
		}
	}
	var missing []string
	for _, r := range p.GetSpec().Rules {
		for _, want := range []string{"applied", "spared"} {
			if !seen[r.Name][want] {
				missing = append(missing, fmt.Sprintf("rule %s is never %s", r.Name, want))
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// coverage classifies a rule result: a failure, or a mutation or
// generation, applied the rule; a pass of a validate rule, or a skip,
// spared the resource; an error is neither.
func coverage(rr engine.RuleResult) string {
	switch {
	case rr.Status == engine.StatusError:
		return "error"
	case rr.Status == engine.StatusFail || rr.Status == engine.StatusWarn:
		return "applied"
	case rr.Status == engine.StatusPass && rr.Type != engine.Validation:
		return "applied"
	}
	return "spared"
}
