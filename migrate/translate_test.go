package migrate

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// newTestJP is a converter with a context entry cm (a ConfigMap) and a
// foreach element.
func newTestJP() *jp {
	c := &jp{sc: newScope()}
	c.sc.names["cm"] = jv{e: ident("variables.cm"), t: tMap}
	return c
}

func TestTemplates(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		// plain paths are strict: a missing field is an error, as upstream
		{"{{ request.object.spec.replicas }}", "object.spec.replicas"},
		{"{{request.namespace}}", "request.namespace"},
		{`{{ request.object.metadata.annotations."example.com/x" }}`, "object.metadata.annotations['example.com/x']"},
		// anything else gives null for what is missing
		{"{{ request.object.metadata.labels.app || '' }}", "object.metadata.?labels.?app.orValue('')"},
		{"{{ request.operation || 'BACKGROUND' }}", "request.operation"},
		{"{{ request.object.spec.containers[].image }}", "object.spec.containers.map(container, container.image)"},
		{"{{ request.object.spec.containers[].securityContext.privileged }}",
			"object.spec.containers.filter(container, has(container.securityContext) && has(container.securityContext.privileged)).map(container, container.securityContext.privileged)"},
		{"{{ length(request.object.spec.containers) }}", "size(object.spec.containers)"},
		{"{{ request.object.spec.[initContainers, containers][] }}", "object.spec.?initContainers.orValue([]) + object.spec.containers"},
		{"{{ request.object.spec.volumes[?hostPath] | length(@) }}", "size(object.spec.?volumes.orValue([]).filter(volume, size(volume.?hostPath.orValue({})) > 0))"},
		{"{{ contains(request.object.metadata.name, 'test') }}", "object.metadata.name.contains('test')"},
		{"{{ to_upper(request.object.kind) }}", "object.kind.upperAscii()"},
		{"{{ cm.data.registries }}", "variables.cm.data.registries"},
		{"{{ serviceAccountName }}", "request.userInfo.username.startsWith('system:serviceaccount:') ? request.userInfo.username.split(':')[3] : ''"},
		// text around variables is a concatenation
		{"pod {{ request.object.metadata.name }} has {{ length(request.object.spec.containers) }} containers",
			"'pod ' + object.metadata.name + ' has ' + string(size(object.spec.containers)) + ' containers'"},
		// Kyverno's functions on the CEL libraries
		{"{{ regex_replace_all('^([a-z]+)/(.*)$', request.object.metadata.name, 'x/$2${1}$$') }}",
			`regex.replace(object.metadata.name, '^([a-z]+)/(.*)$', 'x/\\2\\1$')`},
		{"{{ time_since('', request.object.metadata.creationTimestamp, '') }}", "string(time.now() - timestamp(object.metadata.creationTimestamp))"},
		{"{{ time_to_cron(time_now_utc()) }}", "time.toCron(time.now())"},
		{"{{ time_add('2024-01-01T00:00:00Z', '4h') }}", "string(timestamp('2024-01-01T00:00:00Z') + duration('4h'))"},
		{"{{ to_string(request.object.metadata.labels) }}", "json.marshal(object.metadata.?labels.orValue(null))"},
		{"{{ merge(request.object.metadata.labels, `{\"a\": \"b\"}`) }}",
			"cel.bind(keys, object.metadata.labels.map(key, key).filter(key, !(key in {'a': 'b'})) + {'a': 'b'}.map(key, key), transform.listObjToMap(keys.map(key, {'key': key}), keys.map(key, {'value': key in {'a': 'b'} ? {'a': 'b'}[key] : object.metadata.labels[key]}), 'key', 'value'))"},
		// request."object" escapes Kyverno's autogen: so does the index form
		{`{{ request."object".metadata.name }}`, "object['metadata'].name"},
		// a list the API server writes as null when empty
		{"{{ request.object.rules[].verbs[] }}", "object.?rules.optFlatMap(rules, optional.ofNonZeroValue(rules)).orValue([]).filter(rule, has(rule.verbs)).map(rule, rule.verbs).flatten()"},
		// a nested template is a dynamic key
		{`{{ cm.data."{{ request.namespace }}" }}`, "variables.cm.data[request.namespace]"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := newTestJP().str(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := v.value(exNull).s; got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTemplatesUnsupported(t *testing.T) {
	tests := []struct {
		in, construct string
	}{
		{"{{ request.roles }}", "variable request.roles"},
		{"{{ images.containers.app.tag }}", "variable images"},
		{"{{ regex_replace_all('(?P<x>a)', request.object.metadata.name, '${x}') }}", "JMESPath function regex_replace_all"},
		{"{{ time_since('2006-01-02', request.object.metadata.creationTimestamp, '') }}", "JMESPath function time_since"},
		{"{{ unknown_name }}", "variable unknown_name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := newTestJP().str(tt.in)
			p := problemOf("x", err)
			if err == nil || p.Construct != tt.construct {
				t.Errorf("got %v, want the construct %q", err, tt.construct)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	tests := []struct {
		name string
		cond api.Condition
		want string
	}{
		{"equals", api.Condition{Key: "{{ request.object.spec.type }}", Operator: "Equals", Value: "NodePort"}, "object.spec.type == 'NodePort'"},
		{"equals wildcard", api.Condition{Key: "{{ request.object.metadata.name }}", Operator: "Equals", Value: "web-*"}, "object.metadata.name.startsWith('web-')"},
		{"not equals", api.Condition{Key: "{{ request.operation }}", Operator: "NotEquals", Value: "DELETE"}, "request.operation != 'DELETE'"},
		{"any in", api.Condition{Key: "{{ request.operation }}", Operator: "AnyIn", Value: []any{"CREATE", "UPDATE"}}, "request.operation in ['CREATE', 'UPDATE']"},
		{"any not in list", api.Condition{Key: "{{ request.object.spec.containers[].name }}", Operator: "AnyNotIn", Value: []any{"app", "side*"}},
			"object.spec.containers.map(container, container.name).exists(x, x != 'app' && !x.startsWith('side'))"},
		// a literal key with wildcards matches the elements of a value read at run time
		{"pattern any not in", api.Condition{Key: "PATH=*?", Operator: "AnyNotIn", Value: "{{ cm.data.env }}"},
			`cel.bind(set, variables.cm.data.env, !(set.startsWith('[') ? json.unmarshal(set) : [set]).exists(e, string(e).matches('^PATH=.*.$')))`},
		{"all in", api.Condition{Key: "{{ request.object.spec.containers[].name }}", Operator: "AllIn", Value: []any{"app"}},
			"object.spec.containers.map(container, container.name).all(x, x == 'app')"},
		{"greater than", api.Condition{Key: "{{ request.object.spec.replicas }}", Operator: "GreaterThan", Value: 3.0}, "object.spec.replicas > 3"},
		{"quantity", api.Condition{Key: "{{ request.object.spec.containers[0].resources.limits.memory }}", Operator: "LessThanOrEquals", Value: "2Gi"},
			"quantity(object.spec.containers[0].resources.limits.memory).compareTo(quantity('2Gi')) <= 0"},
		{"duration", api.Condition{Key: "{{ request.object.metadata.annotations.ttl }}", Operator: "GreaterThan", Value: "1h"},
			"duration(object.metadata.annotations.ttl) > duration('1h')"},
		{"range", api.Condition{Key: "{{ request.object.spec.replicas }}", Operator: "AnyIn", Value: "1-5"},
			"double(string(object.spec.replicas)) >= 1 && double(string(object.spec.replicas)) <= 5"},
		// a value known only at evaluation: Kyverno matches it as a wildcard
		{"equals a variable", api.Condition{Key: "{{ request.object.metadata.name }}", Operator: "Equals", Value: "{{ cm.data.pattern }}"},
			`cel.bind(pattern, variables.cm.data.pattern, pattern.contains('*') || pattern.contains('?') ? object.metadata.name.matches('^\\Q' + pattern.replace('\\E', '\\E\\\\E\\Q').replace('*', '\\E.*\\Q').replace('?', '\\E.\\Q') + '\\E$') : object.metadata.name == pattern)`},
		// and a number key compares with the number a string writes
		{"number equals a variable", api.Condition{Key: "{{ request.object.spec.replicas }}", Operator: "Equals", Value: "{{ cm.data.replicas }}"},
			`cel.bind(value, variables.cm.data.replicas, value.matches('^[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$') && double(value) == double(object.spec.replicas))`},
		// a string key that writes no number is not greater than one
		{"text greater than", api.Condition{Key: "{{ cm.data.count }}", Operator: "GreaterThan", Value: 0.0},
			`cel.bind(key, variables.cm.data.count, key.matches('^[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$') && double(key) > 0)`},
		{"unknown type greater than", api.Condition{Key: "{{ request.object.metadata.annotations.count || '' }}", Operator: "GreaterThan", Value: 0.0},
			`cel.bind(key, object.metadata.?annotations.?count.orValue(''), type(key) == string ? key.matches('^[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$') && double(key) > 0 : (type(key) == int || type(key) == uint || type(key) == double) && double(key) > 0)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := newTestJP().condition(tt.cond)
			if err != nil {
				t.Fatal(err)
			}
			if flat(e.s) != tt.want {
				t.Errorf("got  %s\nwant %s", flat(e.s), tt.want)
			}
		})
	}
}

func TestPatterns(t *testing.T) {
	tests := []struct {
		name      string
		pattern   any
		holds     string
		skip      string
		construct string
	}{
		{name: "required label", pattern: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "?*"}}},
			holds: "has(object.metadata.labels) && has(object.metadata.labels.app) && object.metadata.labels.app != ''", skip: "false"},
		{name: "equality anchor", pattern: map[string]any{"spec": map[string]any{"=(hostNetwork)": false}},
			holds: "!has(object.spec.hostNetwork) || object.spec.hostNetwork == false", skip: "false"},
		{name: "negation anchor", pattern: map[string]any{"spec": map[string]any{"X(hostPID)": "*"}},
			holds: "!has(object.spec.hostPID)", skip: "false"},
		{name: "list of maps", pattern: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "!*:latest"}}}},
			holds: "object.spec.containers.all(container, !container.image.endsWith(':latest'))", skip: "false"},
		{name: "condition anchor", pattern: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"(name)": "app-*", "imagePullPolicy": "Always"}}}},
			holds: "object.spec.containers.all(container, !container.name.startsWith('app-') || has(container.imagePullPolicy) && container.imagePullPolicy == 'Always')",
			skip:  "size(object.spec.containers) > 0 && object.spec.containers.all(container, !container.name.startsWith('app-'))"},
		{name: "quantity operator", pattern: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"resources": map[string]any{"limits": map[string]any{"memory": "<=2Gi"}}}}}},
			holds: "object.spec.containers.all(container, has(container.resources) && has(container.resources.limits) && (!has(container.resources.limits.memory) || quantity(string(container.resources.limits.memory)).compareTo(quantity('2Gi')) <= 0))", skip: "false"},
		{name: "alternatives", pattern: map[string]any{"spec": map[string]any{"restartPolicy": "Always|OnFailure"}},
			holds: "has(object.spec.restartPolicy) && (object.spec.restartPolicy == 'Always|OnFailure' || object.spec.restartPolicy == 'Always' || object.spec.restartPolicy == 'OnFailure')", skip: "false"},
		{name: "reference", pattern: map[string]any{"spec": map[string]any{"a": "$(./b)"}}, construct: "reference $(./b)"},
		{name: "wildcard key under an equality anchor", pattern: map[string]any{"=(metadata)": map[string]any{"=(annotations)": map[string]any{"=(x.io/*)": "a|b"}}},
			holds: "!has(object.metadata.annotations) || !object.metadata.annotations.exists(key, key.startsWith('x.io/')) || object.metadata.annotations.exists(key, key.startsWith('x.io/') && (object.metadata.annotations[key] == 'a|b' || object.metadata.annotations[key] == 'a' || object.metadata.annotations[key] == 'b'))", skip: "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestJP()
			got, err := c.pattern(c.objectRef(), tt.pattern, "")
			if tt.construct != "" {
				if p := problemOf("", err); err == nil || p.Construct != tt.construct {
					t.Fatalf("got %v, want the construct %q", err, tt.construct)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if flat(got.holds.s) != tt.holds {
				t.Errorf("holds:\ngot  %s\nwant %s", flat(got.holds.s), tt.holds)
			}
			if flat(got.skip.s) != tt.skip {
				t.Errorf("skip:\ngot  %s\nwant %s", flat(got.skip.s), tt.skip)
			}
		})
	}
}

// flat joins the lines of an expression.
func flat(s string) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, ' ')
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

func TestAPICalls(t *testing.T) {
	tests := []struct {
		name string
		call api.APICall
		want string
	}{
		{"resource given by a variable", api.APICall{URLPath: "/apis/apps/v1/namespaces/{{ request.namespace }}/{{ cm.data.resource }}"},
			"resource.List('apps/v1', variables.cm.data.resource, request.namespace)"},
		{"fieldSelector", api.APICall{URLPath: "/apis/apps/v1/namespaces/{{request.namespace}}/deployments?fieldSelector=metadata.name={{request.name}}", JMESPath: "items[0]"},
			"cel.bind(list, resource.List('apps/v1', 'deployments', request.namespace), {'items': list.?items.orValue([]).filter(item, string(item.?metadata.?name.orValue('')) == request.name)}).?items[?0].orValue(null)"},
		{"fieldSelector and labelSelector", api.APICall{URLPath: "/api/v1/pods?labelSelector=app=x&fieldSelector=spec.nodeName!=n1,status.phase==Running", JMESPath: "items"},
			"cel.bind(list, resource.List('v1', 'pods', '', {'app': 'x'}), {'items': list.?items.orValue([]).filter(item, string(item.?spec.?nodeName.orValue('')) != 'n1' && string(item.?status.?phase.orValue('')) == 'Running')}).?items.orValue(null)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _, err := newTestJP().apiCall(&tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if got := flat(e.s); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// a fieldSelector with a jmesPath that reads the list itself
	call := api.APICall{URLPath: "/api/v1/pods?fieldSelector=spec.nodeName=n1", JMESPath: "metadata.resourceVersion"}
	if _, _, _, err := newTestJP().apiCall(&call); err == nil {
		t.Error("a fieldSelector whose jmesPath reads the list's metadata converts")
	}
}

// TestStrictPattern: a pattern's variables are read before its tests, as
// Kyverno substitutes them first.
func TestStrictPattern(t *testing.T) {
	c := newTestJP()
	got, err := c.strictPattern(c.objectRef(), map[string]any{"spec": map[string]any{"=(a)": "{{ request.object.spec.b }}"}})
	if err != nil {
		t.Fatal(err)
	}
	want := " // Kyverno substitutes the pattern's variables first: one that reads a missing field is an error size([object.spec.b]) == 1 ? !has(object.spec.a) || string(object.spec.a) == string(object.spec.b) : false"
	if flat(got.holds.s) != want {
		t.Errorf("got  %s\nwant %s", flat(got.holds.s), want)
	}
}

// TestForeachElementMap: a foreach strategic merge whose annotation key
// reads the element becomes one map of every element's entry, and
// decides as the source.
func TestForeachElementMap(t *testing.T) {
	src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: annotate
spec:
  rules:
  - name: annotate
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        preconditions:
          all:
          - key: "{{ element.name }}"
            operator: NotEquals
            value: skip-me
        patchStrategicMerge:
          metadata:
            annotations:
              example.com/{{element.name}}: "{{ element.image }}"
`
	docs, err := api.ReadDocuments(strings.NewReader(src), "annotate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conv, err := Convert(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !conv.Rules[0].Converted() {
		t.Fatalf("not converted: %v", conv.Rules[0].Problems)
	}
	var y strings.Builder
	if err := conv.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(y.String(), "transform.listObjToMap(") {
		t.Errorf("no lifted map:\n%s", y.String())
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "default",
		"annotations": map[string]any{"keep": "x"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "a", "image": "nginx"},
			map[string]any{"name": "skip-me", "image": "busybox"},
			map[string]any{"name": "b", "image": "redis"}}}}
	v, err := Verify(context.Background(), []*Conversion{conv}, []map[string]any{pod})
	if err != nil {
		t.Fatal(err)
	}
	p := v.Policies[0]
	if p.Evaluations != 1 || len(p.Differences) > 0 || len(p.Unverified) > 0 {
		t.Errorf("verification: %+v", p)
	}
}
