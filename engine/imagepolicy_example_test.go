package engine_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// allowList is an ImageVerifier with the ImagePolicyVerifier capability
// that trusts a list of images (by digest) for every attestor: the shape
// of a host (package verify is the real one).
type allowList map[string]bool

func (a allowList) ResolveDigest(_ context.Context, req engine.ImageVerifyRequest) (string, error) {
	return "", errors.New("images are given by digest here")
}

func (a allowList) VerifySignature(context.Context, engine.ImageVerifyRequest) error {
	return errors.New("verifyImages rules are not verified here")
}

func (a allowList) FetchAttestations(context.Context, engine.ImageVerifyRequest) ([]map[string]any, error) {
	return nil, errors.New("verifyImages rules are not verified here")
}

func (a allowList) VerifyImagePolicySignature(_ context.Context, req engine.ImagePolicyRequest) error {
	if a[req.Image] {
		return nil
	}
	return fmt.Errorf("%s is not signed by %s", req.Image, req.Attestor.Name)
}

func (a allowList) VerifyImagePolicyAttestation(context.Context, engine.ImagePolicyRequest) (any, error) {
	return nil, errors.New("no attestations here")
}

// An ImageValidatingPolicy evaluated with a host of its own: the engine
// extracts the images, selects them (matchImageReferences), calls the
// host for each image and attestor (caching successes), and settles
// validationConfigurations.required once every policy has run.
func ExampleImagePolicyVerifier() {
	const d = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	policy := `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: signed
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  matchImageReferences:
  - glob: ghcr.io/acme/*
  attestors:
  - name: notary
    notary:
      certs:
        expression: "'(the CA of the team)'"
  validations:
  - expression: images.containers.all(image, verifyImageSignatures(image, [attestors.notary]) > 0)
    message: unsigned image
`
	eng, err := engine.New(engine.WithImageVerifier(allowList{"ghcr.io/acme/app@" + d: true}))
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(decode(policy).Policies...)
	if err != nil {
		panic(err)
	}
	for _, image := range []string{"ghcr.io/acme/app@" + d, "ghcr.io/acme/tool@" + d, "ghcr.io/acme/app:v1"} {
		pod := object("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers:\n  - {name: c, image: '" + image + "'}\n")
		resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		r := resp.Policies[0].Rules[0]
		fmt.Printf("%s: %s\n", r.Status, r.Message)
	}
	// Output:
	// pass: success
	// fail: unsigned image
	// fail: image ghcr.io/acme/app:v1 does not have a digest
}
