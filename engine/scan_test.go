package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const scanPolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-team
spec:
  rules:
  - name: default-team
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(team): platform
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'team' is required"
      pattern:
        metadata:
          labels:
            team: "?*"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: foreground-only
spec:
  background: false
  rules:
  - name: check-user
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "no user"
      deny:
        conditions:
          any:
          - key: "{{ request.userInfo.username }}"
            operator: Equals
            value: ""
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: unrelated
spec:
  rules:
  - name: cm
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    validate:
      message: "x"
      pattern:
        data: "?*"
`

func TestScan(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(scanPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	pod := object("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\n")
	for _, tt := range []struct {
		background bool
		want       string
	}{
		// the validate rule sees the mutated object; policies without
		// results (unrelated) are left out
		{false, "[add-team.default-team=pass require-team.check-team=pass foreground-only.check-user=pass]"},
		// a background scan leaves out background: false policies
		{true, "[add-team.default-team=pass require-team.check-team=pass]"},
	} {
		resp, err := set.Scan(context.Background(), &engine.Request{Object: pod, Background: tt.background, UserInfo: api.UserInfoData{Username: "alice"}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for p, r := range resp.Rules() {
			got = append(got, fmt.Sprintf("%s.%s=%s", p.Policy.Source().GetName(), r.Name, r.Status))
		}
		if fmt.Sprint(got) != tt.want {
			t.Errorf("background %v: %v, want %s", tt.background, got, tt.want)
		}
		for _, p := range resp.Policies {
			if len(p.Rules) == 0 {
				t.Errorf("policy %s without results", p.Policy.Source().GetName())
			}
		}
		labels := resp.Resource["metadata"].(map[string]any)["labels"]
		if fmt.Sprint(labels) != "map[team:platform]" || string(resp.Patch) == "" {
			t.Errorf("resource labels %v, patch %s", labels, resp.Patch)
		}
		if _, changed := pod["metadata"].(map[string]any)["labels"]; changed {
			t.Fatal("Scan changed the request's object")
		}
	}
}

// TestScanWithoutVerifier: a verifyImages rule that cannot verify for want
// of an ImageVerifier is one error result, not also a "missing digest"
// failure at validation; Validate alone still checks the digest.
func TestScanWithoutVerifier(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed
spec:
  rules:
  - name: check-signature
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["registry.test/*"]
      attestors:
      - entries:
        - keys:
            publicKeys: |-
              -----BEGIN PUBLIC KEY-----
              MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEFhKunelBZgBkqVymHhqzkX5tk2CS
              utLhdC5iwilcRLBCs5YgqQRS47gHebUv0mBotgyrwxoo2WXzheGc5iUSTw==
              -----END PUBLIC KEY-----
`).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	pod := object("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers:\n  - name: app\n    image: registry.test/app:v1\n")
	results := func(resp *engine.Response) []string {
		var got []string
		for p, r := range resp.Rules() {
			got = append(got, fmt.Sprintf("%s.%s=%s: %s", p.Policy.Source().GetName(), r.Name, r.Status, r.Message))
		}
		return got
	}
	resp, err := set.Scan(context.Background(), &engine.Request{Object: pod})
	if err != nil {
		t.Fatal(err)
	}
	want := "[signed.check-signature=error: failed to verify image registry.test/app:v1: no image verifier: not configured]"
	if got := fmt.Sprint(results(resp)); got != want {
		t.Errorf("Scan: %s\nwant %s", got, want)
	}
	v, err := set.Validate(context.Background(), &engine.Request{Object: pod})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(results(v)), "[signed.check-signature=fail: missing digest for registry.test/app:v1]"; got != want {
		t.Errorf("Validate: %s\nwant %s", got, want)
	}
}
