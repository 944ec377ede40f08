package migrate

import (
	"context"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// TestImageInfoExpr checks the CEL of Kyverno's image info against the
// infos Kyverno's image parsing gives (default registry docker.io,
// default tag latest, a registry only when the first part looks like a
// host).
func TestImageInfoExpr(t *testing.T) {
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	comp := env.NewCompiler(false)
	p, err := comp.Compile(imageInfoExpr("object.image"), cel.Variable)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		image string
		want  map[string]any
	}{
		{"nginx", map[string]any{"registry": "docker.io", "name": "nginx", "path": "nginx", "tag": "latest",
			"reference": "docker.io/nginx:latest", "referenceWithTag": "docker.io/nginx:latest"}},
		{"bitnami/nginx:1.2", map[string]any{"registry": "docker.io", "name": "nginx", "path": "bitnami/nginx", "tag": "1.2",
			"reference": "docker.io/bitnami/nginx:1.2", "referenceWithTag": "docker.io/bitnami/nginx:1.2"}},
		{"ghcr.io/kyverno/kyverno:v1.9@sha256:abc", map[string]any{"registry": "ghcr.io", "name": "kyverno", "path": "kyverno/kyverno",
			"tag": "v1.9", "digest": "sha256:abc", "reference": "ghcr.io/kyverno/kyverno@sha256:abc",
			"referenceWithTag": "ghcr.io/kyverno/kyverno:v1.9"}},
		{"localhost:5000/app@sha256:abc", map[string]any{"registry": "localhost:5000", "name": "app", "path": "app",
			"digest": "sha256:abc", "reference": "localhost:5000/app@sha256:abc", "referenceWithTag": "localhost:5000/app:"}},
		{"localhost/team/app", map[string]any{"registry": "localhost", "name": "app", "path": "team/app", "tag": "latest",
			"reference": "localhost/team/app:latest", "referenceWithTag": "localhost/team/app:latest"}},
	}
	for _, tt := range tests {
		ev := comp.NewEvaluation(context.Background(), &cel.Input{Object: map[string]any{"image": tt.image}}, nil)
		v, err := ev.Eval(p)
		if err != nil {
			t.Errorf("%s: %v", tt.image, err)
			continue
		}
		got, err := v.ConvertToNative(reflect.TypeOf(map[string]any{}))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %v\nwant %v", tt.image, got, tt.want)
		}
	}
}
