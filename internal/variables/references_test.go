package variables

import (
	"errors"
	"reflect"
	"testing"
)

func TestResolveReferences(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr string
	}{
		{
			// policy-variables.md: "$(./../../../readinessProbe/tcpSocket/port)"
			name: "manifest lookup",
			doc:  `{"spec": {"containers": [{"livenessProbe": {"tcpSocket": {"port": "$(./../../../readinessProbe/tcpSocket/port)"}}, "readinessProbe": {"tcpSocket": {"port": "3000"}}}]}}`,
			want: `{"spec":{"containers":[{"livenessProbe":{"tcpSocket":{"port":"3000"}},"readinessProbe":{"tcpSocket":{"port":"3000"}}}]}}`,
		},
		{
			name: "manifest lookup with operator",
			doc:  `{"spec": {"containers": [{"livenessProbe": {"tcpSocket": {"port": "$(<./../../../readinessProbe/tcpSocket/port)"}}, "readinessProbe": {"tcpSocket": {"port": "3000"}}}]}}`,
			want: `{"spec":{"containers":[{"livenessProbe":{"tcpSocket":{"port":"<3000"}},"readinessProbe":{"tcpSocket":{"port":"3000"}}}]}}`,
		},
		{
			name: "operators",
			doc:  `{"a": {"v": "2048Mi", "ge": "$(>=./../v)", "le": "$(<=./../v)", "gt": "$(>./../v)", "ne": "$(!./../v)"}}`,
			want: `{"a":{"ge":">=2048Mi","gt":">2048Mi","le":"<=2048Mi","ne":"!2048Mi","v":"2048Mi"}}`,
		},
		{
			name: "number with operator has six decimals",
			doc:  `{"a": {"v": 3000, "lt": "$(<./../v)"}}`,
			want: `{"a":{"lt":"<3000.000000","v":3000}}`,
		},
		{
			name:    "number without operator",
			doc:     `{"a": {"v": 3000, "eq": "$(./../v)"}}`,
			wantErr: "NotResolvedReferenceErr,reference $(./../v) not resolved at path /a/eq",
		},
		{
			name:    "missing",
			doc:     `{"a": {"eq": "$(./../v)"}}`,
			wantErr: "got nil resolved variable $(./../v) at path /a/eq: <nil>",
		},
		{
			name:    "missing with operator",
			doc:     `{"a": {"eq": "$(<./../v)"}}`,
			wantErr: "failed to resolve $(<./../v) at path /a/eq: incorrect expression: operator < does not match with value <nil>",
		},
		{
			name:    "empty",
			doc:     `{"a": "$(<=)"}`,
			wantErr: "failed to resolve $(<=) at path /a: expected path, found empty reference",
		},
		{
			// upstream's Test_ReferenceSubstitution: anchors in the document
			// are ignored when matching
			name: "anchored key in document",
			doc:  `{"metadata": {"name": "temp", "annotations": {"test": "$(../../../../spec/namespace)"}}, "(spec)": {"namespace": "n1"}}`,
			want: `{"(spec)":{"namespace":"n1"},"metadata":{"annotations":{"test":"n1"},"name":"temp"}}`,
		},
		{
			// seed README: a reference under ^(containers) keeps the anchor in
			// its own path and finds nothing
			name:    "anchored key on the way",
			doc:     `{"spec": {"^(containers)": [{"livenessProbe": {"tcpSocket": {"port": "$(./../../../readinessProbe/tcpSocket/port)"}}, "readinessProbe": {"tcpSocket": {"port": "3000"}}}]}}`,
			wantErr: "got nil resolved variable $(./../../../readinessProbe/tcpSocket/port) at path /spec/^(containers)/0/livenessProbe/tcpSocket/port: <nil>",
		},
		{
			// upstream's Test_EscpReferenceSubstitution
			name: "escapes",
			doc:  `{"metadata": {"annotations": {"test1": "$(../../../../spec/namespace)", "test2": "\\$(ENV_VAR)", "test3": "\\${ENV_VAR}", "test4": "\\\\\\${ENV_VAR}"}}, "(spec)": {"namespace": "n1"}}`,
			want: `{"(spec)":{"namespace":"n1"},"metadata":{"annotations":{"test1":"n1","test2":"$(ENV_VAR)","test3":"\\${ENV_VAR}","test4":"\\\\\\${ENV_VAR}"}}}`,
		},
		{
			name: "absolute path",
			doc:  `{"name": "rule-x", "a": {"b": "applied=$(/name)"}}`,
			want: `{"a":{"b":"applied=rule-x"},"name":"rule-x"}`,
		},
		{
			name: "several references and text",
			doc:  `{"a": {"x": "1", "y": "2", "z": "$(./../x) and $(./../y)"}}`,
			want: `{"a":{"x":"1","y":"2","z":"1 and 2"}}`,
		},
		{
			// upstream's greedy match runs to the last ")" before a space:
			// the path is "./../x)-$(./../x", which cleans to /a/x
			name: "greedy",
			doc:  `{"a": {"x": "1", "z": "$(./../x)-$(./../x)"}}`,
			want: `{"a":{"x":"1","z":"1"}}`,
		},
		{
			name:    "short reference is a path",
			doc:     `{"a": "$(<)"}`,
			wantErr: "got nil resolved variable $(<) at path /a: <nil>",
		},
		{
			name: "reference in a key resolves relative to the map",
			doc:  `{"m": {"name": "k", "$(./name)": "v"}}`,
			want: `{"m":{"k":"v","name":"k"}}`,
		},
		{
			name: "map resolves to its key",
			doc:  `{"a": {"only": "x"}, "b": "$(./../a)"}`,
			want: `{"a":{"only":"x"},"b":"only"}`,
		},
		{
			name: "reference sees the original document",
			doc:  `{"a": "$(./../b)", "b": "$(./../c)", "c": "z"}`,
			want: `{"a":"$(./../c)","b":"z","c":"z"}`,
		},
		{
			name: "multibyte character before a reference",
			doc:  `{"a": "é$(./../b)", "b": "z"}`,
			want: `{"a":"éz","b":"z"}`,
		},
		{
			name: "nothing to do",
			doc:  `{"a": "{{ x }}", "b": [1, "$ (x)"]}`,
			want: `{"a":"{{ x }}","b":[1,"$ (x)"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustJSON(tt.doc)
			before := toJSON(doc)
			got, err := ResolveReferences(doc)
			if toJSON(doc) != before {
				t.Fatal("input modified")
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := toJSON(got); s != tt.want {
				t.Fatalf("got  %s\nwant %s", s, tt.want)
			}
		})
	}
}

// The seed case variables-escape-otel-env: escaped references stay literal,
// the rule name is looked up eight levels up.
func TestResolveReferencesOtel(t *testing.T) {
	rule := mustJSON(`{
	  "name": "imbue-pod-spec",
	  "mutate": {"patchStrategicMerge": {"spec": {"containers": [{"(name)": "?*", "env": [
	    {"name": "NODE_NAME", "value": "mutated_name"},
	    {"name": "OTEL_RESOURCE_ATTRIBUTES", "value": "k8s.namespace.name=\\$(POD_NAMESPACE), k8s.node.name=\\$(NODE_NAME), k8s.pod.name=\\$(POD_NAME), k8s.pod.primary_ip_address=\\$(POD_IP_ADDRESS), k8s.pod.service_account.name=\\$(POD_SERVICE_ACCOUNT), rule_applied=$(./../../../../../../../../name)"}
	  ]}]}}}
	}`)
	got, err := ResolveReferences(rule)
	if err != nil {
		t.Fatal(err)
	}
	env := got.(map[string]any)["mutate"].(map[string]any)["patchStrategicMerge"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["env"].([]any)
	want := "k8s.namespace.name=$(POD_NAMESPACE), k8s.node.name=$(NODE_NAME), k8s.pod.name=$(POD_NAME), k8s.pod.primary_ip_address=$(POD_IP_ADDRESS), k8s.pod.service_account.name=$(POD_SERVICE_ACCOUNT), rule_applied=imbue-pod-spec"
	if v := env[1].(map[string]any)["value"]; v != want {
		t.Fatalf("got  %q\nwant %q", v, want)
	}
}

func TestResolveReferencesSharing(t *testing.T) {
	doc := mustJSON(`{"keep": {"x": [1, 2]}, "change": {"a": "b", "r": "$(./a)"}}`).(map[string]any)
	doc["change"].(map[string]any)["r"] = "$(./../a)"
	got, err := ResolveReferences(doc)
	if err != nil {
		t.Fatal(err)
	}
	out := got.(map[string]any)
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	if !same(out["keep"], doc["keep"]) {
		t.Error("unchanged subtree copied")
	}
	if same(out["change"], doc["change"]) {
		t.Error("changed map not copied")
	}
	plain := mustJSON(`{"a": {"b": ["c"]}}`)
	got, err = ResolveReferences(plain)
	if err != nil || !same(got, plain) {
		t.Fatalf("document without references was copied (%v)", err)
	}
	typed := map[string]any{"l": []map[string]any{{"a": "x", "b": "$(./../a)"}}}
	got, err = ResolveReferences(typed)
	if err != nil || toJSON(got) != `{"l":[{"a":"x","b":"x"}]}` {
		t.Fatalf("[]map[string]any: %s, %v", toJSON(got), err)
	}
	var nr *NotResolvedReferenceError
	if _, err := ResolveReferences(mustJSON(`{"a": true, "b": "$(./../a)"}`)); !errors.As(err, &nr) {
		t.Fatalf("want *NotResolvedReferenceError, got %v", err)
	}
	var re *ReferenceError
	if _, err := ResolveReferences(mustJSON(`{"b": "$(./../a)"}`)); !errors.As(err, &re) || re.Path != "/b" || re.Reference != "$(./../a)" {
		t.Fatalf("want *ReferenceError, got %v", err)
	}
}

func TestRemoveAnchorsFromPath(t *testing.T) {
	tests := map[string]string{
		"":                       "",
		"/":                      "/",
		"/spec/(containers)/0":   "/spec/containers/0",
		"/spec/^(containers)/0":  "/spec/containers/0",
		"/a/+(b)/=(c)/X(d)/<(e)": "/a/b/c/d/e",
		"/a/()/b":                "/a/()/b",
		"/a//b/../c":             "/a/c",
		"a/(b)":                  "a/b",
		// a prefix without "(" is no anchor (found by FuzzSubstitute)
		"/X)":    "/X)",
		"/Xab)":  "/Xab)",
		"/+)":    "/+)",
		"/<a(b)": "/<a(b)",
	}
	for in, want := range tests {
		if got := removeAnchorsFromPath(in); got != want {
			t.Errorf("removeAnchorsFromPath(%q) = %q, want %q", in, got, want)
		}
	}
}
