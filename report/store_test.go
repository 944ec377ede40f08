package report

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// The seed's ClusterPolicyReport example: a background scan of five
// namespaces against require-ns-labels gives five ClusterPolicyReports,
// one per Namespace, named after its UID, with its failure.
const seedNamespacePolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-ns-labels
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: check-for-labels-on-namespace
    match:
      any:
      - resources:
          kinds:
          - Namespace
    validate:
      message: "The label ` + "`thisshouldntexist`" + ` is required."
      pattern:
        metadata:
          labels:
            thisshouldntexist: "?*"
`

var seedNamespaces = []struct{ name, uid string }{
	{"kube-node-lease", "06e5056f-76a3-461a-8d45-2793b8bd5bbc"},
	{"kube-system", "e63fabde-b572-4b07-b899-b2230f4eac69"},
	{"default", "4ffe22fd-0927-4ed1-8b04-50ca7ed58626"},
	{"kube-public", "c077ee71-435b-4921-9e05-8751fee71b64"},
	{"kyverno", "5d87cd66-ce30-4abc-b863-f3b97715a5f1"},
}

func namespaceObject(name, uid string) map[string]any {
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   name,
			"uid":    uid,
			"labels": map[string]any{"kubernetes.io/metadata.name": name},
		},
	}
}

func TestStoreSeedClusterPolicyReport(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, seedNamespacePolicy))
	s := NewStore(Options{Clock: clockAt(1666098654)})
	for _, ns := range seedNamespaces {
		if err := s.Update(ns.uid, validate(t, set, namespaceObject(ns.name, ns.uid), true), true); err != nil {
			t.Fatal(err)
		}
	}
	reports := s.reportObjects()
	if len(reports) != len(seedNamespaces) {
		t.Fatalf("want %d reports, one per Namespace, got %d", len(seedNamespaces), len(reports))
	}
	var order []string
	for _, o := range reports {
		r, ok := o.(*api.ClusterPolicyReport)
		if !ok {
			t.Fatalf("want *api.ClusterPolicyReport, got %T", o)
		}
		if r.Name != r.Scope.UID || r.Labels[LabelManagedBy] != "kyverno" || r.Summary != (api.PolicyReportSummary{Fail: 1}) ||
			r.Scope.Kind != "Namespace" || r.OwnerReferences[0].Name != r.Scope.Name || len(r.Results[0].Resources) != 0 {
			t.Errorf("report %s labels %v summary %+v scope %+v", r.Name, r.Labels, r.Summary, r.Scope)
		}
		order = append(order, r.Scope.Name)
	}
	// Sorted by name, the resource's UID.
	if got, want := strings.Join(order, ","), "kube-node-lease,default,kyverno,kube-public,kube-system"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	golden(t, "store/require-ns-labels.yaml", reportsYAML(t, reports))

	var table bytes.Buffer
	if err := writeTable(&table, reports); err != nil {
		t.Fatal(err)
	}
	golden(t, "store/require-ns-labels.table", table.Bytes())
}

// The seed's PolicyReport example: busybox passes, secret-pod fails, then
// secret-pod is deleted and its entry disappears.
const seedSecretsPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: secrets-not-from-env-vars
spec:
  background: true
  validationFailureAction: Audit
  rules:
  - name: secrets-not-from-env-vars
    match:
      any:
      - resources:
          kinds:
          - Pod
    validate:
      message: "Secrets must be mounted as volumes, not as environment variables."
      pattern:
        spec:
          containers:
          - name: "*"
            =(env):
            - =(valueFrom):
                X(secretKeyRef): "null"
`

const seedBusybox = `
apiVersion: v1
kind: Pod
metadata:
  name: busybox
  namespace: default
  uid: 0dd94825-cc6e-435b-982b-fb76ac2fdc2a
  labels:
    run: busybox
spec:
  containers:
  - name: busybox
    image: busybox:1.28
    args: [sleep, "9999"]
`

