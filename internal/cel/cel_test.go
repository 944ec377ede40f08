package cel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cel"
)

var (
	envOnce sync.Once
	testEnv *cel.Env
	envErr  error
)

func env(t testing.TB) *cel.Env {
	t.Helper()
	envOnce.Do(func() { testEnv, envErr = cel.NewEnv() })
	if envErr != nil {
		t.Fatal(envErr)
	}
	return testEnv
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name   string
		params bool
		vars   [][2]string
		expr   string
		kind   cel.Kind
		want   string // substring of the error, "" for no error
	}{
		{name: "valid", expr: "object.spec.replicas > 1"},
		{name: "syntax", expr: "object.spec.(", want: "compilation failed"},
		{name: "unknown function", expr: "object.spec.containers.allOf(c, true)", want: "undeclared reference to 'allOf'"},
		{name: "not bool", expr: "'abc'", want: "must evaluate to bool but got string"},
		{name: "dyn is not bool", expr: "object.spec", want: "must evaluate to bool but got dyn"},
		{name: "message must be string", expr: "1 + 1", kind: cel.MessageExpression, want: "must evaluate to string but got int"},
		{name: "message", expr: "'replicas: ' + string(object.spec.replicas)", kind: cel.MessageExpression},
		{name: "audit annotation null", expr: "null", kind: cel.AuditAnnotation},
		{name: "audit annotation bool", expr: "true", kind: cel.AuditAnnotation, want: "must evaluate to one of"},
		{name: "variable of any type", expr: "object.metadata.name", kind: cel.Variable},
		{name: "params undeclared", expr: "params.x == 1", want: "undeclared reference to 'params'"},
		{name: "params declared", params: true, expr: "params.x == 1"},
		{name: "undefined variable", expr: "variables.nope", want: "undefined field 'nope'"},
		{name: "typed variable", vars: [][2]string{{"isProd", "object.metadata.namespace == 'prod'"}}, expr: "variables.isProd"},
		{name: "variable type checked", vars: [][2]string{{"n", "1"}}, expr: "variables.n == 'x'", want: "no matching overload"},
		{name: "request fields typed", expr: "request.operation == 'CREATE' && request.userInfo.username != ''"},
		{name: "request unknown field", expr: "request.nope == 'x'", want: "undefined field 'nope'"},
		{name: "namespaceObject typed", expr: "namespaceObject.metadata.labels['env'] == 'prod'"},
		{name: "authorizer in validation", expr: "authorizer.group('').resource('pods').check('create').allowed()"},
		{name: "no authorizer in messages", expr: "authorizer.group('').resource('pods').check('create').reason()", kind: cel.MessageExpression, want: "undeclared reference to 'authorizer'"},
		{name: "kubernetes libraries", expr: "quantity('1Gi').isGreaterThan(quantity('1Mi')) && isIP('10.0.0.1') && cidr('10.0.0.0/8').containsIP(ip('10.1.2.3')) && isSemver('1.2.3') && url('https://x.io/a').getHost() == 'x.io' && [1,2].isSorted() && 'a1'.find('[0-9]') == '1' && sets.contains([1,2],[1]) && format.dns1123Label().validate('ok').hasValue() == false"},
		{name: "regex literal checked", expr: "'a'.matches('[')", want: "compilation failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := env(t).NewCompiler(tt.params)
			for _, v := range tt.vars {
				if _, err := c.AddVariable(v[0], v[1]); err != nil {
					t.Fatalf("variable %s: %v", v[0], err)
				}
			}
			_, err := c.Compile(tt.expr, tt.kind)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error %q, want it to contain %q", err, tt.want)
			}
			if err != nil {
				var ce *cel.CompileError
				if !errors.As(err, &ce) || ce.Expression != tt.expr {
					t.Fatalf("error %T %v is not a CompileError for the expression", err, err)
				}
			}
		})
	}
}

func TestVariablesInOrder(t *testing.T) {
	c := env(t).NewCompiler(false)
	if _, err := c.AddVariable("a", "variables.b"); err == nil {
		t.Fatal("a variable sees a later one")
	}
	if _, err := c.AddVariable("b", "1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddVariable("b", "2"); err == nil {
		t.Fatal("a variable defined twice")
	}
}

type allowList map[string]bool

func (a allowList) Authorize(_ context.Context, c cel.Check) (bool, string, error) {
	if c.Verb == "explode" {
		return false, "", errors.New("authorizer down")
	}
	ok := a[c.User.Username+":"+c.Verb+":"+c.Resource]
	return ok, "listed", nil
}

