package cel_test

import (
	"context"
	"fmt"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Two policies of one request: their Evaluations share a Scope, made once
// per request, so the Pod is converted for CEL once and the variable both
// policies define, which reads only the object, is evaluated once. The
// Input is plain data; the caller builds the request variable only for
// the expressions that read it (Program.Reads, from the checked
// expressions: the "request" in a string literal is not a read).
func ExampleScope() {
	env, err := cel.NewEnv()
	if err != nil {
		panic(err)
	}
	type policy struct {
		c *cel.Compiler
		p *cel.Program
	}
	var policies []policy
	for _, check := range []string{
		`variables.images.all(i, i.contains(":")) || "request" == ""`,
		`variables.images.size() <= 2 || request.userInfo.username == "admin"`,
	} {
		c := env.NewCompiler(false)
		if _, err := c.AddVariable("images", "object.spec.containers.map(c, c.image)"); err != nil {
			panic(err)
		}
		p, err := c.Compile(check, cel.Validation)
		if err != nil {
			panic(err)
		}
		policies = append(policies, policy{c, p})
	}
	pod := map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"image": "nginx:1.25"}, map[string]any{"image": "busybox:1.36"},
	}}}
	var scope cel.Scope // one per request
	for _, pol := range policies {
		in := &cel.Input{Object: pod}
		if pol.p.Reads(cel.RequestVar) {
			in.Request = map[string]any{"userInfo": map[string]any{"username": "alice"}}
		}
		v, err := pol.c.NewEvaluation(context.Background(), in, &scope).Eval(pol.p)
		fmt.Println(pol.p.Reads(cel.RequestVar), v, err)
	}
	// Output:
	// false true <nil>
	// true true <nil>
}
