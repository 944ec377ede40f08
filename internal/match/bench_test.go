package match

import "testing"

var benchPod = Resource{
	Version: "v1", Kind: "Pod", Name: "web-7d4b9c8f5-x2x9z", Namespace: "shop",
	Labels:      map[string]string{"app": "web", "tier": "frontend", "pod-template-hash": "7d4b9c8f5", "example.com/team": "shop"},
	Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": "2024-01-01T00:00:00Z"},
}

var benchRules = []struct {
	name           string
	match, exclude string
}{
	{"kind", `{any: [{resources: {kinds: [Pod]}}]}`, ""},
	{"kind-miss", `{any: [{resources: {kinds: [Deployment, StatefulSet, DaemonSet]}}]}`, ""},
	{"kinds-exclude-namespaces", `{any: [{resources: {kinds: [Pod], operations: [CREATE, UPDATE]}}]}`,
		`{any: [{resources: {namespaces: [kube-system, 'kyverno*']}}]}`},
	{"selector", `{all: [{resources: {kinds: [Pod], names: ['web-*'], selector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [frontend, backend]}]}}}]}`, ""},
	{"wildcard-selector", `{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'app*': 'w?b', 'example.com/*': '*'}}}}]}`, ""},
	{"namespace-selector", `{any: [{resources: {kinds: [Pod], namespaceSelector: {matchLabels: {env: prod}}}}]}`, ""},
	{"subjects-exclude", `{any: [{resources: {kinds: [Pod]}}]}`,
		`{any: [{subjects: [{kind: Group, name: 'system:nodes'}, {kind: ServiceAccount, name: '*', namespace: kube-system}]}, {clusterRoles: [cluster-admin]}]}`},
}

var nsLabelsProd = map[string]string{"env": "prod"}

func benchRequest() Request {
	return Request{
		Operation: "CREATE", Username: "alice", Groups: []string{"system:authenticated", "devs"},
		ClusterRoles:    []string{"edit"},
		NamespaceLabels: func() (map[string]string, error) { return nsLabelsProd, nil },
	}
}

func BenchmarkRuleMatches(b *testing.B) {
	for _, br := range benchRules {
		r := mustRule(b, br.match, br.exclude)
		req := benchRequest()
		b.Run(br.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_, _, _ = r.Matches(benchPod, req)
			}
		})
	}
}

func BenchmarkFilterMatches(b *testing.B) {
	f := mustFilter(b, `{any: [{resources: {kinds: [Pod, Deployment], namespaces: [shop], names: ['web-*']}}]}`)
	req := benchRequest()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = f.Matches(benchPod, req)
	}
}

// TestMatchesDoesNotAllocate guards the allocation-free common case.
func TestMatchesDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counting")
	}
	for _, br := range benchRules {
		r := mustRule(t, br.match, br.exclude)
		req := benchRequest()
		allocs := testing.AllocsPerRun(100, func() {
			_, _, _ = r.Matches(benchPod, req)
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Matches", br.name, allocs)
		}
	}
}
