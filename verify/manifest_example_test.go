package verify_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/verify"
)

// A validate.manifests rule checks that a resource is the manifest its
// author signed (with kubectl sigstore sign), but for the fields the
// policy lets change. The Verifier given to engine.WithImageVerifier
// verifies manifests too.
func ExampleVerifier_VerifyManifest() {
	// the author signs a ConfigMap: the message is a gzipped tar of the
	// YAML, the signature is over that blob
	const manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: strict\n  replicas: \"2\"\n"
	var blob bytes.Buffer
	zw := gzip.NewWriter(&blob)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: "settings.yaml", Mode: 0o644, Size: int64(len(manifest)), Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte(manifest))
	_ = tw.Close()
	_ = zw.Close()
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, _ := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	sig, _ := signer.SignMessage(bytes.NewReader(blob.Bytes()))
	var message bytes.Buffer
	mz := gzip.NewWriter(&message)
	_, _ = mz.Write(blob.Bytes())
	_ = mz.Close()
	pub, _ := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)

	policy := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed-configmaps
spec:
  rules:
  - name: signed
    match:
      any:
      - resources:
          kinds: [ConfigMap]
    validate:
      manifests:
        attestors:
        - entries:
          - keys:
              publicKeys: |-
                ` + strings.ReplaceAll(strings.TrimSpace(string(pub)), "\n", "\n                ") + `
        ignoreFields:
        - objects:
          - kind: ConfigMap
          fields:
          - data.replicas
`
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(policy), "policy.yaml"); err != nil {
		fmt.Println(err)
		return
	}
	eng, _ := engine.New(engine.WithImageVerifier(verify.New()))
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	configMap := func(mode, replicas string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "settings", "namespace": "default", "annotations": map[string]any{
				"cosign.sigstore.dev/message":   base64.StdEncoding.EncodeToString(message.Bytes()),
				"cosign.sigstore.dev/signature": base64.StdEncoding.EncodeToString(sig)}},
			"data": map[string]any{"mode": mode, "replicas": replicas}}
	}
	for _, obj := range []map[string]any{configMap("strict", "2"), configMap("strict", "5"), configMap("lax", "2")} {
		resp, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
		if err != nil {
			fmt.Println(err)
			return
		}
		r := resp.Policies[0].Rules[0]
		fmt.Println(r.Status+":", strings.TrimSpace(r.Message))
	}
	// Output:
	// pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer:
	// pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer:
	// fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"data.mode","values":{"after":"lax","before":"strict"}}]}
}
