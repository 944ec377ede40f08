package cel_test

import (
	"context"
	"fmt"

	celgo "github.com/google/cel-go/cel"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// countingHost is the tests' host: an attestor verifies the images whose
// reference names it.
type countingHost struct{ fakeImageVerifier }

// The image verification library of ImageValidatingPolicies: the program
// is compiled once; each evaluation binds the host that knows the policy
// and the request (Libraries.ImageVerify). OutputType tells what an
// expression gives.
func ExampleImageVerifier() {
	env, err := cel.NewEnv(cel.WithLibraries(cel.ImageValidatingPolicyLibraries),
		cel.WithVariable("attestors", celgo.MapType(celgo.StringType, celgo.DynType)))
	if err != nil {
		panic(err)
	}
	c := env.NewCompiler(false)
	p, err := c.Compile(`verifyImageSignatures("ghcr.io/acme/app@sha256:1", [attestors.acme])`, cel.Variable)
	if err != nil {
		panic(err)
	}
	fmt.Println("type:", p.OutputType())
	in := &cel.Input{
		Extra:     map[string]any{"attestors": map[string]any{"acme": &cel.ImageAttestor{Name: "acme"}}},
		Libraries: &cel.Libraries{ImageVerify: &countingHost{}},
	}
	v, err := c.NewEvaluation(context.Background(), in, nil).Eval(p)
	fmt.Println("verified by", v, "attestor(s)", err)
	// Output:
	// type: int
	// verified by 1 attestor(s) <nil>
}
