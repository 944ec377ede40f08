package generate_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/internal/genlabel"
)

const netpolPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: default-deny
spec:
  rules:
  - name: deny-all-traffic
    match:
      any:
      - resources:
          kinds: [Namespace]
    generate:
      kind: NetworkPolicy
      apiVersion: networking.k8s.io/v1
      name: deny-all-traffic
      namespace: "{{request.object.metadata.name}}"
      data:
        spec:
          podSelector: {}
          policyTypes: [Ingress, Egress]
`

func TestProcessStates(t *testing.T) {
	denied := errors.New(`configmaps is forbidden: User "system:serviceaccount:kyverno:kyverno-background-controller" cannot create resource "configmaps"`)
	tests := []struct {
		name      string
		deny      bool
		trigger   bool // the trigger exists in the cluster
		ur        func(h *harness) *api.UpdateRequest
		want      api.UpdateRequestState
		message   string
		retries   int
		collected bool
	}{
		{
			name: "generated: completed", trigger: true, want: api.URCompleted,
			ur: func(h *harness) *api.UpdateRequest { return urFor(h, "zk-kafka-address", "k-kafka-address") },
		},
		{
			name: "write refused: failed after 3 retries, garbage collected", deny: true, trigger: true,
			want: api.URFailed, retries: 3, collected: true,
			message: "rule k-kafka-address failed: failed to create ConfigMap team-a/zk-kafka-address: " + denied.Error(),
			ur:      func(h *harness) *api.UpdateRequest { return urFor(h, "zk-kafka-address", "k-kafka-address") },
		},
		{
			name: "trigger missing: failed", want: api.URFailed, retries: 3, collected: true,
			message: "rule k-kafka-address failed: failed to fetch trigger resource: Namespace /team-a: not found",
			ur:      func(h *harness) *api.UpdateRequest { return urFor(h, "zk-kafka-address", "k-kafka-address") },
		},
		{
			name: "rule no longer applies: skip", trigger: true, want: api.URSkip, message: "policy does not apply to resource",
			ur: func(h *harness) *api.UpdateRequest {
				ur := urFor(h, "zk-kafka-address", "k-kafka-address")
				ur.Spec.RuleContext[0].Trigger.Name = "team-b"
				h.cluster.Add(namespace("team-b", map[string]any{"env": "dev"}))
				return ur
			},
		},
		{
			name: "unknown rule: skip", trigger: true, want: api.URSkip, message: "policy does not apply to resource",
			ur: func(h *harness) *api.UpdateRequest { return urFor(h, "zk-kafka-address", "nope") },
		},
		{
			name: "deleted policy: completed, nothing deleted", trigger: true, want: api.URCompleted,
			ur: func(h *harness) *api.UpdateRequest { return urFor(h, "gone", "k-kafka-address") },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, dataPolicy(true, false, "a", true))
			if tt.trigger {
				h.cluster.Add(namespace("team-a", map[string]any{"env": "prod"}))
			}
			var collected []*api.UpdateRequest
			var observed []engine.PolicyResult
			h.ctrl = generate.NewController(h.set, h.cluster,
				generate.WithGarbageCollector(func(ur *api.UpdateRequest) { collected = append(collected, ur) }),
				generate.WithObserver(func(_ *api.UpdateRequest, prs []engine.PolicyResult) { observed = prs }))
			if tt.deny {
				h.cluster.Deny = func(verb string, obj map[string]any) error {
					if obj["kind"] == "ConfigMap" {
						return denied
					}
					return nil
				}
			}
			ur := tt.ur(h)
			err := h.ctrl.Process(h.ctx, ur)
			if got := ur.Status.State; got != tt.want {
				t.Fatalf("state %s (%s), want %s", got, ur.Status.Message, tt.want)
			}
			if ur.Status.Message != tt.message {
				t.Errorf("message\n got %q\nwant %q", ur.Status.Message, tt.message)
			}
			if ur.Status.RetryCount != tt.retries {
				t.Errorf("retries %d, want %d", ur.Status.RetryCount, tt.retries)
			}
			if (len(collected) == 1) != tt.collected {
				t.Errorf("garbage collected %d, want %v", len(collected), tt.collected)
			}
			if tt.want == api.URFailed {
				if !errors.Is(err, generate.ErrRetriesExhausted) {
					t.Errorf("error %v, want ErrRetriesExhausted", err)
				}
			} else if err != nil {
				t.Errorf("unexpected error %v", err)
			}
			if tt.deny {
				rr := ruleResult(observed, "k-kafka-address")
				if rr == nil || rr.Status != engine.StatusError || !strings.Contains(rr.Message, "forbidden") {
					t.Errorf("rule result %+v, want an error with the client's message", rr)
				}
			}
		})
	}
}

func urFor(h *harness, policy, rule string) *api.UpdateRequest {
	return &api.UpdateRequest{Spec: api.UpdateRequestSpec{
		Type: api.URGenerate, Policy: policy,
		RuleContext: []api.RuleContext{{Rule: rule, Trigger: api.ResourceSpec{APIVersion: "v1", Kind: "Namespace", Name: "team-a"}}},
	}}
}

func ruleResult(prs []engine.PolicyResult, name string) *engine.RuleResult {
	for i := range prs {
		for j := range prs[i].Rules {
			if prs[i].Rules[j].Name == name {
				return &prs[i].Rules[j]
			}
		}
	}
	return nil
}

func TestProcessRetrySucceeds(t *testing.T) {
	h := newHarness(t, netpolPolicy, namespace("team-a", nil))
	calls := 0
	h.cluster.Deny = func(string, map[string]any) error {
		calls++
		if calls < 3 {
			return errors.New("etcdserver: request timed out")
		}
		return nil
	}
	h.ctrl = generate.NewController(h.set, h.cluster, generate.WithRetryDelay(time.Millisecond))
	ur := urFor(h, "default-deny", "deny-all-traffic")
	if err := h.ctrl.Process(h.ctx, ur); err != nil {
		t.Fatal(err)
	}
	if ur.Status.State != api.URCompleted || ur.Status.RetryCount != 2 {
		t.Fatalf("status %+v", ur.Status)
	}
	want := []api.ResourceSpec{{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy", Namespace: "team-a", Name: "deny-all-traffic"}}
	if !reflect.DeepEqual(ur.Status.GeneratedResources, want) {
		t.Errorf("generated %+v", ur.Status.GeneratedResources)
	}
}

func TestProcessHonoursContext(t *testing.T) {
	h := newHarness(t, netpolPolicy)
	h.ctrl = generate.NewController(h.set, h.cluster, generate.WithRetryDelay(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := h.ctrl.Process(ctx, urFor(h, "default-deny", "deny-all-traffic"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want deadline exceeded", err)
	}
}

func TestRun(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, netpolPolicy)
	var mu sync.Mutex
	done := make(chan string, 10)
	h.ctrl = generate.NewController(h.set, h.cluster, generate.WithWorkers(3),
		generate.WithObserver(func(ur *api.UpdateRequest, _ []engine.PolicyResult) {
			mu.Lock()
			defer mu.Unlock()
			done <- ur.Spec.RuleContext[0].Trigger.Name + ":" + string(ur.Status.State)
		}))
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- h.ctrl.Run(ctx, h.queue) }()
	for _, name := range []string{"a", "b", "c"} {
		ns := namespace(name, nil)
		h.cluster.Add(ns)
		if _, err := h.set.Generate(ctx, &engine.Request{Operation: api.Create, Object: ns}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for len(got) < 3 {
		select {
		case s := <-done:
			got[s] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("processed %v", got)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if !got[name+":Completed"] {
			t.Errorf("%s not completed: %v", name, got)
		}
		if h.get("networking.k8s.io/v1", "NetworkPolicy", name, "deny-all-traffic") == nil {
			t.Errorf("no NetworkPolicy in %s", name)
		}
	}
	cancel()
	if err := <-runErr; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
}

func TestRunQueueClosed(t *testing.T) {
	h := newHarness(t, netpolPolicy)
	h.queue.Close()
	if err := h.ctrl.Run(context.Background(), h.queue); !errors.Is(err, generate.ErrQueueClosed) {
		t.Fatalf("Run returned %v", err)
	}
	if err := h.queue.Enqueue(context.Background(), &api.UpdateRequest{}); !errors.Is(err, generate.ErrQueueClosed) {
		t.Fatalf("Enqueue returned %v", err)
	}
}

func TestGenerateExisting(t *testing.T) {
	policy := func(field string) string {
		return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: generate-resources
spec:
` + field + `
  rules:
  - name: generate-existing-networkpolicy
    match:
      any:
      - resources:
          kinds: [Namespace]
    exclude:
      any:
      - resources:
          namespaces: [kube-system]
    generate:
      kind: NetworkPolicy
      apiVersion: networking.k8s.io/v1
      name: default-deny
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      data:
        spec:
          podSelector: {}
`
	}
	tests := []struct {
		name  string
		field string
		want  bool
	}{
		{"generateExisting", "  generateExisting: true", true},
		{"deprecated generateExistingOnPolicyUpdate", "  generateExistingOnPolicyUpdate: true", true},
		{"not set", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "", namespace("legacy-a", nil), namespace("legacy-b", nil), namespace("kube-system", nil))
			p := h.compile(policy(tt.field))
			urs, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{"legacy-a", "legacy-b"} {
				got := h.get("networking.k8s.io/v1", "NetworkPolicy", ns, "default-deny") != nil
				if got != tt.want {
					t.Errorf("%s: generated %v, want %v", ns, got, tt.want)
				}
			}
			if h.get("networking.k8s.io/v1", "NetworkPolicy", "kube-system", "default-deny") != nil {
				t.Error("excluded namespace got a NetworkPolicy")
			}
			if tt.want && len(urs) != 2 {
				t.Errorf("%d update requests, want 2", len(urs))
			}
		})
	}
	t.Run("rule field overrides policy field", func(t *testing.T) {
		h := newHarness(t, "", namespace("legacy-a", nil))
		p := h.compile(strings.Replace(policy("  generateExisting: true"), "synchronize: true", "synchronize: true\n      generateExisting: false", 1))
		if _, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p); err != nil {
			t.Fatal(err)
		}
		if h.get("networking.k8s.io/v1", "NetworkPolicy", "legacy-a", "default-deny") != nil {
			t.Error("generated despite generateExisting: false on the rule")
		}
	})
}

const mutateExistingPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: mutate-existing-secret
spec:
  rules:
  - name: mutate-secret-on-configmap-event
    match:
      any:
      - resources:
          kinds: [ConfigMap]
          names: [dictionary-1]
          namespaces: [staging]
    mutate:
      %s
      targets:
      - apiVersion: v1
        kind: Secret
        name: secret-1
        namespace: "{{ request.object.metadata.namespace }}"
      patchStrategicMerge:
        metadata:
          labels:
            foo: "{{ request.object.data.value }}"
            copied: "{{ target.data.key }}"
`

func TestMutateExisting(t *testing.T) {
	target := secret("staging", "secret-1", map[string]any{"key": "a2V5"})
	trigger := configMap("staging", "dictionary-1", map[string]any{"value": "bar"})
	wantLabels := map[string]any{"foo": "bar", "copied": "a2V5"}
	labelsOfSecret := func(h *harness) map[string]any {
		s := h.get("v1", "Secret", "staging", "secret-1")
		md, _ := s["metadata"].(map[string]any)
		l, _ := md["labels"].(map[string]any)
		return l
	}

	t.Run("admission queues a mutate request the controller applies", func(t *testing.T) {
		h := newHarness(t, fmt.Sprintf(mutateExistingPolicy, ""), target)
		urs := h.admit(api.Create, trigger, nil)
		if len(urs) != 1 || urs[0].Spec.Type != api.URMutate || urs[0].Status.State != api.URCompleted {
			t.Fatalf("update requests %+v", urs)
		}
		if got := labelsOfSecret(h); !reflect.DeepEqual(got, wantLabels) {
			t.Errorf("labels %v, want %v", got, wantLabels)
		}
	})
	t.Run("mutateExistingOnPolicyUpdate", func(t *testing.T) {
		h := newHarness(t, "", target, trigger)
		p := h.compile(fmt.Sprintf(mutateExistingPolicy, "mutateExistingOnPolicyUpdate: true"))
		urs, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(urs) != 1 {
			t.Fatalf("%d requests", len(urs))
		}
		if got := labelsOfSecret(h); !reflect.DeepEqual(got, wantLabels) {
			t.Errorf("labels %v, want %v", got, wantLabels)
		}
	})
	t.Run("not on policy update by default", func(t *testing.T) {
		h := newHarness(t, "", target, trigger)
		p := h.compile(fmt.Sprintf(mutateExistingPolicy, ""))
		if _, err := h.ctrl.OnPolicyUpdate(h.ctx, nil, p); err != nil {
			t.Fatal(err)
		}
		if got := labelsOfSecret(h); got != nil {
			t.Errorf("labels %v, want none", got)
		}
	})
	t.Run("write refused: failed", func(t *testing.T) {
		h := newHarness(t, fmt.Sprintf(mutateExistingPolicy, ""), target)
		h.cluster.Add(trigger)
		h.cluster.Deny = func(verb string, obj map[string]any) error { return errors.New("secrets is forbidden") }
		h.ctrl = generate.NewController(h.set, h.cluster, generate.WithMaxRetries(0))
		ur := &api.UpdateRequest{Spec: api.UpdateRequestSpec{Type: api.URMutate, Policy: "mutate-existing-secret",
			RuleContext: []api.RuleContext{{Rule: "mutate-secret-on-configmap-event", Trigger: genlabel.Spec(trigger)}}}}
		if err := h.ctrl.Process(h.ctx, ur); err == nil {
			t.Fatal("no error")
		}
		if ur.Status.State != api.URFailed || ur.Status.Message != "failed to update Secret staging/secret-1: secrets is forbidden" {
			t.Errorf("status %+v", ur.Status)
		}
	})
}

func TestCloneListAndForeach(t *testing.T) {
	const policy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: fan-out
spec:
  rules:
  - name: clone-list
    match:
      any:
      - resources:
          kinds: [ConfigMap]
          names: [fan-out]
    generate:
      synchronize: true
      foreach:
      - list: request.object.data.namespaces | split(@, ',')
        namespace: "{{ element }}"
        cloneList:
          namespace: staging
          kinds: [v1/Secret, v1/ConfigMap]
          selector:
            matchLabels:
              allowedToBeCloned: "true"
`
	s1 := secret("staging", "api-token", map[string]any{"token": "dA=="})
	s1["metadata"].(map[string]any)["labels"] = map[string]any{"allowedToBeCloned": "true"}
	s2 := secret("staging", "private", map[string]any{"k": "aw=="})
	cm := configMap("staging", "settings", map[string]any{"level": "info"})
	cm["metadata"].(map[string]any)["labels"] = map[string]any{"allowedToBeCloned": "true"}
	h := newHarness(t, policy, s1, s2, cm)
	trigger := configMap("default", "fan-out", map[string]any{"namespaces": "ns-1,ns-2"})
	urs := h.admit(api.Create, trigger, nil)
	if len(urs) != 1 || urs[0].Status.State != api.URCompleted {
		t.Fatalf("requests %+v", urs)
	}
	if n := len(urs[0].Status.GeneratedResources); n != 4 {
		t.Errorf("%d generated resources, want 4", n)
	}
	for _, ns := range []string{"ns-1", "ns-2"} {
		if h.get("v1", "Secret", ns, "api-token") == nil || h.get("v1", "ConfigMap", ns, "settings") == nil {
			t.Errorf("%s: clones missing", ns)
		}
		if h.get("v1", "Secret", ns, "private") != nil {
			t.Errorf("%s: unselected secret cloned", ns)
		}
	}
	// deleting one source deletes only its clones
	old := h.get("v1", "Secret", "staging", "api-token")
	h.delete(old)
	if _, err := h.ctrl.OnSourceChange(h.ctx, old, nil); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"ns-1", "ns-2"} {
		if h.get("v1", "Secret", ns, "api-token") != nil {
			t.Errorf("%s: clone of deleted source kept", ns)
		}
		if h.get("v1", "ConfigMap", ns, "settings") == nil {
			t.Errorf("%s: clone of other source deleted", ns)
		}
	}
}

