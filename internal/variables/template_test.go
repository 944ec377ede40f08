package variables

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// requestData is an evaluation context modelled on the seed documents.
func requestData() map[string]any {
	return mustJSON(`{
	  "request": {
	    "operation": "CREATE",
	    "namespace": "team-a",
	    "userInfo": {"username": "system:serviceaccount:nirmata:user1", "groups": ["system:authenticated"]},
	    "roles": ["foo:dave"],
	    "clusterRoles": ["dave-admin", "system:basic-user"],
	    "object": {
	      "metadata": {
	        "name": "request-demo",
	        "namespace": "team-a",
	        "labels": {"app": "web", "zonekey": "US-EAST-1A"},
	        "annotations": {"foo.k8s.corp.net/bar": "yes", "test": "name", "targetnew": "target", "target": "current_target"}
	      },
	      "spec": {"kind": "foo", "port": "443", "containers": [{"name": "nginx", "image": "nginx:1.25"}]}
	    },
	    "oldObject": {
	      "metadata": {
	        "name": "old-demo",
	        "annotations": {"targetnew": "target", "target": "nested_target"}
	      }
	    }
	  },
	  "serviceAccountName": "user1",
	  "serviceAccountNamespace": "nirmata",
	  "LabelsCM": {"data": {"web": "frontend-team", "db": "storage-team"}},
	  "images": {
	    "containers": {
	      "nginx": {"registry": "docker.io", "path": "library/nginx", "name": "nginx", "tag": "1.25", "reference": "docker.io/library/nginx:1.25"},
	      "my-container": {"registry": "ghcr.io", "tag": "v3"}
	    }
	  },
	  "simple": {
	    "int": 5, "float": -5.5, "bool": false, "null": null, "string": "example",
	    "array": ["value1", "value2", "value3"],
	    "map": {"key1": "value1", "key2": "value2", "key3": "value3"},
	    "html": {"a": "<b>&"}
	  },
	  "hostile": {
	    "note": "{{ request.object.metadata.name }}",
	    "userinfo": "{{ request.userInfo }}",
	    "ref": "$(./../x)",
	    "backslash": "x\\",
	    "closer": "}}",
	    "hcl": "to_string\n{{ some hcl tempalte }}"
	  }
	}`).(map[string]any)
}

