package variables

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestTreeSubstitute(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		doc     string
		opts    []Option
		want    string
		wantErr string
	}{
		{
			name: "rule body",
			doc: `{
			  "kind": "{{request.object.metadata.name}}",
			  "name": "ns-owner-{{request.object.metadata.name}}",
			  "data": {"rules": [{"apiGroups": ["{{request.object.metadata.name}}"], "resources": ["namespaces"], "verbs": ["*"]}]}
			}`,
			want: `{"data":{"rules":[{"apiGroups":["request-demo"],"resources":["namespaces"],"verbs":["*"]}]},"kind":"request-demo","name":"ns-owner-request-demo"}`,
		},
		{
			name:    "failure",
			doc:     `{"kind": "ok", "name": "ns-owner-{{request.object.metadata.name1}}"}`,
			wantErr: "variable request.object.metadata.name1 not resolved at path /name",
		},
		{
			name: "typed values keep their type",
			doc:  `{"spec": {"content": "{{ simple.array }}", "n": "{{ simple.int }}", "b": "{{ simple.bool }}", "s": "n={{ simple.int }}"}}`,
			want: `{"spec":{"b":false,"content":["value1","value2","value3"],"n":5,"s":"n=5"}}`,
		},
		{
			name: "null field",
			doc:  `{"spec": {"content": "{{ simple.null }}"}}`,
			want: `{"spec":{"content":null}}`,
		},
		{
			name: "at with paths",
			doc:  `{"mutate": {"overlay": {"spec": {"kind": "{{@}}", "data": {"rules": [{"apiGroups": ["{{request.object.metadata.name}}"]}]}}}}}`,
			want: `{"mutate":{"overlay":{"spec":{"data":{"rules":[{"apiGroups":["request-demo"]}]},"kind":"foo"}}}}`,
		},
		{
			name: "base path",
			base: "/mutate/patchStrategicMerge",
			doc:  `{"metadata": {"labels": {"zonekey": "{{ to_lower('{{@}}') }}"}}}`,
			want: `{"metadata":{"labels":{"zonekey":"us-east-1a"}}}`,
		},
		{
			name:    "error path includes base",
			base:    "/validate/message",
			doc:     `"value {{ nope }}"`,
			wantErr: "variable nope not resolved at path /validate/message",
		},
		{
			name: "key substitution",
			doc:  `{"labels": {"{{ request.object.metadata.labels.app }}": "x", "static": "{{ serviceAccountName }}"}}`,
			want: `{"labels":{"static":"user1","web":"x"}}`,
		},
		{
			name: "key and value substitution",
			doc:  `{"{{ serviceAccountName }}": {"v": "{{ serviceAccountNamespace }}"}}`,
			want: `{"user1":{"v":"nirmata"}}`,
		},
		{
			name:    "key must be a string",
			doc:     `{"m": {"{{ simple.int }}": "x"}}`,
			wantErr: `expected string after substituting variables in key "{{ simple.int }}"`,
		},
		{
			name: "nil key keeps the key",
			doc:  `{"m": {"{{ simple.null }}": "x"}}`,
			want: `{"m":{"{{ simple.null }}":"x"}}`,
		},
		{
			name:    "key error path is the map path",
			doc:     `{"m": {"{{ nope }}": "x"}}`,
			wantErr: "variable nope not resolved at path /m",
		},
		{
			name: "escapes in values and keys",
			doc:  `{"a": "\\{{ request.object.metadata.name }}", "\\{{ k }}": "v", "b": "{{ serviceAccountName }}"}`,
			want: `{"a":"{{ request.object.metadata.name }}","b":"user1","{{ k }}":"v"}`,
		},
		{
			name: "delete",
			doc:  `{"n": "{{ request.object.metadata.name }}"}`,
			opts: []Option{WithDeleteRequest(true)},
			want: `{"n":"old-demo"}`,
		},
		{
			name: "scalars untouched",
			doc:  `{"a": 1, "b": true, "c": null, "d": [1, "x", {"e": 2.5}], "f": "{{ serviceAccountName }}"}`,
			want: `{"a":1,"b":true,"c":null,"d":[1,"x",{"e":2.5}],"f":"user1"}`,
		},
		{
			name: "hostile data copied whole and embedded",
			doc:  `{"metadata": {"annotations": {"copied": "{{ hostile.note }}", "copied2": "prefix {{ hostile.note }}"}}}`,
			want: `{"metadata":{"annotations":{"copied":"{{ request.object.metadata.name }}","copied2":"prefix {{ request.object.metadata.name }}"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := mustJSON(tt.doc)
			before := toJSON(doc)
			tree, err := Compile(doc, WithBasePath(tt.base))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tree.Substitute(newFake(requestData()), tt.opts...)
			if after := toJSON(doc); after != before {
				t.Fatalf("input modified: %s", after)
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
			// a second evaluation gives the same result: nothing was shared
			// mutably with the compiled document
			again, err := tree.Substitute(newFake(requestData()), tt.opts...)
			if err != nil || toJSON(again) != tt.want {
				t.Fatalf("second run: %s, %v", toJSON(again), err)
			}
		})
	}
}

func TestTreeCopyOnWrite(t *testing.T) {
	doc := mustJSON(`{"static": {"deep": {"x": [1, 2, {"y": "z"}]}}, "spec": {"name": "{{ serviceAccountName }}", "other": {"k": "v"}}, "list": ["a", {"b": "{{ serviceAccountNamespace }}"}, {"c": "d"}]}`)
	tree, err := Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	base := tree.Document().(map[string]any)
	got, err := tree.Substitute(newFake(requestData()))
	if err != nil {
		t.Fatal(err)
	}
	out := got.(map[string]any)
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	if !same(out["static"], base["static"]) {
		t.Error("unchanged subtree was copied")
	}
	if !same(out["spec"].(map[string]any)["other"], base["spec"].(map[string]any)["other"]) {
		t.Error("unchanged sibling was copied")
	}
	if !same(out["list"].([]any)[2], base["list"].([]any)[2]) {
		t.Error("unchanged list element was copied")
	}
	if same(out["spec"], base["spec"]) || same(out["list"], base["list"]) {
		t.Error("changed path was not copied")
	}
	if base["spec"].(map[string]any)["name"] != "{{ serviceAccountName }}" {
		t.Error("compiled document was modified")
	}
	// the compiled document does not alias the input
	doc.(map[string]any)["static"].(map[string]any)["deep"] = "changed"
	if _, ok := tree.Document().(map[string]any)["static"].(map[string]any)["deep"].(map[string]any); !ok {
		t.Error("Tree aliases the input document")
	}
}

func TestTreeWithoutVariables(t *testing.T) {
	doc := mustJSON(`{"a": {"b": ["c", 1, true, null]}, "e": "\\{{ not a variable }}"}`)
	tree, err := Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if tree.HasVariables() {
		t.Fatal("HasVariables = true")
	}
	got, err := tree.Substitute(nil)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(tree.Document()).UnsafePointer() {
		t.Fatal("document without variables was copied")
	}
	if s := toJSON(got); s != `{"a":{"b":["c",1,true,null]},"e":"{{ not a variable }}"}` {
		t.Fatalf("got %s", s)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = tree.Substitute(nil) }); allocs != 0 {
		t.Fatalf("Substitute without variables allocates %v times", allocs)
	}
}

func TestCompileInputs(t *testing.T) {
	doc := map[string]any{
		"i":   int(1),
		"i64": int64(2),
		"num": json.Number("3.5"),
		"f32": float32(1.5),
		"lm":  []map[string]any{{"a": "{{ serviceAccountName }}"}},
		"s":   "x={{ simple.int }}",
	}
	tree, err := Compile(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tree.Substitute(newFake(requestData()))
	if err != nil {
		t.Fatal(err)
	}
	if s := toJSON(got); s != `{"f32":1.5,"i":1,"i64":2,"lm":[{"a":"user1"}],"num":3.5,"s":"x=5"}` {
		t.Fatalf("got %s", s)
	}
	// values from the evaluator in other Go number types render like JSON
	tmpl, _ := Parse("n={{ x }}")
	for _, v := range []any{int(7), int64(7), json.Number("7"), float64(7), uint8(7)} {
		got, err := tmpl.Render(EvaluatorFunc(func(string) (any, error) { return v, nil }))
		if err != nil || got != "n=7" {
			t.Errorf("%T: got %v, %v", v, got, err)
		}
	}

	_, err = Compile(map[string]any{"a": []any{struct{}{}}})
	var ide *InvalidDocumentError
	if !errors.As(err, &ide) || ide.Path != "/a/0" {
		t.Fatalf("want *InvalidDocumentError at /a/0, got %v", err)
	}
	if !strings.Contains(err.Error(), "struct {}") {
		t.Fatalf("message: %v", err)
	}
}

func TestTreeVariables(t *testing.T) {
	tree, err := Compile(mustJSON(`{"a": {"{{ k }}": ["x {{ b.{{ c }} }}"]}}`), WithBasePath("/rule"))
	if err != nil {
		t.Fatal(err)
	}
	got := tree.Variables()
	want := []Variable{
		{Path: "/rule/a", Key: true, Source: "{{ k }}", Expression: "k"},
		{Path: "/rule/a/{{ k }}/0", Source: "{{ c }}", Expression: "c"},
		{Path: "/rule/a/{{ k }}/0", Source: "{{ b.{{ c }} }}", Expression: "b.{{ c }}", Nested: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestSubstituteErrors(t *testing.T) {
	tree, _ := Compile(mustJSON(`{"a": "{{ x }}"}`))
	if _, err := tree.Substitute(nil); !errors.Is(err, ErrNilEvaluator) {
		t.Fatalf("got %v", err)
	}
	if _, err := Compile("x", WithMaxNesting(-1)); err == nil {
		t.Fatal("bad option accepted")
	}
	if _, err := tree.Substitute(newFake(nil), func(*evalConfig) error { return errors.New("bad") }); err == nil {
		t.Fatal("option error ignored")
	}
}

// Upstream traverses a structured value that replaced a whole field and
// substitutes the strings inside it; gavel keeps it as data.
func TestStructuredValueIsNotTraversed(t *testing.T) {
	tree, err := Compile(mustJSON(`{"copy": "{{ hostile }}"}`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(requestData())
	got, err := tree.Substitute(f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.(map[string]any)["copy"], requestData()["hostile"]) {
		t.Fatalf("got %s", toJSON(got))
	}
	if asked := f.questions(); !reflect.DeepEqual(asked, []string{"hostile"}) {
		t.Fatalf("evaluator asked %q", asked)
	}
}

func TestConcurrentSubstitute(t *testing.T) {
	tree, err := Compile(mustJSON(`{"a": "{{ serviceAccountName }}", "b": {"x": "{{ to_upper('{{@}}') }}"}, "{{ serviceAccountNamespace }}": ["x {{ simple.int }}"]}`), WithBasePath("/mutate/overlay"))
	if err != nil {
		t.Fatal(err)
	}
	data := requestData()
	data["request"].(map[string]any)["object"].(map[string]any)["b"] = map[string]any{"x": "low"}
	want := `{"a":"user1","b":{"x":"LOW"},"nirmata":["x 5"]}`
	done := make(chan string, 8)
	for i := 0; i < 8; i++ {
		go func() {
			var last string
			for j := 0; j < 50; j++ {
				got, err := tree.Substitute(newFake(data))
				if err != nil {
					last = err.Error()
					break
				}
				last = toJSON(got)
			}
			done <- last
		}()
	}
	for i := 0; i < 8; i++ {
		if got := <-done; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
}

// TestFindMatchesCompile checks that Find lists what Compile lists.
func TestFindMatchesCompile(t *testing.T) {
	docs := []any{
		map[string]any{
			"a":                   "{{ request.object.metadata.name }}",
			"{{ key }}":           []any{"x", "{{ a.{{ b }} }}", map[string]any{"c": "\\{{ escaped }}"}},
			"nested":              map[string]any{"list": []any{map[string]any{"d": "pre {{ e }} post {{ f }}"}}},
			"\\{{ escaped key }}": "plain",
		},
		"{{ @ }}",
		[]any{1.0, true, nil, "{{ g }}"},
	}
	for i, doc := range docs {
		for _, opts := range [][]CompileOption{nil, {WithBasePath("/validate/pattern")}} {
			tree, cerr := Compile(doc, opts...)
			vars, ferr := Find(doc, opts...)
			if (cerr != nil) != (ferr != nil) {
				t.Fatalf("doc %d: Compile error %v, Find error %v", i, cerr, ferr)
			}
			if cerr != nil {
				continue
			}
			if !reflect.DeepEqual(tree.Variables(), vars) {
				t.Errorf("doc %d: Find %+v\nCompile %+v", i, vars, tree.Variables())
			}
		}
	}
	deep := "{{ a }}"
	for i := 0; i < 70; i++ {
		deep = "{{ x" + deep + " }}"
	}
	_, cerr := Compile(map[string]any{"k": deep})
	_, ferr := Find(map[string]any{"k": deep})
	if cerr == nil || ferr == nil || cerr.Error() != ferr.Error() {
		t.Errorf("nesting errors: Compile %v, Find %v", cerr, ferr)
	}
}
