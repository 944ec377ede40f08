package typeconv_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/internal/typeconv"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
 "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]},{"name":"d","image":"busybox","args":["x"]}]}}`

func TestApply(t *testing.T) {
	c, err := typeconv.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, obj, patch string
		guard            bool
		want, err        string
	}{{
		name:  "labels merge",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"b":"2"}}}`,
		guard: true,
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"}},
 "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]},{"name":"d","image":"busybox","args":["x"]}]}}`,
	}, {
		name:  "containers merged by name, new ones appended",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"d","imagePullPolicy":"Always"},{"name":"e","image":"x"}]}}`,
		guard: true,
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
 "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]},{"name":"d","image":"busybox","args":["x"],"imagePullPolicy":"Always"},{"name":"e","image":"x"}]}}`,
	}, {
		name:  "ports keyed by containerPort and the protocol's default",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"c","ports":[{"containerPort":80,"name":"http"}]}]}}`,
		guard: true,
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
 "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80,"name":"http"}]},{"name":"d","image":"busybox","args":["x"]}]}}`,
	}, {
		name:  "an atomic list is refused under the guard",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"d","args":["y"]}]}}`,
		guard: true,
		err:   `invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args`,
	}, {
		name:  "an atomic list is replaced without the guard",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"d","args":["y"]}]}}`,
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
 "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]},{"name":"d","image":"busybox","args":["y"]}]}}`,
	}, {
		name:  "a field the schema does not declare",
		obj:   pod,
		patch: `{"apiVersion":"v1","kind":"Pod","spec":{"nope":1}}`,
		guard: true,
		err:   "failed to convert patch object to typed object: .spec.nope: field not declared in schema",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obj(t, tt.obj)
			before, _ := json.Marshal(o)
			got, err := c.Apply(o, obj(t, tt.patch), tt.guard)
			if after, _ := json.Marshal(o); string(after) != string(before) {
				t.Fatal("the object was modified")
			}
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("error %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// the result's numbers are those of the inputs
			g, _ := json.Marshal(got)
			if !reflect.DeepEqual(obj(t, string(g)), obj(t, tt.want)) {
				t.Fatalf("got %s\nwant %s", g, tt.want)
			}
		})
	}
}

func TestCustomKinds(t *testing.T) {
	c, err := typeconv.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has("apps/v1", "Deployment") || !c.Has("v1", "Namespace") || c.Has("example.com/v1", "Widget") {
		t.Fatal("the table misses built-in kinds or has custom ones")
	}
	w := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"tags":["a"]}}`)
	got, err := c.Apply(w, obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"color":"red"}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	if want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"color":"red","size":1,"tags":["a"]}}`; string(g) != want {
		t.Fatalf("got %s, want %s", g, want)
	}
	// lists of a kind without a schema are replaced
	got, err = c.Apply(w, obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","spec":{"tags":["b"]}}`), true)
	if err != nil {
		t.Fatal(err)
	}
	g, _ = json.Marshal(got)
	if want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":1,"tags":["b"]}}`; string(g) != want {
		t.Fatalf("got %s, want %s", g, want)
	}
}

func BenchmarkDecode(b *testing.B) {
	raw := typeconv.BuiltinTableJSON()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := typeconv.Decode(raw); err != nil {
			b.Fatal(err)
		}
	}
}