func TestRender(t *testing.T) {
	tests := []struct {
		name    string
		tmpl    string
		opts    []Option
		plain   bool // use the plain Evaluator contract (no Lookup)
		want    any
		wantErr string
	}{
		// policy-variables.md: admission review data
		{name: "resource name", tmpl: "{{request.object.metadata.name}}", want: "request-demo"},
		{name: "metadata object", tmpl: "{{request.object.metadata.labels}}", want: map[string]any{"app": "web", "zonekey": "US-EAST-1A"}},
		{name: "username", tmpl: "{{request.userInfo.username}}", want: "system:serviceaccount:nirmata:user1"},
		{name: "operation", tmpl: "{{request.operation}}", want: "CREATE"},
		{name: "combined", tmpl: "ns-owner-{{request.namespace}}-{{request.userInfo.username}}-binding", want: "ns-owner-team-a-system:serviceaccount:nirmata:user1-binding"},
		{name: "service account name", tmpl: "{{serviceAccountName}}", want: "user1"},
		{name: "service account namespace", tmpl: "{{serviceAccountNamespace}}", want: "nirmata"},
		{name: "roles list", tmpl: "{{request.roles}}", want: []any{"foo:dave"}},
		{name: "roles in string", tmpl: "roles={{request.roles}}", want: `roles=["foo:dave"]`},
		// images
		{name: "image registry", tmpl: "{{images.containers.nginx.registry}}", want: "docker.io"},
		{name: "image reference", tmpl: "{{ images.containers.nginx.reference }}", want: "docker.io/library/nginx:1.25"},
		{name: "quoted container name", tmpl: `{{images.containers."my-container".tag}}`, want: "v3"},
		// keys with special characters
		{name: "quoted annotation", tmpl: `{{request.object.metadata.annotations."foo.k8s.corp.net/bar" || ''}}`, want: "yes"},
		{name: "quoted annotation fallback", tmpl: `{{request.object.metadata.annotations."foo.k8s.corp.net/baz" || ''}}`, want: ""},
		// escaping
		{name: "escaped", tmpl: `\{{ request.object.metadata.name }}`, want: "{{ request.object.metadata.name }}"},
		{name: "escaped in text", tmpl: `name={{serviceAccountName}} tmpl=\{{ x }}`, want: "name=user1 tmpl={{ x }}"},
		{name: "double backslash keeps one", tmpl: `\\{{serviceAccountName}}`, want: `\{{serviceAccountName}}`},
		{name: "backslash not before braces", tmpl: `a\b {{serviceAccountName}}`, want: `a\b user1`},
		{name: "escaped unterminated keeps backslash", tmpl: `\{{ x`, want: `\{{ x`},
		{name: "escaped outer nested inner", tmpl: `\{{request.object.metadata.annotations.{{request.object.metadata.annotations.targetnew}}}}`, want: "{{request.object.metadata.annotations.target}}"},
		{name: "reference syntax is not a variable", tmpl: `$(./../x) {{serviceAccountName}}`, want: "$(./../x) user1"},
		// nested lookups
		{name: "nested lookup", tmpl: "{{LabelsCM.data.{{ request.object.metadata.labels.app }}}}", want: "frontend-team"},
		{name: "nested lookup spaced", tmpl: "{{ LabelsCM.data.{{ request.object.metadata.labels.app }} }}", want: "frontend-team"},
		{name: "nested lookup in text", tmpl: "team={{LabelsCM.data.{{request.object.metadata.labels.app}}}}!", want: "team=frontend-team!"},
		{name: "nested recursive", tmpl: "{{request.object.metadata.{{request.object.metadata.annotations.test}}}}", want: "request-demo"},
		{name: "nested inner missing", tmpl: "{{request.object.metadata.{{request.object.metadata.annotations.test2}}}}", wantErr: "variable request.object.metadata.annotations.test2 not resolved at path "},
		{name: "nested outer missing", tmpl: "{{request.object.metadata2.{{request.object.metadata.annotations.test}}}}", wantErr: "variable request.object.metadata2.name not resolved at path "},
		{name: "three levels", tmpl: "{{LabelsCM.data.{{request.object.metadata.labels.{{'app'}}}}}}", want: "frontend-team"},
		// shallow
		{name: "shallow whole", tmpl: "{{- serviceAccountName }}", want: "user1"},
		{name: "shallow embedded", tmpl: "# generated {{- serviceAccountName }}", want: "# generated user1"},
		{name: "shallow without space", tmpl: "{{-serviceAccountName}}", want: "user1"},
		// types
		{name: "int whole", tmpl: "{{ simple.int }}", want: float64(5)},
		{name: "int in string", tmpl: "content = {{ simple.int }}", want: "content = 5"},
		{name: "float in string", tmpl: "content = {{ simple.float }}", want: "content = -5.5"},
		{name: "bool whole", tmpl: "{{ simple.bool }}", want: false},
		{name: "bool in string", tmpl: "content = {{ simple.bool }}", want: "content = false"},
		{name: "null whole", tmpl: "{{ simple.null }}", want: nil},
		{name: "null in string", tmpl: "content = {{ simple.null }}", want: "content = null"},
		{name: "array whole", tmpl: "{{ simple.array }}", want: []any{"value1", "value2", "value3"}},
		{name: "map in string", tmpl: "content is {{ simple.map }}", want: `content is {"key1":"value1","key2":"value2","key3":"value3"}`},
		{name: "html escaped like upstream", tmpl: "x={{ simple.html }}", want: `x={"a":"\u003cb\u003e\u0026"}`},
		{name: "string in string", tmpl: "content = {{ simple.string }}", want: "content = example"},
		{name: "number spliced into outer", tmpl: "{{ simple.array[{{ `1` }}] }}", want: "value2"},
		{name: "leading space makes a string", tmpl: " {{ simple.int }}", want: " 5"},
		// braces inside expressions
		{name: "empty object literal", tmpl: "{{ simple.missing || `{}` }}", want: map[string]any{}},
		{name: "two-level braces are not a template", tmpl: "{{ x || `{\"a\":{\"b\":1}}` }}", want: "{{ x || `{\"a\":{\"b\":1}}` }}"},
		{name: "three opening braces", tmpl: "{{{serviceAccountName}}", want: "{user1"},
		{name: "group content", tmpl: "{{{serviceAccountName}}}", wantErr: "failed to resolve {serviceAccountName} at path : incorrect query {serviceAccountName}: unexpected '{'"},
		{name: "adjacent", tmpl: "{{serviceAccountName}}{{serviceAccountNamespace}}", want: "user1nirmata"},
		{name: "unterminated", tmpl: "{{ serviceAccountName", want: "{{ serviceAccountName"},
		{name: "single braces", tmpl: "{ serviceAccountName }", want: "{ serviceAccountName }"},
		// DELETE requests
		{name: "delete rewrites object", tmpl: "{{request.object.metadata.name}}", opts: []Option{WithDeleteRequest(true)}, want: "old-demo"},
		{name: "delete nested", tmpl: "{{request.object.metadata.annotations.{{request.object.metadata.annotations.targetnew}}}}", opts: []Option{WithDeleteRequest(true)}, want: "nested_target"},
		{name: "not delete", tmpl: "{{request.object.metadata.annotations.{{request.object.metadata.annotations.targetnew}}}}", opts: []Option{WithDeleteRequest(false)}, want: "current_target"},
		// unresolved
		{name: "missing", tmpl: "{{ simple.missing }}", wantErr: "variable simple.missing not resolved at path "},
		{name: "missing plain", tmpl: "{{ simple.missing }}", plain: true, wantErr: "variable simple.missing not resolved at path "},
		{name: "null plain is not found", tmpl: "{{ simple.null }}", plain: true, wantErr: "variable simple.null not resolved at path "},
		{name: "missing as nil", tmpl: "{{ simple.missing }}", opts: []Option{WithUnresolvedAsNil()}, want: nil},
		{name: "missing as nil in string", tmpl: "x-{{ simple.missing }}", opts: []Option{WithUnresolvedAsNil()}, want: "x-null"},
		{name: "bad query", tmpl: "{{ simple[ }}", wantErr: "failed to resolve simple[ at path : incorrect query simple[: unclosed ["},
		{name: "empty expression", tmpl: "{{}}", wantErr: "failed to resolve  at path : invalid query (nil)"},
		{name: "bad query not swallowed", tmpl: "{{ simple[ }}", opts: []Option{WithUnresolvedAsNil()}, wantErr: "failed to resolve simple[ at path : incorrect query simple[: unclosed ["},
		// data is not code
		{name: "hostile whole", tmpl: "{{ hostile.note }}", want: "{{ request.object.metadata.name }}"},
		{name: "hostile embedded", tmpl: "prefix {{ hostile.note }}", want: "prefix {{ request.object.metadata.name }}"},
		{name: "hostile userinfo embedded", tmpl: "who={{ hostile.userinfo }}", want: "who={{ request.userInfo }}"},
		{name: "hostile reference", tmpl: "r={{ hostile.ref }}", want: "r=$(./../x)"},
		{name: "hostile backslash does not escape the next variable", tmpl: "{{ hostile.backslash }}{{ serviceAccountName }}", want: `x\user1`},
		{name: "hostile closer", tmpl: "{{ hostile.closer }} and {{ serviceAccountName }}", want: "}} and user1"},
		{name: "vault hcl shallow", tmpl: "{{- hostile.hcl }}", want: "to_string\n{{ some hcl tempalte }}"},
		{name: "vault hcl embedded deep", tmpl: "# generated {{ hostile.hcl }}", want: "# generated to_string\n{{ some hcl tempalte }}"},
		{name: "vault hcl embedded shallow", tmpl: "# generated {{- hostile.hcl }}", want: "# generated to_string\n{{ some hcl tempalte }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			f := newFake(requestData())
			var ev Evaluator = f
			if tt.plain {
				ev = plainEvaluator{f}
			}
			got, err := tmpl.Render(ev, tt.opts...)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q (value %#v)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// The engine's evaluator reports missing keys with upstream's text; the
// resulting message is the one upstream puts in policy reports
// (seed case reporting-skip-and-error).
func TestRenderUpstreamMessage(t *testing.T) {
	tmpl, err := Parse("{{ request.object.metadata.annotations.owner }}", WithBasePath("/metadata/labels/owner"))
	if err != nil {
		t.Fatal(err)
	}
	data := requestData()
	delete(data["request"].(map[string]any)["object"].(map[string]any)["metadata"].(map[string]any), "annotations")
	f := newFake(data)
	f.strict = true
	_, err = tmpl.Render(f)
	want := `failed to resolve request.object.metadata.annotations.owner at path /metadata/labels/owner: JMESPath query failed: Unknown key "annotations" in path`
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v\nwant    %s", err, want)
	}
	var re *ResolveError
	if !errors.As(err, &re) || re.Variable != "request.object.metadata.annotations.owner" || re.Path != "/metadata/labels/owner" {
		t.Fatalf("not a *ResolveError with fields: %#v", err)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("errors.Is(err, ErrNotFound) = false")
	}
	// the lenient mode swallows not-found errors
	got, err := tmpl.Render(f, WithUnresolvedAsNil())
	if err != nil || got != nil {
		t.Fatalf("lenient: got %v, %v", got, err)
	}
}

// Values brought in by a variable are never evaluated: the evaluator is only
// asked the expressions written in the policy.
func TestDataIsNotCode(t *testing.T) {
	tests := []struct {
		tmpl  string
		asked []string
		want  any
	}{
		{
			tmpl:  "prefix {{ hostile.note }} {{ hostile.userinfo }}",
			asked: []string{"hostile.note", "hostile.userinfo"},
			want:  "prefix {{ request.object.metadata.name }} {{ request.userInfo }}",
		},
		{
			tmpl:  "{{ hostile.note }}",
			asked: []string{"hostile.note"},
			want:  "{{ request.object.metadata.name }}",
		},
		{
			// the inner value is spliced into the text of the outer expression
			// (it is part of that expression, by design) and the outer
			// expression is evaluated once; nothing inside the value is
			// evaluated on its own
			tmpl:  "{{ LabelsCM.data.{{ hostile.note }} }}",
			asked: []string{"hostile.note", "LabelsCM.data.{{ request.object.metadata.name }}"},
		},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		f := newFake(requestData())
		got, err := tmpl.Render(f)
		if tt.want != nil {
			if err != nil || got != tt.want {
				t.Errorf("%q: got %#v, %v; want %#v", tt.tmpl, got, err, tt.want)
			}
		}
		if asked := f.questions(); !reflect.DeepEqual(asked, tt.asked) {
			t.Errorf("%q: evaluator asked %q, want %q", tt.tmpl, asked, tt.asked)
		}
	}
}

func TestCurrentValue(t *testing.T) {
	data := requestData()
	tests := []struct {
		name   string
		path   string
		tmpl   string
		opts   []Option
		data   map[string]any
		want   any
		asked  string
		errMsg string
	}{
		{name: "mutate overlay", path: "/mutate/overlay/spec/kind", tmpl: "{{@}}", want: "foo", asked: "request.object.spec.kind"},
		{name: "function on current value", path: "/mutate/patchStrategicMerge/metadata/labels/zonekey", tmpl: "{{ to_lower('{{@}}') }}", want: "us-east-1a", asked: "to_lower('US-EAST-1A')"},
		{name: "regex style", path: "/mutate/overlay/spec/port", tmpl: "{{ regex_match('(443)', '{{@}}') }}", asked: "regex_match('(443)', '443')", errMsg: "incorrect query"},
		{name: "list index", path: "/mutate/patchStrategicMerge/spec/containers/0/image", tmpl: "{{@}}", want: "nginx:1.25", asked: "request.object.spec.containers[0].image"},
		{name: "foreach", path: "/mutate/foreach/0/patchStrategicMerge/spec/containers/0/image", tmpl: "{{ @ }}", want: "nginx:1.25", asked: "request.object.spec.containers[0].image"},
		{name: "quoted element", path: "/mutate/patchStrategicMerge/metadata/labels/app.kubernetes.io-name", tmpl: "{{@}}", asked: `request.object.metadata.labels."app.kubernetes.io-name"`, errMsg: "not resolved"},
		{name: "shallow", path: "/mutate/overlay/spec/kind", tmpl: "{{- @}}", want: "foo", asked: "request.object.spec.kind"},
		{name: "target in context", path: "/mutate/overlay/spec/kind", tmpl: "{{@}}", data: map[string]any{"target": map[string]any{"spec": map[string]any{"kind": "bar"}}}, want: "bar", asked: "target.spec.kind"},
		{name: "fixed prefix", path: "/mutate/overlay/spec/kind", tmpl: "{{@}}", opts: []Option{WithCurrentValuePrefix("request.oldObject")}, asked: "request.oldObject.spec.kind", errMsg: "not resolved"},
		{name: "delete rewrites current value", path: "/mutate/overlay/metadata/name", tmpl: "{{@}}", opts: []Option{WithDeleteRequest(true)}, want: "old-demo", asked: "request.oldObject.metadata.name"},
		{name: "short path", path: "/mutate/overlay", tmpl: "{{@}}", asked: "request.object", want: data["request"].(map[string]any)["object"]},
		{name: "at inside longer expression is not rewritten", path: "/mutate/overlay/spec/kind", tmpl: "{{ to_upper(@) }}", asked: "to_upper(@)", errMsg: "not resolved"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl, err := Parse(tt.tmpl, WithBasePath(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			d := tt.data
			if d == nil {
				d = requestData()
			} else {
				for k, v := range requestData() {
					if _, ok := d[k]; !ok {
						d[k] = v
					}
				}
			}
			f := newFake(d)
			got, err := tmpl.Render(f, tt.opts...)
			asked := f.questions()
			if !contains(asked, tt.asked) {
				t.Errorf("evaluator asked %q, want %q among them", asked, tt.asked)
			}
			if tt.errMsg != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errMsg) {
					t.Fatalf("error = %v, want %q", err, tt.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func TestParseStructure(t *testing.T) {
	tests := []struct {
		tmpl  string
		vars  []string // Expression of each variable, evaluation order
		whole bool
	}{
		{tmpl: "plain text"},
		{tmpl: "{{ a }}", vars: []string{"a"}, whole: true},
		{tmpl: " {{ a }}", vars: []string{"a"}},
		{tmpl: "{{a}}{{b}}", vars: []string{"a", "b"}},
		{tmpl: "{{a}}-{{b}}-{{c}}", vars: []string{"a", "b", "c"}},
		{tmpl: "{{a}}{{b}}{{c}}", vars: []string{"a", "c", "b"}}, // upstream's pass order
		{tmpl: "{{ x.{{ y }} }}", vars: []string{"y", "x.{{ y }}"}, whole: true},
		{tmpl: "{{- hcl }}", vars: []string{"hcl"}, whole: true},
		{tmpl: `\{{ a }}`},
		{tmpl: `\{{ a.{{ b }} }}`, vars: []string{"b"}},
		{tmpl: "{{ {a: b} }}", vars: []string{"{a: b}"}, whole: true},
		{tmpl: "{{{a}}}", vars: []string{"{a}"}, whole: true},
		{tmpl: "{{{a}}", vars: []string{"a"}},
		{tmpl: "{{ `{\"a\":{\"b\":1}}` }}"},
		{tmpl: "{{}}", vars: []string{""}, whole: true},
		{tmpl: "{{ a }", vars: nil},
		{tmpl: "}}{{ a }}{{", vars: []string{"a"}},
	}
	for _, tt := range tests {
		tmpl, err := Parse(tt.tmpl)
		if err != nil {
			t.Fatalf("%q: %v", tt.tmpl, err)
		}
		var got []string
		for _, v := range tmpl.Variables() {
			got = append(got, v.Expression)
		}
		if !reflect.DeepEqual(got, tt.vars) {
			t.Errorf("%q: variables %q, want %q", tt.tmpl, got, tt.vars)
		}
		if tmpl.HasVariables() != (len(tt.vars) > 0) {
			t.Errorf("%q: HasVariables = %v", tt.tmpl, tmpl.HasVariables())
		}
		if tmpl.whole != tt.whole {
			t.Errorf("%q: whole = %v, want %v", tt.tmpl, tmpl.whole, tt.whole)
		}
		if tmpl.String() != tt.tmpl {
			t.Errorf("String() = %q", tmpl.String())
		}
	}
}

func TestParseNestingLimit(t *testing.T) {
	deep := strings.Repeat("{{ a.", 5) + "b" + strings.Repeat(" }}", 5)
	if _, err := Parse(deep, WithMaxNesting(5)); err != nil {
		t.Fatalf("depth 5 within limit 5: %v", err)
	}
	_, err := Parse(deep, WithMaxNesting(4))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("want *ParseError, got %v", err)
	}
	if _, err := Parse("x", WithMaxNesting(0)); err == nil {
		t.Fatal("WithMaxNesting(0) accepted")
	}
}

func TestRenderNoEvaluator(t *testing.T) {
	tmpl, _ := Parse(`plain \{{ x }}`)
	if got, err := tmpl.Render(nil); err != nil || got != "plain {{ x }}" {
		t.Fatalf("got %v, %v", got, err)
	}
	tmpl, _ = Parse("{{ x }}")
	if _, err := tmpl.Render(nil); !errors.Is(err, ErrNilEvaluator) {
		t.Fatalf("got %v", err)
	}
	if _, err := tmpl.Render(newFake(nil), WithCurrentValuePrefix("")); err == nil {
		t.Fatal("empty prefix accepted")
	}
}

func TestMarshalFailure(t *testing.T) {
	tmpl, _ := Parse("x={{ bad }}")
	ev := EvaluatorFunc(func(string) (any, error) { return map[any]any{1: 2}, nil })
	_, err := tmpl.Render(ev)
	want := "failed to resolve bad at path : failed to marshal map[interface {}]interface {}: map[1:2]"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}
