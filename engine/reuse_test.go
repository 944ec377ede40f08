package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// reusePolicies read foreach elements (scopes recycled between elements),
// context variables, messages with variables, mutate foreach and Pod
// Security: what a request state keeps between the calls that reuse it.
const reusePolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: reuse
spec:
  rules:
  - name: tags
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "container {{ element.name }} of {{ request.object.metadata.name }}"
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            any:
            - key: "{{ element.image }}"
              operator: Equals
              value: "*:latest"
  - name: probes
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            all:
            - key: livenessProbe
              operator: AllNotIn
              value: "{{ element.keys(@)[] }}"
  - name: team
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: team
      variable:
        jmesPath: request.object.metadata.labels.team || 'none'
    validate:
      message: "team {{ team }} is not allowed"
      deny:
        conditions:
          any:
          - key: "{{ team }}"
            operator: AnyIn
            value: [red, none]
  - name: pattern
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "non-root"
      pattern:
        spec:
          containers:
          - =(securityContext):
              =(runAsNonRoot): true
  - name: baseline
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      podSecurity:
        level: baseline
        version: latest
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: reuse-mutate
spec:
  rules:
  - name: label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            first: "{{ request.object.spec.containers[0].name }}"
  - name: each
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          spec:
            containers:
            - name: "{{ element.name }}"
              env:
              - name: INDEX
                value: "{{ elementIndex }}"
`

// reusePod returns the i-th of a series of Pods that differ in names,
// labels, images, container counts, probes and security settings.
func reusePod(t *testing.T, i int) map[string]any {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-%d\n", i)
	if i%3 != 0 {
		fmt.Fprintf(&b, "  labels:\n    team: %s\n", []string{"red", "blue", "green"}[i%3])
	}
	b.WriteString("spec:\n")
	if i%5 == 0 {
		b.WriteString("  hostNetwork: true\n")
	}
	b.WriteString("  containers:\n")
	for c := 0; c <= i%4; c++ {
		fmt.Fprintf(&b, "  - name: c%d-%d\n    image: %s\n", i, c, []string{"nginx:latest", "redis:7", "busybox"}[(i+c)%3])
		if (i+c)%2 == 0 {
			b.WriteString("    livenessProbe:\n      tcpSocket:\n        port: 80\n")
		}
		if (i+c)%3 == 1 {
			fmt.Fprintf(&b, "    securityContext:\n      runAsNonRoot: %v\n      privileged: %v\n", c%2 == 0, i%7 == 0)
		}
	}
	return rbObject(t, b.String())
}

// reuseOutcome is what a response says, without the compiled policies
// (which differ between sets).
type reuseOutcome struct {
	Rules    []string
	Checks   [][]engine.PodSecurityCheck
	Resource map[string]any
	Patch    []byte
}

// outcomeOf returns what a Mutate or Validate call returned; an error is
// written as a rule.
func outcomeOf(resp *engine.Response, err error) reuseOutcome {
	var o reuseOutcome
	if err != nil {
		o.Rules = []string{"error: " + err.Error()}
		return o
	}
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			o.Rules = append(o.Rules, p.Policy.Source().GetName()+"/"+r.Name+" "+string(r.Status)+": "+r.Message)
			o.Checks = append(o.Checks, r.PodSecurityChecks)
		}
	}
	o.Resource, o.Patch = resp.Resource, resp.Patch
	return o
}

// TestRequestStatesReused checks that the calls of a policy set, which
// reuse the state (and the scopes) of the calls before them, answer as a
// set that never evaluated anything: one request leaves nothing to the
// next, in sequence or from several goroutines.
func TestRequestStatesReused(t *testing.T) {
	ctx := context.Background()
	const pods = 40
	want := make([][2]reuseOutcome, pods)
	for i := range pods {
		fresh := rbCompile(t, reusePolicies)
		want[i][0] = outcomeOf(fresh.Mutate(ctx, &engine.Request{Operation: api.Create, Object: reusePod(t, i)}))
		fresh = rbCompile(t, reusePolicies)
		want[i][1] = outcomeOf(fresh.Validate(ctx, &engine.Request{Operation: api.Create, Object: reusePod(t, i)}))
	}
	if fails := strings.Count(fmt.Sprint(want), " fail: "); fails == 0 {
		t.Fatal("the series has no failing rule: it checks little")
	}
	check := func(set *engine.PolicySet, i int) error {
		m := outcomeOf(set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: reusePod(t, i)}))
		v := outcomeOf(set.Validate(ctx, &engine.Request{Operation: api.Create, Object: reusePod(t, i)}))
		for k, got := range [2]reuseOutcome{m, v} {
			w := want[i][k]
			if !reflect.DeepEqual(got.Rules, w.Rules) || !reflect.DeepEqual(got.Checks, w.Checks) ||
				!reflect.DeepEqual(got.Resource, w.Resource) || !bytes.Equal(got.Patch, w.Patch) {
				return fmt.Errorf("pod %d, call %d:\n got %+v\nwant %+v", i, k, got, w)
			}
		}
		return nil
	}
	set := rbCompile(t, reusePolicies)
	for round := range 2 {
		for i := range pods {
			if err := check(set, i); err != nil {
				t.Fatalf("in sequence, round %d: %v", round, err)
			}
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range pods {
				if err := check(set, (i+g*7)%pods); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("from goroutines: %v", err)
	}
}
