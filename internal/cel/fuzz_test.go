package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// FuzzCompileEval compiles an expression as a variable and as a
// validation, and evaluates what compiles on an object decoded from JSON:
// any input gives a program or a CompileError, and a value or an error,
// never a panic or an evaluation that outlives its deadline.
func FuzzCompileEval(f *testing.F) {
	f.Add("object.spec.containers.all(c, has(c.image) && c.image.contains(':'))", []byte(`{"spec":{"containers":[{"image":"nginx:1"}]}}`))
	f.Add("variables.v.exists(x, x > 2) || params == null", []byte(`{"a":[1,2,3]}`))
	f.Add("object.a.map(x, [x, x, x]).all(l, l.all(y, quantity(string(y) + 'Mi').isGreaterThan(quantity('1'))))", []byte(`{"a":[1,2,3]}`))
	f.Add("'x'.repeat(1000000).size() > 0", []byte(`null`))
	f.Add("cidr('10.0.0.0/8').containsIP(object.ip) && isURL(object.u) && semver(object.v).major() > 0", []byte(`{"ip":"10.0.0.1","u":"https://a","v":"1.2.3"}`))
	e := env(f)
	f.Fuzz(func(t *testing.T, expr string, raw []byte) {
		if len(expr) > 4096 || len(raw) > 1<<16 {
			return
		}
		var obj map[string]any
		_ = json.Unmarshal(raw, &obj)
		c := e.NewCompiler(true)
		_, verr := c.AddVariable("v", "object.?a.orValue([1, 2, 3])")
		if verr != nil {
			t.Fatal(verr)
		}
		var progs []*cel.Program
		for _, k := range []cel.Kind{cel.Variable, cel.Validation} {
			p, err := c.Compile(expr, k)
			if err != nil {
				var ce *cel.CompileError
				if !errors.As(err, &ce) {
					t.Fatalf("%T is not a CompileError: %v", err, err)
				}
				continue
			}
			progs = append(progs, p)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		in := &cel.Input{Object: obj, Params: obj, Request: map[string]any{"operation": "CREATE"}}
		for _, p := range progs {
			start := time.Now()
			_, _ = c.NewEvaluation(ctx, in, nil).Eval(p)
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("evaluation took %v", d)
			}
		}
	})
}

// FuzzLibraries compiles and evaluates expressions in an environment with
// Kyverno's libraries, on in-memory hosts, with JSON input: a program or a
// CompileError, a value or an error, never a panic or an evaluation that
// outlives its deadline.
func FuzzLibraries(f *testing.F) {
	f.Add(`json.marshal(json.unmarshal(object.s))`, []byte(`{"s":"{\"a\":[1,2]}"}`))
	f.Add(`yaml.parse(object.s).a == 1`, []byte(`{"s":"a: 1"}`))
	f.Add(`listObjToMap(object.l, object.l, "k", "v")`, []byte(`{"l":[{"k":"a","v":1},{"k":2}]}`))
	f.Add(`random(object.s).size()`, []byte(`{"s":"[a-z]{3}(x|y)*"}`))
	f.Add(`gzip.decompress(base64.decode(object.s))`, []byte(`{"s":"H4sIAAAAAAAA/8pIzcnJBwQAAP//hqYQNgUAAAA="}`))
	f.Add(`x509.decode(object.s).IsCA`, []byte(`{"s":"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"}`))
	f.Add(`dyn(resource.List("v1", object.s, "")).items.size() > 0 && image(object.s).registry() != ""`, []byte(`{"s":"configmaps"}`))
	f.Add(`math.round(double(object.n), 2) == 1.0 && time.toCron(time.now()) != "" && md5(object.s) != ""`, []byte(`{"n":1.005,"s":"x"}`))
	f.Add(`http.Post("https://api.test/echo", object).received != null`, []byte(`{"a":[true,null,{"b":"c"}]}`))
	e := libEnv(f)
	f.Fuzz(func(t *testing.T, expr string, raw []byte) {
		if len(expr) > 4096 || len(raw) > 1<<16 {
			return
		}
		var obj map[string]any
		_ = json.Unmarshal(raw, &obj)
		for _, ns := range []string{"", "prod"} {
			var opts []cel.CompilerOption
			if ns != "" {
				opts = append(opts, cel.InNamespace(ns))
			}
			c := e.NewCompiler(false, opts...)
			p, err := c.Compile(expr, cel.Variable)
			if err != nil {
				var ce *cel.CompileError
				if !errors.As(err, &ce) {
					t.Fatalf("%T is not a CompileError: %v", err, err)
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			_, _ = c.NewEvaluation(ctx, &cel.Input{Object: obj, Libraries: testLibraries()}, nil).Eval(p)
			cancel()
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("evaluation took %v", d)
			}
		}
	})
}