type applier struct {
	*harness
	applied []string
}

func (a *applier) Apply(ctx context.Context, obj map[string]any, manager string) (map[string]any, error) {
	a.applied = append(a.applied, genlabel.Spec(obj).Name+"/"+manager)
	a.cluster.Add(obj)
	return obj, nil
}

func TestServerSideApply(t *testing.T) {
	h := newHarness(t, strings.Replace(netpolPolicy, "spec:\n  rules:", "spec:\n  useServerSideApply: true\n  rules:", 1), namespace("team-a", nil))
	a := &applier{harness: h}
	client := struct {
		*applier
		engine.Client
	}{a, h.cluster}
	ctrl := generate.NewController(h.set, client)
	if err := ctrl.Process(h.ctx, urFor(h, "default-deny", "deny-all-traffic")); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.applied, []string{"deny-all-traffic/kyverno-generate"}) {
		t.Errorf("applied %v", a.applied)
	}
}

func TestNamespacedPolicyScope(t *testing.T) {
	const policy = `apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: local
  namespace: team-a
spec:
  rules:
  - name: cm
    match:
      any:
      - resources:
          kinds: [Secret]
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: "{{request.object.metadata.name}}"
      namespace: "{{request.object.data.target}}"
      data:
        data:
          k: v
`
	h := newHarness(t, policy)
	own := secret("team-a", "own", map[string]any{"target": "team-a"})
	urs := h.admit(api.Create, own, nil)
	if len(urs) != 1 || urs[0].Status.State != api.URCompleted || h.get("v1", "ConfigMap", "team-a", "own") == nil {
		t.Fatalf("own namespace: %+v", urs)
	}
	resp, err := h.set.Generate(h.ctx, &engine.Request{Controller: true, Object: secret("team-a", "escape", map[string]any{"target": "team-b"})})
	if err != nil {
		t.Fatal(err)
	}
	rr := resp.Policies[0].Rules[0]
	if rr.Status != engine.StatusError || !strings.Contains(rr.Message, "a namespaced policy cannot generate resources in other namespaces") {
		t.Errorf("result %+v", rr)
	}
}