func pod() map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "prod", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"replicas": float64(3),
			"ratio":    0.5,
			"containers": []any{
				map[string]any{"name": "a", "image": "nginx:1.25", "ports": []any{map[string]any{"containerPort": float64(80)}}},
				map[string]any{"name": "b", "image": "busybox"},
			},
		},
	}
}

func TestEval(t *testing.T) {
	in := func() *cel.Input {
		return &cel.Input{
			Object:    pod(),
			Request:   map[string]any{"operation": "CREATE", "userInfo": map[string]any{"username": "alice"}},
			Namespace: map[string]any{"metadata": map[string]any{"name": "prod", "labels": map[string]any{"env": "production"}}},
			Params:    map[string]any{"maxReplicas": float64(5), "registries": []any{"nginx"}},
		}
	}
	tests := []struct {
		name  string
		vars  [][2]string
		expr  string
		input func(*cel.Input)
		want  any    // bool or string
		err   string // substring of the error
	}{
		{name: "field", expr: "object.metadata.name == 'web'", want: true},
		{name: "integers are ints", expr: "object.spec.replicas + 1 == 4 && type(object.spec.replicas) == int", want: true},
		{name: "doubles stay doubles", expr: "object.spec.ratio == 0.5 && type(object.spec.ratio) == double", want: true},
		{name: "comprehension", expr: "object.spec.containers.all(c, c.image.contains(':'))", want: false},
		{name: "has", expr: "object.spec.containers.exists(c, has(c.ports))", want: true},
		{name: "optional", expr: "object.metadata.?annotations.orValue({}).size() == 0", want: true},
		// upstream's compatibility rewrite: orValue on a value that is not
		// optional gives the value (cel-go alone: no such overload)
		{name: "orValue on a value", expr: "object.spec.containers.orValue([]).size() == 2", want: true},
		{name: "orValue on a string", expr: "object.metadata.name.orValue('none') == 'web'", want: true},
		{name: "orValue on an optional with a value", expr: "object.metadata.?labels.app.orValue('none') == 'web'", want: true},
		{name: "orValue on an empty optional", expr: "object.metadata.?labels.team.orValue('none') == 'none'", want: true},
		{name: "orValue on optional.none()", expr: "optional.none().orValue(3) == 3", want: true},
		{name: "orValue in a variable", vars: [][2]string{{"ports", "object.spec.containers[1].?ports.orValue([])"}}, expr: "variables.ports.orValue([1]).size() == 0", want: true},
		// the function is strict, as upstream's: an error is not replaced
		{name: "orValue on an error", expr: "object.spec.nope.orValue(1) == 1", err: "no such key: nope"},
		{name: "old object null on create", expr: "oldObject == null", want: true},
		{name: "object null on delete", expr: "object == null && oldObject.metadata.name == 'web'",
			input: func(in *cel.Input) { in.OldObject, in.Object = in.Object, nil }, want: true},
		{name: "request", expr: "request.operation == 'CREATE' && request.userInfo.username == 'alice'", want: true},
		{name: "namespace", expr: "namespaceObject.metadata.labels.env == 'production'", want: true},
		{name: "namespace null", expr: "namespaceObject == null", input: func(in *cel.Input) { in.Namespace = nil }, want: true},
		{name: "params", expr: "object.spec.replicas <= params.maxReplicas", want: true},
		{name: "variables composed", vars: [][2]string{{"images", "object.spec.containers.map(c, c.image)"}, {"untagged", "variables.images.filter(i, !i.contains(':'))"}},
			expr: "variables.untagged == ['busybox']", want: true},
		{name: "variable error", vars: [][2]string{{"bad", "object.spec.nope"}}, expr: "variables.bad == 1", err: "composited variable \"bad\" fails to evaluate"},
		{name: "missing key", expr: "object.spec.containers.all(c, c.securityContext.privileged == false)", err: "expression 'object.spec.containers.all(c, c.securityContext.privileged == false)' resulted in error: no such key: securityContext"},
		{name: "authorizer allows", expr: "authorizer.group('').resource('pods').check('delete').allowed()",
			input: func(in *cel.Input) {
				in.Authorizer = allowList{"alice:delete:pods": true}
				in.User = cel.UserInfo{Username: "alice"}
			}, want: true},
		{name: "authorizer denies", expr: "authorizer.group('').resource('secrets').check('get').allowed()",
			input: func(in *cel.Input) {
				in.Authorizer = allowList{"alice:delete:pods": true}
				in.User = cel.UserInfo{Username: "alice"}
			}, want: false},
		{name: "authorizer error", expr: "authorizer.group('').resource('pods').check('explode').errored()",
			input: func(in *cel.Input) { in.Authorizer = allowList{} }, want: true},
		{name: "request resource authorizer", expr: "authorizer.requestResource.check('delete').allowed()",
			input: func(in *cel.Input) {
				in.Authorizer = allowList{"alice:delete:pods": true}
				in.User = cel.UserInfo{Username: "alice"}
				in.Resource = cel.RequestResource{Version: "v1", Resource: "pods"}
			}, want: true},
		{name: "no authorizer", expr: "authorizer.group('').resource('pods').check('get').allowed()", err: "no such attribute"},
		{name: "message", expr: "'replicas ' + string(object.spec.replicas)", want: "replicas 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := env(t).NewCompiler(true)
			for _, v := range tt.vars {
				if _, err := c.AddVariable(v[0], v[1]); err != nil {
					t.Fatalf("variable %s: %v", v[0], err)
				}
			}
			kind := cel.Validation
			if _, isString := tt.want.(string); isString {
				kind = cel.MessageExpression
			}
			p, err := c.Compile(tt.expr, kind)
			if err != nil {
				t.Fatal(err)
			}
			input := in()
			if tt.input != nil {
				tt.input(input)
			}
			v, err := c.NewEvaluation(context.Background(), input, nil).Eval(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v; want an error containing %q", v, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Value(); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCostLimits(t *testing.T) {
	c := env(t).NewCompiler(false)
	long := make([]any, 2000)
	for i := range long {
		long[i] = float64(i)
	}
	obj := map[string]any{"items": long}
	// 4 million iterations: over the per-call limit
	p, err := c.Compile("object.items.all(x, object.items.all(y, x + y >= 0))", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	ev := c.NewEvaluation(context.Background(), &cel.Input{Object: obj}, nil)
	if _, err := ev.Eval(p); !errors.Is(err, cel.ErrCostLimit) {
		t.Fatalf("got %v, want a cost limit error", err)
	}
	// a cheap expression over a small budget
	q, err := c.Compile("object.items.all(x, x >= 0)", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	ev = c.NewEvaluation(context.Background(), &cel.Input{Object: obj, Budget: 100}, nil)
	if _, err := ev.Eval(q); !errors.Is(err, cel.ErrCostLimit) {
		t.Fatalf("got %v, want a budget error", err)
	}
	if _, err := ev.Eval(q); !errors.Is(err, cel.ErrCostLimit) {
		t.Fatalf("a spent evaluation must stay spent, got %v", err)
	}
	ev = c.NewEvaluation(context.Background(), &cel.Input{Object: obj}, nil)
	if v, err := ev.Eval(q); err != nil || v != types.True {
		t.Fatalf("got %v, %v; want true within the default budget", v, err)
	}
}

func TestCancelled(t *testing.T) {
	c := env(t).NewCompiler(false)
	long := make([]any, 2000)
	for i := range long {
		long[i] = float64(i)
	}
	p, err := c.Compile("object.items.all(x, x >= 0)", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.NewEvaluation(ctx, &cel.Input{Object: map[string]any{"items": long}}, nil).Eval(p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestJSONNumbers(t *testing.T) {
	c := env(t).NewCompiler(false)
	p, err := c.Compile(`object.n == 2 && type(object.n) == int && type(object.f) == double &&
		object.l[0] == 3 && type(object.l[0]) == int && type(object.m.k) == int && type(object.big) == double &&
		object.l.all(x, type(x) == int) && object.m.exists(k, type(object.m[k]) == int)`, cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"n": float64(2), "f": 1.5, "l": []any{float64(3)}, "m": map[string]any{"k": int64(4)}, "big": 1e19}
	v, err := c.NewEvaluation(context.Background(), &cel.Input{Object: in}, nil).Eval(p)
	if err != nil || v != types.True {
		t.Fatalf("got %v, %v", v, err)
	}
	if in["n"] != float64(2) {
		t.Fatal("input modified")
	}
}

func TestWithEnvOptions(t *testing.T) {
	e, err := cel.NewEnv(cel.WithCompatibilityVersion("1.33"), cel.WithEnvOptions(
		celgo.Function("twice", celgo.Overload("twice_int", []*celgo.Type{celgo.IntType}, celgo.IntType,
			celgo.UnaryBinding(func(v ref.Val) ref.Val { return v.(types.Int) * 2 })))))
	if err != nil {
		t.Fatal(err)
	}
	c := e.NewCompiler(false)
	p, err := c.Compile("twice(object.n) == 4", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.NewEvaluation(context.Background(), &cel.Input{Object: map[string]any{"n": float64(2)}}, nil).Eval(p)
	if err != nil || v != types.True {
		t.Fatalf("got %v, %v", v, err)
	}
	if _, err := env(t).NewCompiler(false).Compile("twice(1) == 2", cel.Validation); err == nil {
		t.Fatal("the option leaked into another environment")
	}
	if _, err := cel.NewEnv(cel.WithCompatibilityVersion("x")); err == nil {
		t.Fatal("bad version accepted")
	}
}

// countingAuthorizer counts its checks.
type countingAuthorizer struct{ n *int }

func (a countingAuthorizer) Authorize(context.Context, cel.Check) (bool, string, error) {
	*a.n++
	return true, "", nil
}

func TestVariablesShared(t *testing.T) {
	compile := func(name, expr, check string) (*cel.Compiler, *cel.Program) {
		c := env(t).NewCompiler(false)
		if _, err := c.AddVariable(name, expr); err != nil {
			t.Fatal(err)
		}
		p, err := c.Compile(check, cel.Validation)
		if err != nil {
			t.Fatal(err)
		}
		return c, p
	}
	const images = "object.spec.containers.map(c, c.image)"
	c1, p1 := compile("a", images, "variables.a.size() == 2")
	c2, p2 := compile("b", images, "variables.b[0] == 'nginx:1.25'")
	obj := pod()
	in := &cel.Input{Object: obj}
	s := new(cel.Scope)
	for _, c := range []struct {
		c *cel.Compiler
		p *cel.Program
	}{{c1, p1}, {c2, p2}} {
		if v, err := c.c.NewEvaluation(context.Background(), in, s).Eval(c.p); err != nil || v != types.True {
			t.Fatalf("got %v, %v", v, err)
		}
	}
	// a shared value costs what it cost where it was evaluated: a budget
	// too small for the variable stops both rules
	for _, c := range []struct {
		c *cel.Compiler
		p *cel.Program
	}{{c1, p1}, {c2, p2}} {
		in.Budget = 5
		if _, err := c.c.NewEvaluation(context.Background(), in, s).Eval(c.p); !errors.Is(err, cel.ErrCostLimit) {
			t.Fatalf("got %v, want a budget error", err)
		}
	}
	in.Budget = 0
	// the value is shared: a change in place (which the contract rules
	// out) is not seen by a third rule of the Scope, but is by one
	// without a Scope, which shares nothing
	c5, p5 := compile("c", images, "variables.c[0] == 'nginx:1.25'")
	spec := obj["spec"]
	obj["spec"] = map[string]any{"containers": []any{map[string]any{"image": "x"}}}
	if v, err := c5.NewEvaluation(context.Background(), in, s).Eval(p5); err != nil || v != types.True {
		t.Fatalf("got %v, %v; want the shared value", v, err)
	}
	if v, err := c5.NewEvaluation(context.Background(), in, nil).Eval(p5); err != nil || v != types.False {
		t.Fatalf("got %v, %v; want the value of the changed object without a Scope", v, err)
	}
	obj["spec"] = spec
	// another object is another value, in the same Scope
	other := pod()
	other["spec"] = map[string]any{"containers": []any{map[string]any{"image": "x"}}}
	in.Object = other
	if v, err := c2.NewEvaluation(context.Background(), in, s).Eval(p2); err != nil || v != types.False {
		t.Fatalf("got %v, %v; want false on the other object", v, err)
	}
	// and the first object's value is still there
	in.Object = obj
	obj["spec"] = map[string]any{"containers": []any{}}
	if v, err := c2.NewEvaluation(context.Background(), in, s).Eval(p2); err != nil || v != types.True {
		t.Fatalf("got %v, %v; want the value shared on the first object", v, err)
	}
	obj["spec"] = spec
	// variables that read more than the objects are evaluated each time
	n := 0
	in.Authorizer = countingAuthorizer{&n}
	c3, p3 := compile("ok", "authorizer.group('').resource('pods').check('get').allowed()", "variables.ok")
	c4, p4 := compile("ok", "authorizer.group('').resource('pods').check('get').allowed()", "variables.ok")
	for _, c := range []struct {
		c *cel.Compiler
		p *cel.Program
	}{{c3, p3}, {c4, p4}} {
		if v, err := c.c.NewEvaluation(context.Background(), in, s).Eval(c.p); err != nil || v != types.True {
			t.Fatalf("got %v, %v", v, err)
		}
	}
	if n != 2 {
		t.Fatalf("the authorizer was asked %d times, want 2", n)
	}
}

// ctxAuthorizer records the context of its checks.
type ctxAuthorizer struct{ got *context.Context }

func (a ctxAuthorizer) Authorize(ctx context.Context, _ cel.Check) (bool, string, error) {
	*a.got = ctx
	return true, "", nil
}

func TestAuthorizerGetsTheEvaluationContext(t *testing.T) {
	c := env(t).NewCompiler(false)
	p, err := c.Compile("authorizer.group('').resource('pods').check('get').allowed()", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{}
	ctx, cancel := context.WithTimeout(context.WithValue(t.Context(), key{}, "request"), time.Minute)
	defer cancel()
	var got context.Context
	if v, err := c.NewEvaluation(ctx, &cel.Input{Authorizer: ctxAuthorizer{&got}}, nil).Eval(p); err != nil || v != types.True {
		t.Fatalf("got %v, %v", v, err)
	}
	if _, ok := got.Deadline(); !ok || got.Value(key{}) != "request" {
		t.Fatalf("the check's context is not the evaluation's: %v", got)
	}
}

// checkRecorder records the checks it is asked.
type checkRecorder struct{ got *[]cel.Check }

func (a checkRecorder) Authorize(_ context.Context, c cel.Check) (bool, string, error) {
	*a.got = append(*a.got, c)
	return true, "", nil
}

func TestAuthorizerSelectors(t *testing.T) {
	c := env(t).NewCompiler(false)
	p, err := c.Compile(`authorizer.group('').resource('pods').namespace('ns').fieldSelector('spec.nodeName=n1,metadata.name!=x').labelSelector('app in (a,b),!tmp').check('list').allowed() &&
		authorizer.group('').resource('pods').fieldSelector('spec.nodeName in (x)').check('list').allowed()`, cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	var got []cel.Check
	if v, err := c.NewEvaluation(t.Context(), &cel.Input{Authorizer: checkRecorder{&got}}, nil).Eval(p); err != nil || v != types.True {
		t.Fatalf("got %v, %v", v, err)
	}
	if len(got) != 2 {
		t.Fatalf("%d checks, want 2", len(got))
	}
	if got[0].FieldSelector != "metadata.name!=x,spec.nodeName=n1" || got[0].LabelSelector != "app in (a,b),!tmp" {
		t.Errorf("selectors %q %q", got[0].FieldSelector, got[0].LabelSelector)
	}
	// a selector that does not parse is left out
	if got[1].FieldSelector != "" {
		t.Errorf("unparsable selector passed on: %q", got[1].FieldSelector)
	}
}

// TestInputTreesRebound checks that a Scope converts the trees of its
// Evaluations by identity: the same tree read by several Compilers gives
// the same answers, and a tree bound anew in the same Input (params of the
// next parameter object, another object) is read anew.
func TestInputTreesRebound(t *testing.T) {
	compile := func(expr string) (*cel.Compiler, *cel.Program) {
		c := env(t).NewCompiler(true)
		p, err := c.Compile(expr, cel.Validation)
		if err != nil {
			t.Fatal(err)
		}
		return c, p
	}
	obj := pod()
	in := &cel.Input{Object: obj, OldObject: obj}
	var scope cel.Scope
	steps := []struct {
		expr   string
		rebind func()
		want   ref.Val
	}{
		{expr: "object.spec.containers.exists(c, c.image == 'nginx:1.25')", want: types.True},
		{expr: "object.spec.containers == oldObject.spec.containers && object == oldObject", want: types.True},
		{expr: "params.registries.all(r, r == 'nginx')", rebind: func() { in.Params = map[string]any{"registries": []any{"nginx"}} }, want: types.True},
		{expr: "params.registries.all(r, r == 'nginx')", rebind: func() { in.Params = map[string]any{"registries": []any{"ghcr.io"}} }, want: types.False},
		{expr: "params.registries.size() == 2", rebind: func() {
			in.Params["registries"] = append(in.Params["registries"].([]any)[:1:1], "quay.io")
		}, want: types.True},
		{expr: "object.spec.containers.size() == 1", rebind: func() {
			in.Object = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"image": "x"}}}}
		}, want: types.True},
		{expr: "oldObject == null && object.spec.containers[0].image == 'x'", rebind: func() { in.OldObject = nil }, want: types.True},
	}
	for i, s := range steps {
		if s.rebind != nil {
			s.rebind()
		}
		c, p := compile(s.expr)
		if v, err := c.NewEvaluation(context.Background(), in, &scope).Eval(p); err != nil || v != s.want {
			t.Fatalf("step %d (%s): got %v, %v; want %v", i, s.expr, v, err, s.want)
		}
	}
}