const seedSecretPod = `
apiVersion: v1
kind: Pod
metadata:
  name: secret-pod
  namespace: default
  uid: 72a7422c-fb6f-486f-b274-1ca0de55d49d
spec:
  containers:
  - name: busybox
    image: busybox:1.28
    env:
    - name: SECRET_STUFF
      valueFrom:
        secretKeyRef:
          name: mysecret
          key: mysecretname
`

func TestStoreSeedPolicyReportLifecycle(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, seedSecretsPolicy))
	now := int64(1666097147)
	s := NewStore(Options{Clock: func() time.Time { return time.Unix(now, 0) }})
	table := func() string {
		var b bytes.Buffer
		if err := writeTable(&b, s.reportObjects()); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	busybox := object(t, seedBusybox)
	if err := s.Update("0dd94825-cc6e-435b-982b-fb76ac2fdc2a", validate(t, set, busybox, false), false); err != nil {
		t.Fatal(err)
	}
	step1 := table()
	golden(t, "store/secrets-1-busybox.yaml", reportsYAML(t, s.reportObjects()))

	now = 1666098438
	secret := object(t, seedSecretPod)
	if err := s.Update("72a7422c-fb6f-486f-b274-1ca0de55d49d", validate(t, set, secret, false), false); err != nil {
		t.Fatal(err)
	}
	golden(t, "store/secrets-2-secret-pod.yaml", reportsYAML(t, s.reportObjects()))
	step2 := table()

	s.Delete("72a7422c-fb6f-486f-b274-1ca0de55d49d")
	step3 := table()
	golden(t, "store/secrets-3-deleted.yaml", reportsYAML(t, s.reportObjects()))
	golden(t, "store/secrets.table", []byte(step1+"\n"+step2+"\n"+step3))
	if step1 != step3 {
		t.Errorf("after deletion the report should be back to its first state:\n%s\n%s", step1, step3)
	}
}

// storeFixture compiles the policies used by the Store tests.
type storeFixture struct {
	set                                   *engine.PolicySet
	audit, enforceBG, enforceOnly, mutate *engine.Policy
	namespaced                            *engine.Policy
}

const enforceBackgroundPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: enforce-bg
spec:
  validationFailureAction: Enforce
  background: true
  rules:
  - name: no-latest
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "latest is not allowed"
      pattern:
        spec:
          containers:
          - image: "!*:latest"
`

const enforceOnlyPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: enforce-only
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: need-app
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "app label required"
      pattern:
        metadata:
          labels:
            app: "?*"
`

const mutatePolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-label
spec:
  rules:
  - name: add-label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            added: "yes"
`

const namespacedAuditPolicy = `
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: team-label
  namespace: payments
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "team label required"
      pattern:
        metadata:
          labels:
            team: "?*"
