package jmespath

import "testing"

// Expressions taken from the conformance corpus (shared/conformance), run
// against the corpus resources or equivalent data.
func TestCorpusExpressions(t *testing.T) {
	config1 := map[string]any{"request": map[string]any{"object": map[string]any{
		"metadata": map[string]any{"name": "config-1", "labels": map[string]any{"expected": "hello"}},
		"data":     map[string]any{"version": "1.4.2", "token": "aGVsbG8=", "hosts": "a.example.com,b.example.com"},
	}}}
	config2 := map[string]any{"request": map[string]any{"object": map[string]any{
		"metadata": map[string]any{"name": "Config_Two", "labels": map[string]any{"expected": "hello"}},
		"data":     map[string]any{"version": "1.1.9", "token": "d29ybGQ=", "hosts": "a,b,c,d"},
	}}}
	pod := readJSON(t, "admission-pod.json")
	intr := mustNew(t, WithClock(fixedClock))
	runCases(t, intr, []fnCase{
		{expr: "semver_compare(request.object.data.version, '>=1.2.0')", data: config1, want: true},
		{expr: "semver_compare(request.object.data.version, '>=1.2.0')", data: config2, want: false},
		{expr: "base64_decode(request.object.data.token)", data: config1, want: "hello"},
		{expr: "base64_decode(request.object.data.token)", data: config2, want: "world"},
		{expr: "regex_match('^[a-z]+-[0-9]+$', request.object.metadata.name)", data: config1, want: true},
		{expr: "regex_match('^[a-z]+-[0-9]+$', request.object.metadata.name)", data: config2, want: false},
		{expr: "length(split(request.object.data.hosts, ','))", data: config1, want: 2.0},
		{expr: "length(split(request.object.data.hosts, ','))", data: config2, want: 4.0},
		{expr: "request.object.spec.containers[].image.split(@, ':')[0]", data: pod,
			want: []any{"registry.example.com/team/app-0", "registry.example.com/team/app-1", "registry.example.com/team/app-2", "registry.example.com/team/app-3"}},
		{expr: "request.object.spec.containers[].securityContext.capabilities.drop[].to_upper(@) || `[]`", data: pod, want: []any{"ALL", "ALL", "ALL", "ALL"}},
		{expr: "request.object.spec.initContainers[].image | [0] | split(@, ':')[1]", data: pod, want: "1.36"},
		{expr: "time_now_utc().time_to_cron(@).split(@,' ') | [1].to_number(@)", want: 19.0},
		{expr: "sum(request.object.status.containerStatuses[*].restartCount || [`0`])", data: pod, want: 0.0},
		{name: "sum of a scalar fallback is an error", expr: "sum(request.object.status.containerStatuses[*].restartCount || `0`)", data: pod,
			err: "JMESPath function 'sum': argument #1 is not of type array (got number)"},
		{expr: "regex_replace_all('^(localhost/|(?:[a-z0-9]+\\.)+[a-z0-9]+/)?(.*)$', 'registry.example.com/team/app:1', 'mirror.corp/$2')", want: "mirror.corp/team/app:1"},
		{expr: "request.object.spec.containers[].livenessProbe.exec.command[].regex_match('\\bjcmd\\b',@)", data: map[string]any{"request": map[string]any{"object": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"livenessProbe": map[string]any{"exec": map[string]any{"command": []any{"sh", "-c", "jcmd 1 VM.version"}}}},
		}}}}}, want: []any{false, false, true}},
		{expr: "parse_yaml(@).clusterName", data: "apiVersion: kubeadm.k8s.io/v1beta3\nclusterName: prod-eu\n", want: "prod-eu"},
		{expr: "request.object.spec.containers[?label_match(`{\"name\":\"app-1\"}`, @)].name", data: pod, want: []any{"app-1"}},
	})
}
