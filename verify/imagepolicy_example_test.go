package verify_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/verify"
)

// An ImageValidatingPolicy end to end: at admission, Mutate pins the
// image to its digest (mutateDigest); Validate verifies the signature of
// each image the policy selects with verifyImageSignatures, and refuses
// an unsigned one.
func ExampleVerifier_VerifyImagePolicySignature() {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(tag string) name.Digest {
		img, _ := random.Image(64, 1)
		ref, _ := name.ParseReference(host + "/app:" + tag)
		if err := remote.Write(ref, img); err != nil {
			panic(err)
		}
		d, _ := img.Digest()
		return ref.Context().Digest(d.String())
	}
	signed, unsigned := push("signed"), push("unsigned")
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	body, _ := (&payload.Cosign{Image: signed}).MarshalJSON()
	sig, _ := signer.SignMessage(bytes.NewReader(body))
	ociSig, _ := static.NewSignature(body, base64.StdEncoding.EncodeToString(sig))
	se, _ := ociremote.SignedEntity(signed)
	se, _ = mutate.AttachSignatureToEntity(se, ociSig)
	if err := ociremote.WriteSignatures(signed.Repository, se); err != nil {
		panic(err)
	}
	pub, _ := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)

	policy := `apiVersion: policies.kyverno.io/v1
kind: ImageValidatingPolicy
metadata:
  name: signed-images
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  matchImageReferences:
  - glob: "` + host + `/*"
  attestors:
  - name: cosign
    cosign:
      ctlog: {insecureIgnoreTlog: true}
      key:
        data: |
` + indent(string(pub), "          ") + `
  validations:
  - expression: images.containers.map(image, verifyImageSignatures(image, [attestors.cosign])).all(e, e > 0)
    message: failed the image signature verification
`
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(policy), "policy.yaml"); err != nil {
		panic(err)
	}
	eng, _ := engine.New(engine.WithImageVerifier(verify.New()))
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		panic(err)
	}
	show := strings.NewReplacer(host, "REGISTRY", signed.DigestStr(), "SIGNED", unsigned.DigestStr(), "UNSIGNED").Replace
	for _, tag := range []string{"signed", "unsigned"} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": tag, "namespace": "default"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": host + "/app:" + tag}}}}
		m, err := ps.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		fmt.Println("patch:", show(string(m.Patch)))
		v, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			panic(err)
		}
		r := v.Policies[0].Rules[0]
		fmt.Printf("validate %s: %s: %s (blocked: %v)\n", tag, r.Status, r.Message, v.Blocked())
	}
	// Output:
	// patch: [{"op":"replace","path":"/spec/containers/0/image","value":"REGISTRY/app:signed@SIGNED"}]
	// validate signed: pass: success (blocked: false)
	// patch: [{"op":"replace","path":"/spec/containers/0/image","value":"REGISTRY/app:unsigned@UNSIGNED"}]
	// validate unsigned: fail: failed the image signature verification (blocked: true)
}
