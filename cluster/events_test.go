package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// eventPolicies are the policies of the event tests: an Enforce and an
// Audit ClusterPolicy, an Audit Policy, a ValidatingPolicy in Deny, a
// mutating ClusterPolicy.
const eventPolicies = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team, uid: cpol-1}
spec:
  rules:
  - name: check-team
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Enforce
      message: label team is required
      pattern: {metadata: {labels: {team: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: audit-owner, uid: cpol-2}
spec:
  rules:
  - name: check-owner
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Audit
      message: label owner is required
      pattern: {metadata: {labels: {owner: "?*"}}}
---
apiVersion: kyverno.io/v1
kind: Policy
metadata: {name: ns-app, namespace: default, uid: pol-1}
spec:
  rules:
  - name: check-app
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Audit
      message: label app is required
      pattern: {metadata: {labels: {app: "?*"}}}
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: vp-env, uid: vpol-1}
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "has(object.metadata.labels) && 'env' in object.metadata.labels"
    message: env label required
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: add-tier, uid: cpol-3}
spec:
  rules:
  - name: add
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {tier: web}}}
---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: mp-team, uid: mpol-1}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"
`

// eventSet compiles eventPolicies.
func eventSet(t *testing.T) *engine.PolicySet {
	t.Helper()
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodePolicies(t, eventPolicies)...)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func eventPod(name string, labels map[string]any) map[string]any {
	md := map[string]any{"namespace": "default", "uid": "pod-uid", "labels": labels}
	if name != "" {
		md["name"] = name
	} else {
		md["generateName"] = "p-"
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md,
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}}
}

// describeEvent is an Event in one line: namespace, type, reason,
// action, reporting controller and instance, regarding, related, note.
func describeEvent(ev *eventsv1.Event) string {
	ref := func(r *corev1.ObjectReference) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%s %s %s/%s uid=%s", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
	}
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s|%s|%s", ev.Namespace, ev.Type, ev.Reason, ev.Action, ev.ReportingController,
		strings.TrimSuffix(ev.ReportingInstance, "-host"), ref(&ev.Regarding), ref(ev.Related), ev.Note)
}

// testRecorder is a recorder on a fake clientset whose events are made
// (not written) by the tests.
func testRecorder(t *testing.T, opts EventOptions, cfg *Config) (*eventRecorder, *kubefake.Clientset) {
	kube := kubefake.NewClientset()
	r := newEventRecorder(kube.EventsV1(), opts, func() *Config { return cfg }, testLogger(t))
	r.hostname = "host"
	return r, kube
}

// made returns the Events the recorder queued, described.
func made(r *eventRecorder, infos []eventInfo) []string {
	var out []string
	for i := range infos {
		if infos[i].regarding.Name == "" || !r.wanted(&infos[i]) {
			continue
		}
		out = append(out, describeEvent(r.event(&infos[i], time.Now())))
	}
	slices.Sort(out)
	return out
}

// The events of admission results: upstream's reasons, types, actions,
// notes, regarding and related objects (pkg/event/events.go,
// pkg/webhooks/utils/event.go).
func TestAdmissionEvents(t *testing.T) {
	set := eventSet(t)
	all := EventOptions{Omit: []string{}}
	success := &Config{GenerateSuccessEvents: true}
	tests := []struct {
		name    string
		labels  map[string]any
		podName string
		mutate  bool
		blocked bool
		opts    EventOptions
		cfg     *Config
		want    []string
	}{{
		name:   "denied: the Enforce and Deny policies' failures, blocked; no Audit ClusterPolicy, no resource event",
		labels: map[string]any{"owner": "me"}, podName: "p", blocked: true,
		want: []string{
			"default|Warning|PolicyViolation|Resource Blocked|kyverno-admission|kyverno-admission|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 Pod default/p uid=pod-uid|" +
				"Pod default/p: [check-team] fail (blocked); validation error: label team is required. rule check-team failed at path /metadata/labels/team/",
			"default|Warning|PolicyViolation|Resource Blocked|kyverno-admission|kyverno-admission|policies.kyverno.io/v1 ValidatingPolicy /vp-env uid=vpol-1|v1 Pod default/p uid=pod-uid|" +
				"Pod default/p: fail (blocked); env label required",
		},
	}, {
		name:   "admitted: Audit failures on the policy and on the resource; passes omitted",
		labels: map[string]any{"team": "a", "env": "prod"}, podName: "p",
		want: []string{
			"default|Warning|PolicyViolation|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 ClusterPolicy /audit-owner uid=cpol-2|v1 Pod default/p uid=pod-uid|" +
				"Pod default/p: [check-owner] fail; validation error: label owner is required. rule check-owner failed at path /metadata/labels/owner/",
			"default|Warning|PolicyViolation|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 Policy default/ns-app uid=pol-1|v1 Pod default/p uid=pod-uid|" +
				"Pod default/p: [check-app] fail; validation error: label app is required. rule check-app failed at path /metadata/labels/app/",
			"default|Warning|PolicyViolation|Resource Passed|kyverno-admission|kyverno-admission|v1 Pod default/p uid=pod-uid|-|" +
				"policy audit-owner/check-owner fail: validation error: label owner is required. rule check-owner failed at path /metadata/labels/owner/",
			"default|Warning|PolicyViolation|Resource Passed|kyverno-admission|kyverno-admission|v1 Pod default/p uid=pod-uid|-|" +
				"policy ns-app/check-app fail: validation error: label app is required. rule check-app failed at path /metadata/labels/app/",
		},
	}, {
		name:   "admitted, success events on: PolicyApplied pass on the policies",
		labels: map[string]any{"team": "a", "env": "prod", "owner": "me", "app": "x"}, podName: "p", opts: all, cfg: success,
		want: []string{
			"default|Normal|PolicyApplied|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 ClusterPolicy /audit-owner uid=cpol-2|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
			"default|Normal|PolicyApplied|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
			"default|Normal|PolicyApplied|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 Policy default/ns-app uid=pol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
			"default|Normal|PolicyApplied|Resource Passed|kyverno-admission|kyverno-admission|policies.kyverno.io/v1 ValidatingPolicy /vp-env uid=vpol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
		},
	}, {
		name:   "success events on but not in generateSuccessEvents: none",
		labels: map[string]any{"team": "a", "env": "prod", "owner": "me", "app": "x"}, podName: "p", opts: all,
	}, {
		name:   "success events limited to Resource Mutated by successEventActions",
		labels: map[string]any{"team": "a", "env": "prod", "owner": "me", "app": "x"}, podName: "p", opts: all,
		cfg: &Config{GenerateSuccessEvents: true, SuccessEventActions: []string{EventActionMutated}},
	}, {
		name:   "mutation: PolicyApplied, mutated",
		labels: map[string]any{"team": "a"}, podName: "p", mutate: true, opts: all, cfg: success,
		want: []string{
			"default|Normal|PolicyApplied|Resource Mutated|kyverno-admission|kyverno-admission|kyverno.io/v1 ClusterPolicy /add-tier uid=cpol-3|v1 Pod default/p uid=pod-uid|Pod default/p is successfully mutated",
		},
	}, {
		name:   "PolicyViolation omitted",
		labels: map[string]any{"team": "a", "env": "prod"}, podName: "p", opts: EventOptions{Omit: []string{EventReasonPolicyViolation}},
	}, {
		name: "no name yet (generateName): none", labels: map[string]any{}, blocked: true, opts: all, cfg: success,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == nil {
				cfg = &Config{}
			}
			r, _ := testRecorder(t, tt.opts, cfg)
			req := &engine.Request{Operation: api.Create, Object: eventPod(tt.podName, tt.labels)}
			call := set.Validate
			if tt.mutate {
				call = set.Mutate
			}
			resp, err := call(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.mutate && resp.Blocked() != tt.blocked {
				t.Fatalf("blocked %v, want %v", resp.Blocked(), tt.blocked)
			}
			got := made(r, r.admissionEvents(resp, tt.blocked, nil))
			// never false with events (true, too, when only
			// successEventActions leaves them out)
			if has := r.hasAdmissionEvents(resp, tt.blocked); !has && len(tt.want) > 0 || has && len(tt.want) == 0 && cfg.SuccessEventActions == nil {
				t.Errorf("hasAdmissionEvents %v with %d events", has, len(tt.want))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// policyOf returns the compiled policy of a name in set.
func policyOf(t *testing.T, set *engine.PolicySet, name string) *engine.Policy {
	t.Helper()
	for _, p := range set.Policies() {
		if p.Source().GetName() == name {
			return p
		}
	}
	t.Fatalf("no policy %s", name)
	return nil
}

// Rules skipped by PolicyExceptions: an event on each exception and one
// on the policy, PolicySkipped (upstream's NewPolicyExceptionEvents);
// none when denied, none for the CEL kinds.
func TestExceptionEvents(t *testing.T) {
	set := eventSet(t)
	r, _ := testRecorder(t, EventOptions{Omit: []string{}}, &Config{})
	skipped := func(policy, rule string) engine.PolicyResult {
		return engine.PolicyResult{Policy: policyOf(t, set, policy), Resource: eventPod("p", nil), FailureAction: api.Audit,
			Rules: []engine.RuleResult{{Name: rule, Type: engine.Validation, Status: engine.StatusSkip,
				Message: "rule skipped due to policy exceptions", Exceptions: []string{"team-a/allow-p", "team-b/allow-all"}}}}
	}
	resp := &engine.Response{Policies: []engine.PolicyResult{skipped("ns-app", "check-app"), skipped("vp-env", "")}}
	uid := func(key string) types.UID { return types.UID("uid-" + key[:6]) }
	got := made(r, r.admissionEvents(resp, false, uid))
	want := []string{
		"default|Normal|PolicySkipped|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v1 Policy default/ns-app uid=pol-1|v1 Pod default/p uid=pod-uid|" +
			"resource Pod/default/p was skipped from rule check-app due to policy exceptions team-a/allow-p, team-b/allow-all",
		"team-a|Normal|PolicySkipped|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v2 PolicyException team-a/allow-p uid=uid-team-a|v1 Pod default/p uid=pod-uid|" +
			"resource Pod/default/p was skipped from policy rule default/ns-app/check-app",
		"team-b|Normal|PolicySkipped|Resource Passed|kyverno-admission|kyverno-admission|kyverno.io/v2 PolicyException team-b/allow-all uid=uid-team-b|v1 Pod default/p uid=pod-uid|" +
			"resource Pod/default/p was skipped from policy rule default/ns-app/check-app",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := made(r, r.admissionEvents(resp, true, uid)); len(got) != 0 {
		t.Errorf("denied: %v", got)
	}
	// a ClusterPolicy's exception: "policy rule NAME/RULE"
	cp := skipped("audit-owner", "check-owner")
	cp.Rules[0].Exceptions = cp.Rules[0].Exceptions[:1]
	got = made(r, r.admissionEvents(&engine.Response{Policies: []engine.PolicyResult{cp}}, false, nil))
	if len(got) != 2 || !strings.HasSuffix(got[1], "|resource Pod/default/p was skipped from policy rule audit-owner/check-owner") {
		t.Errorf("events of a ClusterPolicy's exception:\n%s", strings.Join(got, "\n"))
	}
}

// Background results: a scan's (a PolicyViolation on the resource and on
// the policy per rule that neither passed nor skipped), a generate
// UpdateRequest's and a mutate-existing one's.
func TestBackgroundEvents(t *testing.T) {
	set := eventSet(t)
	r, _ := testRecorder(t, EventOptions{Omit: []string{}}, &Config{GenerateSuccessEvents: true})
	resp, err := set.Validate(t.Context(), &engine.Request{Object: eventPod("p", map[string]any{"team": "a", "env": "e", "app": "x"}), Background: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range resp.Policies {
		got = append(got, made(r, r.scanEvents(&resp.Policies[i], nil))...)
	}
	slices.Sort(got)
	want := []string{
		"default|Normal|PolicyApplied|Resource Passed|kyverno-scan|kyverno-scan|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
		"default|Normal|PolicyApplied|Resource Passed|kyverno-scan|kyverno-scan|kyverno.io/v1 Policy default/ns-app uid=pol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
		"default|Normal|PolicyApplied|Resource Passed|kyverno-scan|kyverno-scan|policies.kyverno.io/v1 ValidatingPolicy /vp-env uid=vpol-1|v1 Pod default/p uid=pod-uid|Pod default/p: pass",
		"default|Warning|PolicyViolation|Resource Passed|kyverno-scan|kyverno-scan|kyverno.io/v1 ClusterPolicy /audit-owner uid=cpol-2|v1 Pod default/p uid=pod-uid|" +
			"Pod default/p: [check-owner] fail; validation error: label owner is required. rule check-owner failed at path /metadata/labels/owner/",
		"default|Warning|PolicyViolation|Resource Passed|kyverno-scan|kyverno-scan|v1 Pod default/p uid=pod-uid|-|" +
			"policy audit-owner/check-owner fail: validation error: label owner is required. rule check-owner failed at path /metadata/labels/owner/",
	}
	if !slices.Equal(got, want) {
		t.Errorf("scan events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	pol := policyOf(t, set, "require-team")
	trigger := eventPod("p", nil)
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "team-cm", "namespace": "default"}}
	gen := &api.UpdateRequest{Spec: api.UpdateRequestSpec{Type: api.URGenerate, Policy: "require-team"}}
	results := []engine.PolicyResult{{Policy: pol, Resource: trigger, Rules: []engine.RuleResult{
		{Name: "gen-cm", Type: engine.Generation, Status: engine.StatusPass, GeneratedResources: []map[string]any{cm}},
		{Name: "gen-bad", Type: engine.Generation, Status: engine.StatusError, Message: "failed to create ConfigMap default/x: forbidden"},
	}}}
	got = made(r, updateRequestEvents(gen, results))
	want = []string{
		"default|Normal|PolicyApplied|None|kyverno-generate|kyverno-generate|v1 ConfigMap default/team-cm uid=|-|Created ConfigMap team-cm as a result of applying policy require-team/gen-cm",
		"default|Normal|PolicyApplied|Resource Generated|kyverno-generate|kyverno-generate|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 ConfigMap default/team-cm uid=|resource generated",
		"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 Pod default/p uid=pod-uid|" +
			"policy require-team/gen-bad error: failed to create ConfigMap default/x: forbidden",
	}
	if !slices.Equal(got, want) {
		t.Errorf("generate events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	target := eventPod("target", nil)
	mut := &api.UpdateRequest{Spec: api.UpdateRequestSpec{Type: api.URMutate, Policy: "add-tier"}}
	results = []engine.PolicyResult{{Policy: policyOf(t, set, "add-tier"), Resource: trigger, Rules: []engine.RuleResult{
		{Name: "add", Type: engine.Mutation, Status: engine.StatusPass, PatchedTargets: []map[string]any{target}},
		{Name: "add-2", Type: engine.Mutation, Status: engine.StatusError, Message: "conflict"},
	}}}
	got = made(r, updateRequestEvents(mut, results))
	want = []string{
		"default|Normal|PolicyApplied|Resource Mutated|kyverno-mutate|kyverno-mutate|kyverno.io/v1 ClusterPolicy /add-tier uid=cpol-3|v1 Pod default/target uid=pod-uid|resource mutated",
		"default|Warning|PolicyError|None|kyverno-mutate|kyverno-mutate|kyverno.io/v1 ClusterPolicy /add-tier uid=cpol-3|v1 Pod default/p uid=pod-uid|policy add-tier/add-2 error: conflict",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mutate-existing events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// a MutatingPolicy's, as upstream's background processor: the
	// admission events of each target
	results = []engine.PolicyResult{{Policy: policyOf(t, set, "mp-team"), Resource: trigger, Rules: []engine.RuleResult{
		{Type: engine.Mutation, Status: engine.StatusPass, PatchedTargets: []map[string]any{target}},
		{Type: engine.Mutation, Status: engine.StatusError, Message: "target not found"},
	}}}
	mut.Spec.Policy = "mp-team"
	got = made(r, updateRequestEvents(mut, results))
	want = []string{
		"default|Normal|PolicyApplied|Resource Mutated|kyverno-mutate|kyverno-mutate|policies.kyverno.io/v1 MutatingPolicy /mp-team uid=mpol-1|v1 Pod default/target uid=pod-uid|Pod default/target is successfully mutated",
		"default|Warning|PolicyViolation|Resource Passed|kyverno-mutate|kyverno-mutate|policies.kyverno.io/v1 MutatingPolicy /mp-team uid=mpol-1|v1 Pod default/p uid=pod-uid|Pod default/p: error; target not found",
		"default|Warning|PolicyViolation|Resource Passed|kyverno-mutate|kyverno-mutate|v1 Pod default/p uid=pod-uid|-|policy mp-team/ error: target not found",
	}
	if !slices.Equal(got, want) {
		t.Errorf("MutatingPolicy events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The events of cleanup and deleting policies (upstream's
// NewCleanupPolicyEvent, NewDeletingPolicyEvent).
func TestCleanupEvents(t *testing.T) {
	// the default omitted reasons do not apply to them, as upstream's
	// cleanup controller takes no omitEvents
	r, _ := testRecorder(t, EventOptions{}, &Config{GenerateSuccessEvents: true})
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	del, err := eng.CompilePolicy(mustPolicy(t, completedJobsPolicy()))
	if err != nil {
		t.Fatal(err)
	}
	cln, err := eng.CompilePolicy(mustPolicy(t, tmpJobsCleanup()))
	if err != nil {
		t.Fatal(err)
	}
	j := job("ci", "done", true, nil)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "old"}}}
	got := made(r, []eventInfo{cleanupEvent(del, j, nil), cleanupEvent(del, ns, errors.New("forbidden")), cleanupEvent(cln, j, nil)})
	want := []string{
		"ci|Normal|PolicyApplied|Resource Cleaned Up|kyverno-cleanup|kyverno-cleanup|kyverno.io/v2 CleanupPolicy ci/tmp-jobs uid=|batch/v1 Job ci/done uid=|successfully cleaned up the target resource Job/ci/done",
		"default|Normal|PolicyApplied|Resource Cleaned Up|kyverno-cleanup|kyverno-cleanup|policies.kyverno.io/v1 DeletingPolicy /completed-jobs uid=|batch/v1 Job ci/done uid=|successfully deleted the target resource Job/ci/done",
		"default|Warning|PolicyError|None|kyverno-cleanup|kyverno-cleanup|policies.kyverno.io/v1 DeletingPolicy /completed-jobs uid=|v1 Namespace /old uid=|failed to delete the target resource Namespace//old: forbidden",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// the successes need generateSuccessEvents, as upstream's
	r, _ = testRecorder(t, EventOptions{}, &Config{})
	if got := made(r, []eventInfo{cleanupEvent(del, j, nil), cleanupEvent(cln, j, errors.New("forbidden"))}); len(got) != 1 || !strings.Contains(got[0], "|PolicyError|") {
		t.Errorf("without generateSuccessEvents: %q", got)
	}
}

func mustPolicy(t *testing.T, u *unstructured.Unstructured) api.PolicyObject {
	t.Helper()
	p, err := api.DecodePolicy(api.Document{Object: u.Object})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The omitted reasons, generateSuccessEvents and successEventActions, the
// objects without a name, the note's limit and the names of the Events.
func TestEventRecorderFilters(t *testing.T) {
	viol := eventInfo{regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"}, reason: EventReasonPolicyViolation, action: EventActionPassed, source: EventSourceScan}
	applied := eventInfo{regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"}, reason: EventReasonPolicyApplied, action: EventActionPassed, source: EventSourceScan}
	skipped := eventInfo{regarding: corev1.ObjectReference{Kind: "Pod", Name: "p"}, reason: EventReasonPolicySkipped, action: EventActionPassed, source: EventSourceScan}
	tests := []struct {
		name string
		omit []string
		cfg  Config
		want []string // reasons kept
	}{
		{"default: PolicyApplied and PolicySkipped omitted", nil, Config{GenerateSuccessEvents: true}, []string{EventReasonPolicyViolation}},
		{"none omitted, no generateSuccessEvents", []string{}, Config{}, []string{EventReasonPolicyViolation, EventReasonPolicySkipped}},
		{"none omitted, generateSuccessEvents", []string{}, Config{GenerateSuccessEvents: true},
			[]string{EventReasonPolicyViolation, EventReasonPolicyApplied, EventReasonPolicySkipped}},
		{"successEventActions without the action", []string{}, Config{GenerateSuccessEvents: true, SuccessEventActions: []string{EventActionMutated}},
			[]string{EventReasonPolicyViolation, EventReasonPolicySkipped}},
		{"PolicyViolation omitted", []string{" PolicyViolation"}, Config{GenerateSuccessEvents: true},
			[]string{EventReasonPolicyApplied, EventReasonPolicySkipped}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := testRecorder(t, EventOptions{Omit: tt.omit}, &tt.cfg)
			var got []string
			for _, info := range []eventInfo{viol, applied, skipped} {
				if r.wanted(&info) {
					got = append(got, info.reason)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("kept %v, want %v", got, tt.want)
			}
		})
	}
	r, _ := testRecorder(t, EventOptions{}, &Config{})
	long := viol
	long.note = strings.Repeat("x", 2000)
	long.regarding = corev1.ObjectReference{Kind: "ClusterPolicy", Name: "Weird:Name_"}
	ev := r.event(&long, time.Now())
	if len(ev.Note) != maxEventNote || !strings.HasSuffix(ev.Note, "...") {
		t.Errorf("note of %d bytes ending %q", len(ev.Note), ev.Note[len(ev.Note)-5:])
	}
	if !strings.HasPrefix(ev.Name, "weird-name-z.") || ev.Namespace != "default" {
		t.Errorf("event %s/%s", ev.Namespace, ev.Name)
	}
	if ev2 := r.event(&long, ev.EventTime.Time); ev2.Name == ev.Name {
		t.Errorf("two events of one object named %s", ev.Name)
	}
}

// The recorder never waits: a full queue drops events (and says so), the
// writers retry and give up; what is written is what was made.
func TestEventRecorderQueue(t *testing.T) {
	var logs bytes.Buffer
	kube := kubefake.NewClientset()
	r := newEventRecorder(kube.EventsV1(), EventOptions{MaxQueued: 2}, func() *Config { return nil }, slog.New(slog.NewTextHandler(&logs, nil)))
	info := eventInfo{regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p"}, reason: EventReasonPolicyViolation,
		action: EventActionPassed, note: "n", source: EventSourceScan}
	r.add(info, info, info, info)
	if r.queue.Len() != 2 || r.dropped.Load() != 2 || !strings.Contains(logs.String(), "queue is full") {
		t.Errorf("queued %d, dropped %d, logs %q", r.queue.Len(), r.dropped.Load(), logs.String())
	}
	ctx := t.Context()
	for r.queue.Len() > 0 {
		r.processNext(ctx)
	}
	evs, err := kube.EventsV1().Events("ns").List(ctx, metavOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 2 {
		t.Fatalf("%d events written", len(evs.Items))
	}
	if got := describeEvent(&evs.Items[0]); !strings.HasPrefix(got, "ns|Warning|PolicyViolation|Resource Passed|kyverno-scan|kyverno-scan-") ||
		!strings.HasSuffix(got, "|v1 Pod ns/p uid=|-|n") {
		t.Errorf("event %s", got)
	}
}

func TestEventName(t *testing.T) {
	for in, want := range map[string]string{
		"require-team": "require-team", "Upper.Case": "upper.case", "-x-": "a-x-z", "a:b/c": "a-b-c", "": "",
	} {
		if got := eventName(in); got != want {
			t.Errorf("eventName(%q) = %q, want %q", in, got, want)
		}
	}
}

// Admission never waits for the events API: with writes that hang, then
// fail, RecordAdmissionEvents returns at once, the queue stays within
// MaxQueued (the rest dropped), and the failed writes are retried then
// given up.
func TestAdmissionEventsDoNotWaitForTheAPI(t *testing.T) {
	release := make(chan struct{})
	var writes atomic.Int64
	var once sync.Once
	var mu sync.Mutex
	attempts := map[string]int{} // by event name
	h, _ := fakeHostWith(t, Options{Events: EventOptions{MaxQueued: 10}}, nil, nil, func(h *Host) {
		h.kube.(*kubefake.Clientset).PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
			writes.Add(1)
			mu.Lock()
			attempts[a.(k8stesting.CreateAction).GetObject().(*eventsv1.Event).Name]++
			mu.Unlock()
			<-release
			return true, nil, errors.New("the events API is down")
		})
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the host's shutdown
	set := eventSet(t)
	resp, err := set.Validate(t.Context(), &engine.Request{Operation: api.Create, Object: eventPod("p", nil)})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		h.RecordAdmissionEvents(resp, true) // two events each
	}
	// the fake clientset serializes its reactions: one write hangs, the
	// other writers wait for it
	eventually(t, "a write hanging", func() bool { return writes.Load() == 1 })
	if n := h.events.queue.Len(); n > 10 {
		t.Errorf("%d events queued, MaxQueued 10", n)
	}
	// the admissions that found the queue full: their events not even
	// built
	if h.events.dropped.Load() < 90 {
		t.Errorf("%d drops", h.events.dropped.Load())
	}
	once.Do(func() { close(release) })
	// every event taken or queued is tried 1+eventRetries times, then
	// dropped
	eventually(t, "the retries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range attempts {
			if n != 1+eventRetries {
				return false
			}
		}
		return len(attempts) >= 10 && h.events.queue.Len() == 0
	})
	if evs := listEvents(t, h); len(evs) != 0 {
		t.Errorf("%d events written", len(evs))
	}
}

// A scan's events are recorded once per resource version, policy
// version and result: the periodic rescans do not repeat them.
func TestScanEventsOncePerResult(t *testing.T) {
	set := eventSet(t)
	r, _ := testRecorder(t, EventOptions{}, &Config{})
	rep := &reporter{h: &Host{events: r}}
	scan := func(labels map[string]any) []engine.PolicyResult {
		resp, err := set.Validate(t.Context(), &engine.Request{Object: eventPod("p", labels), Background: true})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Policies
	}
	failing := scan(map[string]any{"team": "a"})
	steps := []struct {
		what    string
		rv      string
		results []engine.PolicyResult
		queued  int // events queued after the step
	}{
		{"first scan: 2 events per failed rule (audit-owner, ns-app, vp-env)", "1", failing, 6},
		{"rescan, same result", "1", failing, 6},
		{"the resource changed: recorded again, as upstream", "2", failing, 12},
		{"passes (success events off): nothing", "3", scan(map[string]any{"team": "a", "owner": "o", "app": "a", "env": "e"}), 12},
		{"fails again", "3", failing, 18},
	}
	for _, s := range steps {
		rep.recordScan("uid-1", s.rv, s.results)
		if n := r.queue.Len(); n != s.queued {
			t.Errorf("%s: %d events queued, want %d", s.what, n, s.queued)
		}
	}
	rep.forgetEvents("uid-1")
	if len(rep.eventsSeen) != 0 {
		t.Errorf("forgotten: %v", rep.eventsSeen)
	}
}

// An UpdateRequest that could not be written (Failed) is a PolicyError on
// its policy, as upstream's webhooks record a failure of their
// UpdateRequest generator: NewFailedEvent for a generate request,
// NewBackgroundFailedEvent for a mutate-existing one and for the request
// of a changed downstream resource; the policy is the one of the key whose
// kind makes requests of the type.
func TestQueueFailedEvents(t *testing.T) {
	set := eventSet(t)
	r, _ := testRecorder(t, EventOptions{}, &Config{})
	trigger := eventPod("p", nil)
	failed := func(typ api.UpdateRequestType, policy string) *api.UpdateRequest {
		ur := &api.UpdateRequest{Spec: api.UpdateRequestSpec{Type: typ, Policy: policy}}
		ur.Status.State, ur.Status.Message = api.URFailed, "cluster: writing UpdateRequest: forbidden"
		return ur
	}
	queued := failed(api.URGenerate, "require-team")
	queued.Status = api.UpdateRequestStatus{State: api.URPending}
	tests := []struct {
		name       string
		urs        []*api.UpdateRequest
		downstream bool
		opts       EventOptions
		want       []string
	}{{
		name: "generate: on the policy, with its key",
		urs:  []*api.UpdateRequest{failed(api.URGenerate, "require-team"), failed(api.URGenerate, "default/ns-app"), queued},
		want: []string{
			"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|-|" +
				"policy require-team error: cluster: writing UpdateRequest: forbidden",
			"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|kyverno.io/v1 Policy default/ns-app uid=pol-1|-|" +
				"policy default/ns-app error: cluster: writing UpdateRequest: forbidden",
		},
	}, {
		name: "mutate-existing: related to the trigger",
		urs:  []*api.UpdateRequest{failed(api.URMutate, "add-tier"), failed(api.URMutate, "mp-team")},
		want: []string{
			"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|kyverno.io/v1 ClusterPolicy /add-tier uid=cpol-3|v1 Pod default/p uid=pod-uid|" +
				"policy add-tier error: failed to create update request: cluster: writing UpdateRequest: forbidden",
			"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|policies.kyverno.io/v1 MutatingPolicy /mp-team uid=mpol-1|v1 Pod default/p uid=pod-uid|" +
				"policy mp-team error: failed to create update request: cluster: writing UpdateRequest: forbidden",
		},
	}, {
		name: "downstream change: related to the changed resource", downstream: true,
		urs: []*api.UpdateRequest{failed(api.URGenerate, "require-team")},
		want: []string{
			"default|Warning|PolicyError|None|kyverno-generate|kyverno-generate|kyverno.io/v1 ClusterPolicy /require-team uid=cpol-1|v1 Pod default/p uid=pod-uid|" +
				"policy require-team error: cluster: writing UpdateRequest: forbidden",
		},
	}, {
		name: "no policy of the key and type: none",
		urs:  []*api.UpdateRequest{failed(api.URCELGenerate, "require-team"), failed(api.URGenerate, "mp-team"), failed(api.URGenerate, "gone")},
	}, {
		name: "PolicyError omitted", opts: EventOptions{Omit: []string{EventReasonPolicyError}},
		urs: []*api.UpdateRequest{failed(api.URGenerate, "require-team")},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.omit = map[string]bool{}
			for _, o := range tt.opts.Omit {
				r.omit[o] = true
			}
			got := made(r, queueFailedEvents(tt.urs, set.Policies(), trigger, tt.downstream))
			if !slices.Equal(got, tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
