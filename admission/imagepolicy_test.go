package admission_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// digests is an ImageVerifier that resolves tags from a table (digest pins
// need nothing else).
type digests map[string]string

func (d digests) ResolveDigest(_ context.Context, req engine.ImageVerifyRequest) (string, error) {
	if v, ok := d[req.Image]; ok {
		return v, nil
	}
	return "", errors.New("MANIFEST_UNKNOWN")
}

func (digests) VerifySignature(context.Context, engine.ImageVerifyRequest) error {
	return errors.New("not verified")
}

func (digests) FetchAttestations(context.Context, engine.ImageVerifyRequest) ([]map[string]any, error) {
	return nil, errors.New("not verified")
}

const pinPolicy = `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: pin
spec:
  validationActions: [Deny, Audit]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  matchImageReferences:
  - glob: ghcr.io/*
  validations:
  - expression: "true"
`

// TestMutateImageDigests checks the answer to the digest pins of
// ImageValidatingPolicies: the patch, and upstream's denial when a digest
// cannot be resolved under Deny.
func TestMutateImageDigests(t *testing.T) {
	const d = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(pinPolicy), "policies.yaml"); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.WithImageVerifier(digests{"ghcr.io/acme/app:v1": d}))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		t.Fatal(err)
	}
	req := func(image string) *admissionv1.AdmissionRequest {
		raw, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}})
		ar := &admissionv1.AdmissionRequest{UID: "1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "shop", Operation: admissionv1.Create}
		ar.Object.Raw = raw
		return ar
	}
	resp, _ := admission.Mutate(context.Background(), set, req("ghcr.io/acme/app:v1"))
	check(t, resp, nil, true, "", nil)
	if want := `[{"op":"replace","path":"/spec/containers/0/image","value":"ghcr.io/acme/app:v1@` + d + `"}]`; string(resp.Patch) != want {
		t.Errorf("patch %s, want %s", resp.Patch, want)
	}
	resp, _ = admission.Mutate(context.Background(), set, req("ghcr.io/acme/missing:v1"))
	check(t, resp, nil, false, "Policy pin error: failed to update digest: failed to resolve digest for image ghcr.io/acme/missing:v1: MANIFEST_UNKNOWN", nil)
}
