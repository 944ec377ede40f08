package cel_test

import (
	"context"
	"errors"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// fakeImageVerifier answers the image verification functions: an attestor
// verifies an image when the image names it.
type fakeImageVerifier struct {
	calls []string
	ctxs  []context.Context
}

func (f *fakeImageVerifier) VerifyImageSignatures(ctx context.Context, image string, attestors []*cel.ImageAttestor) (int, error) {
	f.ctxs = append(f.ctxs, ctx)
	n := 0
	for _, a := range attestors {
		f.calls = append(f.calls, "sig "+image+" "+a.Name)
		if strings.Contains(image, a.Name) {
			n++
		}
	}
	return n, nil
}

func (f *fakeImageVerifier) VerifyAttestationSignatures(_ context.Context, image, attestation string, attestors []*cel.ImageAttestor) (int, error) {
	if attestation == "missing" {
		return 0, errors.New("attestation not found in policy: missing")
	}
	f.calls = append(f.calls, "att "+image+" "+attestation)
	return len(attestors), nil
}

func (f *fakeImageVerifier) ExtractPayload(_ context.Context, image, attestation string) (any, error) {
	return map[string]any{"image": image, "attestation": attestation, "n": float64(2)}, nil
}

func (f *fakeImageVerifier) ImageData(_ context.Context, image string) (map[string]any, error) {
	return map[string]any{"image": image, "digest": "sha256:1"}, nil
}

// TestImageVerifyLibrary evaluates the image verification functions with a
// host bound per evaluation: their results, their arguments' errors and
// an evaluation without a host.
func TestImageVerifyLibrary(t *testing.T) {
	env, err := cel.NewEnv(cel.WithLibraries(cel.ImageValidatingPolicyLibraries),
		cel.WithVariable("attestors", celgo.MapType(celgo.StringType, celgo.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	a, b := &cel.ImageAttestor{Name: "a", Spec: policiesv1alpha1.Attestor{Name: "a"}}, &cel.ImageAttestor{Name: "b"}
	extra := map[string]any{"attestors": map[string]any{"a": a, "b": b}}
	tests := []struct{ expr, want, err string }{
		{"verifyImageSignatures('reg.io/a', [attestors.a, attestors.b])", "1", ""},
		{"verifyImageSignatures('reg.io/ab', [attestors.a, attestors.b])", "2", ""},
		{"verifyImageSignatures('reg.io/x', [])", "0", ""},
		{"verifyAttestationSignatures('reg.io/a', 'sbom', [attestors.a])", "1", ""},
		{"extractPayload('reg.io/a', 'sbom').n == 2.0", "true", ""},
		{"getImageData('reg.io/a').digest", "sha256:1", ""},
		{"verifyImageSignatures('reg.io/a', ['a'])", "", "type conversion error from 'string' to 'imageverify.attestor'"},
		{"verifyAttestationSignatures('reg.io/a', 'missing', [attestors.a])", "", "attestation not found in policy: missing"},
		{"attestors.a == attestors.a && attestors.a != attestors.b", "true", ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			c := env.NewCompiler(false)
			p, err := c.Compile(tt.expr, cel.Variable)
			if err != nil {
				t.Fatal(err)
			}
			host := &fakeImageVerifier{}
			ctx := context.WithValue(context.Background(), ivCtxKey{}, "eval")
			v, err := c.NewEvaluation(ctx, &cel.Input{Extra: extra, Libraries: &cel.Libraries{ImageVerify: host}}, nil).Eval(p)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, %v, want an error with %q", v, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(v.Value()); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
			for _, c := range host.ctxs {
				if c.Value(ivCtxKey{}) != "eval" {
					t.Error("the host did not get the evaluation's context")
				}
			}
		})
	}
	// the same program without a host: not configured
	c := env.NewCompiler(false)
	p, err := c.Compile("verifyImageSignatures('reg.io/a', [attestors.a]) > 0", cel.Validation)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewEvaluation(context.Background(), &cel.Input{Extra: extra}, nil).Eval(p); !errors.Is(err, cel.ErrNotConfigured) {
		t.Errorf("without a host: %v", err)
	}
	// ValidatingPolicies do not see the library
	vp, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vp.NewCompiler(false).Compile("verifyImageSignatures('x', []) > 0", cel.Validation); err == nil {
		t.Error("a ValidatingPolicy environment declares verifyImageSignatures")
	}
}

type ivCtxKey struct{}