// failingQueue fails the first Next with err; the other calls wait for
// their context.
type failingQueue struct {
	once sync.Once
	err  error
}

func (q *failingQueue) Next(ctx context.Context) (*api.UpdateRequest, error) {
	failed := false
	q.once.Do(func() { failed = true })
	if failed {
		return nil, q.err
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRunStops checks which error Run returns when it stops: the first
// queue failure (the other workers stopped by it), or ctx's error, even
// when ctx was cancelled with a cause.
func TestRunStops(t *testing.T) {
	boom := errors.New("boom")
	t.Run("first queue failure stops the other workers", func(t *testing.T) {
		h := newHarness(t, netpolPolicy)
		ctrl := generate.NewController(h.set, h.cluster, generate.WithWorkers(4))
		if err := ctrl.Run(context.Background(), &failingQueue{err: boom}); err != boom {
			t.Fatalf("Run returned %v, want %v", err, boom)
		}
	})
	t.Run("ctx cancelled with a cause", func(t *testing.T) {
		h := newHarness(t, netpolPolicy)
		ctrl := generate.NewController(h.set, h.cluster, generate.WithWorkers(4))
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(boom)
		if err := ctrl.Run(ctx, h.queue); err != context.Canceled {
			t.Fatalf("Run returned %v, want %v", err, context.Canceled)
		}
	})
	t.Run("ctx deadline", func(t *testing.T) {
		h := newHarness(t, netpolPolicy)
		ctrl := generate.NewController(h.set, h.cluster, generate.WithWorkers(2))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := ctrl.Run(ctx, h.queue); err != context.DeadlineExceeded {
			t.Fatalf("Run returned %v, want %v", err, context.DeadlineExceeded)
		}
	})
}
