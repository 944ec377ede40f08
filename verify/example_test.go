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

// A signed-image policy end to end: an image is pushed to a registry and
// signed as `cosign sign --key` signs it; the policy names the public key.
// At admission, Mutate verifies the signature and pins the image to its
// digest; Validate then checks the digest and the verify-images
// annotation. An unsigned image is refused.
func Example_signedImage() {
	// a registry (here in process) with a signed and an unsigned image
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
	signed := push("signed")
	push("unsigned")

	// the signer's key pair and cosign's signature of the image
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

	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: check-image
spec:
  rules:
  - name: check-image
    match:
      any:
      - resources:
          kinds: [Pod]
    verifyImages:
    - imageReferences: ["` + host + `/app*"]
      failureAction: Enforce
      attestors:
      - count: 1
        entries:
        - keys:
            publicKeys: |-
` + indent(string(pub), "              ") + `
            rekor:
              ignoreTlog: true
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
	show := func(s string) string {
		return strings.NewReplacer(host, "REGISTRY", signed.DigestStr(), "DIGEST").Replace(s)
	}
	for _, tag := range []string{"signed", "unsigned"} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": tag, "namespace": "default"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": host + "/app:" + tag}}}}
		m, err := ps.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		r := m.Policies[0].Rules[0]
		fmt.Printf("mutate %s: %s: %s\n", tag, r.Status, show(r.Message))
		if m.Blocked() {
			fmt.Println("blocked")
			continue
		}
		fmt.Println("patch:", show(string(m.Patch)))
		v, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			panic(err)
		}
		r = v.Policies[0].Rules[0]
		fmt.Printf("validate %s: %s: %s\n", tag, r.Status, r.Message)
	}
	// Output:
	// mutate signed: pass: verified image signatures for REGISTRY/app:signed
	// patch: [{"op":"add","path":"/metadata/annotations","value":{"kyverno.io/verify-images":"{\"REGISTRY/app@DIGEST\":\"pass\"}"}},{"op":"replace","path":"/spec/containers/0/image","value":"REGISTRY/app:signed@DIGEST"}]
	// validate signed: pass: image verified
	// mutate unsigned: fail: failed to verify image REGISTRY/app:unsigned: .attestors[0].entries[0].keys: no signatures found
	// blocked
}