`

func newStoreFixture(t *testing.T) *storeFixture {
	eng := newEngine(t)
	f := &storeFixture{
		audit:       compilePolicy(t, eng, auditPolicy),
		enforceBG:   compilePolicy(t, eng, enforceBackgroundPolicy),
		enforceOnly: compilePolicy(t, eng, enforceOnlyPolicy),
		mutate:      compilePolicy(t, eng, mutatePolicy),
		namespaced:  compilePolicy(t, eng, namespacedAuditPolicy),
	}
	f.set = eng.NewPolicySet(f.audit, f.enforceBG, f.enforceOnly, f.mutate, f.namespaced)
	return f
}

func pod(ns, name, uid, image string, labels map[string]any) map[string]any {
	md := map[string]any{"name": name, "namespace": ns, "uid": uid}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": md,
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}},
	}
}

// entries lists "report|namespace|policy|rule|resource|result" for every
// entry of every report, the resource from the report's scope (entries
// have none: the report checks it has the scope's UID as its name and
// its owner).
func entries(reports []any) []string {
	var out []string
	add := func(name, ns string, owners []metav1.OwnerReference, scope *api.ObjectReference, results []api.PolicyReportResult) {
		resource := "NO-SCOPE"
		if scope != nil && scope.UID == name && scope.Namespace == ns && len(owners) == 1 &&
			owners[0].UID == types.UID(scope.UID) && owners[0].Name == scope.Name && owners[0].Kind == scope.Kind {
			resource = scope.Name
		}
		for _, r := range results {
			if len(r.Resources) > 0 {
				resource = "RESOURCES"
			}
			out = append(out, fmt.Sprintf("%s|%s|%s|%s|%s|%s", name, ns, r.Policy, r.Rule, resource, r.Result))
		}
	}
	for _, r := range reports {
		switch v := r.(type) {
		case *api.PolicyReport:
			add(v.Name, v.Namespace, v.OwnerReferences, v.Scope, v.Results)
		case *api.ClusterPolicyReport:
			add(v.Name, "", v.OwnerReferences, v.Scope, v.Results)
		case *api.OpenReport:
			add(v.Name, v.Namespace, v.OwnerReferences, v.Scope, v.Results)
		case *api.OpenClusterReport:
			add(v.Name, "", v.OwnerReferences, v.Scope, v.Results)
		}
	}
	return out
}

func TestStoreWhatIsReported(t *testing.T) {
	f := newStoreFixture(t)
	// A Pod that passes every validate rule, in the namespaced policy's namespace.
	good := pod("payments", "good", "uid-good", "nginx:1.25", map[string]any{"app": "web", "team": "a"})
	// A Pod failing the Audit policy only.
	auditFail := pod("payments", "audit-fail", "uid-audit-fail", "nginx:1.25", map[string]any{"app": "web"})
	// A Pod that the Enforce policies block.
	blocked := pod("payments", "blocked", "uid-blocked", "nginx:latest", nil)

	s := NewStore(Options{Clock: fixedClock})
	for _, p := range []map[string]any{good, auditFail, blocked} {
		md := p["metadata"].(map[string]any)
		res := applyAll(t, f.set, []map[string]any{p})
		if err := s.Update(md["uid"].(string), res, false); err != nil {
			t.Fatal(err)
		}
	}
	got := strings.Join(entries(s.reportObjects()), "\n")
	// enforce-only (Enforce, background: false) reports the passes of the
	// admitted Pods (upstream's "Pass only"); add-label (mutate) is not
	// reported; the blocked Pod was not admitted.
	want := strings.Join([]string{
		"uid-audit-fail|payments|enforce-bg|no-latest|audit-fail|pass",
		"uid-audit-fail|payments|enforce-only|need-app|audit-fail|pass",
		"uid-audit-fail|payments|payments/team-label|check-team|audit-fail|fail",
		"uid-audit-fail|payments|require-team|check-team|audit-fail|fail",
		"uid-good|payments|enforce-bg|no-latest|good|pass",
		"uid-good|payments|enforce-only|need-app|good|pass",
		"uid-good|payments|payments/team-label|check-team|good|pass",
		"uid-good|payments|require-team|check-team|good|pass",
	}, "\n")
	if got != want {
		t.Errorf("entries:\n%s\nwant:\n%s", got, want)
	}

	// A background scan reports the blocked Pod's violations of the
	// background policies (it exists, created before the policies), and
	// never enforce-only.
	if err := s.Update("uid-blocked", validate(t, f.set, blocked, true), true); err != nil {
		t.Fatal(err)
	}
	got = strings.Join(entries(s.reportObjects()), "\n")
	for _, w := range []string{
		"uid-blocked|payments|enforce-bg|no-latest|blocked|fail",
		"uid-blocked|payments|require-team|check-team|blocked|fail",
		"uid-blocked|payments|payments/team-label|check-team|blocked|fail",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %s in\n%s", w, got)
		}
	}
	if strings.Contains(got, "enforce-only|need-app|blocked") {
		t.Errorf("enforce-only reported from a scan:\n%s", got)
	}
	// Results of a policy with background: false passed as a background
	// scan are dropped too.
	s2 := NewStore(Options{Clock: fixedClock})
	if err := s2.Update("uid-good", validate(t, f.set, good, false), true); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(entries(s2.reportObjects()), "\n"); strings.Contains(got, "enforce-only") {
		t.Errorf("background: false policy reported from a scan:\n%s", got)
	}
}

func TestStoreScopeFollowsResource(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, seedNamespacePolicy), compilePolicy(t, eng, seedSecretsPolicy))
	s := NewStore(Options{Clock: fixedClock})
	if err := s.Update("ns-1", validate(t, set, namespaceObject("team-a", "ns-1"), true), true); err != nil {
		t.Fatal(err)
	}
	for i, ns := range []string{"team-b", "team-a", "team-b"} {
		uid := fmt.Sprintf("pod-%d", i)
		p := pod(ns, fmt.Sprintf("p%d", i), uid, "nginx", nil)
		if err := s.Update(uid, validate(t, set, p, false), false); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, r := range s.reportObjects() {
		switch v := r.(type) {
		case *api.ClusterPolicyReport:
			kinds = append(kinds, fmt.Sprintf("%s %s %d", v.Kind, v.Name, len(v.Results)))
		case *api.PolicyReport:
			kinds = append(kinds, fmt.Sprintf("%s %s/%s %d", v.Kind, v.Namespace, v.Name, len(v.Results)))
		}
	}
	want := "ClusterPolicyReport ns-1 1|PolicyReport team-a/pod-1 1|PolicyReport team-b/pod-0 1|PolicyReport team-b/pod-2 1"
	if got := strings.Join(kinds, "|"); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestStoreMerging(t *testing.T) {
	f := newStoreFixture(t)
	failing := pod("default", "p", "uid-p", "nginx:1.25", map[string]any{"app": "a"})
	fixed := pod("default", "p", "uid-p", "nginx:1.25", map[string]any{"app": "a", "team": "a"})
	now := int64(100)
	s := NewStore(Options{Clock: func() time.Time { return time.Unix(now, 0) }})
	teamResult := func() string {
		for _, e := range entries(s.reportObjects()) {
			if strings.Contains(e, "|require-team|") {
				return e[strings.LastIndexByte(e, '|')+1:]
			}
		}
		return "none"
	}
	steps := []struct {
		obj        map[string]any
		background bool
		want       string
	}{
		{failing, false, "fail"}, // admission
		{fixed, true, "pass"},    // a later scan wins
		{failing, false, "fail"}, // a later admission wins
		{failing, true, "fail"},
		{fixed, false, "pass"},
	}
	for i, st := range steps {
		now++
		if err := s.Update("uid-p", validate(t, f.set, st.obj, st.background), st.background); err != nil {
			t.Fatal(err)
		}
		if got := teamResult(); got != st.want {
			t.Errorf("step %d: got %s, want %s", i, got, st.want)
		}
	}
	// Equal timestamps: the latest update still wins.
	s = NewStore(Options{Clock: fixedClock})
	_ = s.Update("uid-p", validate(t, f.set, fixed, true), true)
	_ = s.Update("uid-p", validate(t, f.set, failing, false), false)
	if got := teamResult(); got != "fail" {
		t.Errorf("same second: got %s, want fail", got)
	}
	// An admission with no reportable result clears the admission entries
	// but keeps the scan's.
	_ = s.Update("uid-p", nil, false)
	if got := teamResult(); got != "pass" {
		t.Errorf("after empty admission: got %s, want pass", got)
	}
	_ = s.Update("uid-p", nil, true)
	if len(s.UIDs()) != 0 || len(s.reportObjects()) != 0 {
		t.Errorf("store should be empty: %d resources", len(s.UIDs()))
	}
}

func TestStorePruneDeletedPolicies(t *testing.T) {
	f := newStoreFixture(t)
	s := NewStore(Options{Clock: fixedClock})
	p := pod("payments", "p", "uid-p", "nginx:1.25", nil)
	if err := s.Update("uid-p", validate(t, f.set, p, true), true); err != nil {
		t.Fatal(err)
	}
	s.Prune(func(policy, _ string) (bool, bool) { return policy != "payments/team-label", true })
	s.Prune(func(policy, _ string) (bool, bool) { return policy != "require-team", true })
	got := strings.Join(entries(s.reportObjects()), "\n")
	if got != "uid-p|payments|enforce-bg|no-latest|p|pass" {
		t.Errorf("got\n%s", got)
	}
	s.Prune(func(policy, _ string) (bool, bool) { return policy != "enforce-bg", true })
	if len(s.UIDs()) != 0 {
		t.Errorf("store should be empty")
	}
}

func TestStoreErrors(t *testing.T) {
	s := NewStore(Options{})
	if err := s.Update("", nil, false); !errors.Is(err, ErrNoUID) {
		t.Errorf("empty uid: %v", err)
	}
	err := s.Update("u", []engine.PolicyResult{{}}, false)
	var ie *inputError
	if !errors.As(err, &ie) || ie.Path != "results[0].policy" {
		t.Errorf("nil policy: %v", err)
	}
	s.Delete("missing")
	if len(s.reportObjects()) != 0 {
		t.Error("reports of an empty store")
	}
}

func TestStoreUIDFallback(t *testing.T) {
	f := newStoreFixture(t)
	s := NewStore(Options{Clock: fixedClock})
	p := pod("default", "p", "", "nginx:1.25", nil)
	delete(p["metadata"].(map[string]any), "uid")
	if err := s.Update("given-uid", validate(t, f.set, p, true), true); err != nil {
		t.Fatal(err)
	}
	r := s.reportObjects()[0].(*api.PolicyReport)
	if r.Name != "given-uid" || r.Scope.UID != "given-uid" || r.OwnerReferences[0].UID != "given-uid" {
		t.Errorf("name %q, scope %+v, owners %+v", r.Name, r.Scope, r.OwnerReferences)
	}
}

func TestStoreOpenReports(t *testing.T) {
	eng := newEngine(t)
	set := eng.NewPolicySet(compilePolicy(t, eng, seedNamespacePolicy), compilePolicy(t, eng, seedSecretsPolicy))
	s := NewStore(Options{Clock: fixedClock, Format: OpenReports})
	_ = s.Update("ns-1", validate(t, set, namespaceObject("team-a", "ns-1"), true), true)
	_ = s.Update("pod-1", validate(t, set, object(t, seedSecretPod), true), true)
	reports := s.reportObjects()
	if _, ok := reports[0].(*api.OpenClusterReport); !ok {
		t.Errorf("reports[0] is %T", reports[0])
	}
	if _, ok := reports[1].(*api.OpenReport); !ok {
		t.Errorf("reports[1] is %T", reports[1])
	}
	golden(t, "store/openreports.yaml", reportsYAML(t, reports))
}

// TestStoreReportsAreCopies checks that changing a rendered report does not
// change the store.
func TestStoreReportsAreCopies(t *testing.T) {
	f := newStoreFixture(t)
	s := NewStore(Options{Clock: fixedClock})
	_ = s.Update("uid-p", validate(t, f.set, pod("default", "p", "uid-p", "nginx", nil), true), true)
	r := s.reportObjects()[0].(*api.PolicyReport)
	r.Results[0].Properties[propertyProcess] = "changed"
	r.Scope.Name = "changed"
	r2 := s.reportObjects()[0].(*api.PolicyReport)
	if r2.Results[0].Properties[propertyProcess] != processBackground || r2.Scope.Name != "p" {
		t.Errorf("store changed through a report: %+v", r2.Results[0])
	}
}

func TestStoreConcurrent(t *testing.T) {
	f := newStoreFixture(t)
	s := NewStore(Options{Clock: fixedClock})
	results := make([][]engine.PolicyResult, 20)
	for i := range results {
		results[i] = validate(t, f.set, pod("default", fmt.Sprintf("p%d", i), fmt.Sprintf("u%d", i), "nginx", nil), true)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range results {
				uid := fmt.Sprintf("u%d", i)
				_ = s.Update(uid, results[i], w%2 == 0)
				_ = s.reportObjects()
				if w == 7 && i%5 == 0 {
					s.Delete(uid)
				}
			}
		}(w)
	}
	wg.Wait()
	if len(s.UIDs()) > len(results) {
		t.Errorf("%d resources", len(s.UIDs()))
	}
}
