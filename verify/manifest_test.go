package verify_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/cosign/v2/pkg/cosign/bundle"
	"github.com/sigstore/sigstore/pkg/signature"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

const signedYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

// manifestBlob is what kubectl sigstore sign signs: a gzipped tar of the
// YAML files.
func manifestBlob(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzip64 is the encoding of the message, certificate and bundle
// annotations: base64 of the gzipped data.
func gzip64(t testing.TB, data []byte) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// signature is a signature of the blob as an annotation value.
func signBlob(t testing.TB, s signature.Signer, blob []byte) string {
	t.Helper()
	raw, err := s.SignMessage(bytes.NewReader(blob))
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}

// blobBundle is the Rekor bundle of a hashedrekord entry of the blob's
// signature, its entry timestamp signed by the log.
func blobBundle(t testing.TB, log *testLog, blob []byte, b64sig, pubPEM string) []byte {
	t.Helper()
	h := sha256.Sum256(blob)
	body, _ := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(h[:])}},
		"signature": map[string]any{"content": b64sig, "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString([]byte(pubPEM))}},
	}})
	rp := bundle.RekorPayload{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: time.Now().Unix(), LogIndex: 3, LogID: log.id}
	canonical, _ := json.Marshal(map[string]any{"body": rp.Body, "integratedTime": rp.IntegratedTime, "logIndex": rp.LogIndex, "logID": rp.LogID})
	digest := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, log.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(bundle.RekorBundle{SignedEntryTimestamp: set, Payload: rp})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func yamlObject(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func keysAttestor(pem string) api.Attestor {
	return api.Attestor{Keys: &api.StaticKeyAttestor{PublicKeys: pem}}
}

func TestVerifyManifestAnnotations(t *testing.T) {
	key, other := newKey(t), newKey(t)
	ca := newCA(t)
	leaf, leafPEM := ca.issue(t, "ci@example.com", "https://issuer.test")
	log := newLog(t)
	blob := manifestBlob(t, map[string]string{"deploy.yaml": signedYAML, "README.md": "not a manifest"})
	msg := gzip64(t, blob)
	sigKey := signBlob(t, key.signer, blob)
	sigOther := signBlob(t, other.signer, blob)
	sigLeaf := signBlob(t, leaf, blob)
	want := yamlObject(t, signedYAML)
	const d = "cosign.sigstore.dev/"
	keyless := api.Attestor{Keyless: &api.KeylessAttestor{Roots: ca.pem, Subject: "ci@example.com", Issuer: "https://issuer.test",
		Rekor: &api.Rekor{IgnoreTlog: true}, CTLog: &api.CTLog{IgnoreSCT: true}}}
	// the log holds none of these signatures: one without its bundle is
	// looked up there, and not found
	rekorURL := newRekor(t, log).srv.URL
	logged := keysAttestor(key.pem)
	logged.Keys.Rekor = &api.Rekor{URL: rekorURL, PubKey: log.pem}
	testKMSKeys["manifest-signer"] = key
	kmsAttestor := api.Attestor{Keys: &api.StaticKeyAttestor{KMS: "gaveltestkms://manifest-signer",
		Rekor: &api.Rekor{IgnoreTlog: true}, CTLog: &api.CTLog{IgnoreSCT: true}}}
	tests := []struct {
		name        string
		domain      string
		annotations map[string]string
		attestor    api.Attestor
		signer      string
		err         string
		notSigned   bool
	}{
		{name: "key", annotations: map[string]string{d + "message": msg, d + "signature": sigKey}, attestor: keysAttestor(key.pem)},
		{name: "second signature", annotations: map[string]string{d + "message": msg, d + "signature": sigOther, d + "signature_1": sigKey}, attestor: keysAttestor(key.pem)},
		{name: "kms key", annotations: map[string]string{d + "message": msg, d + "signature": sigKey}, attestor: kmsAttestor},
		{name: "kms key, other signer", annotations: map[string]string{d + "message": msg, d + "signature": sigOther}, attestor: kmsAttestor,
			err: "signature verification failed: [signature 1/1] invalid signature when validating ASN.1 encoded signature"},
		{name: "wrong key", annotations: map[string]string{d + "message": msg, d + "signature": sigOther}, attestor: keysAttestor(key.pem),
			err: "signature verification failed: [signature 1/1] invalid signature when validating ASN.1 encoded signature"},
		{name: "other domain", domain: "sig.example.com", annotations: map[string]string{"sig.example.com/message": msg, "sig.example.com/signature": sigKey}, attestor: keysAttestor(key.pem)},
		{name: "no message", annotations: map[string]string{d + "signature": sigKey}, attestor: keysAttestor(key.pem),
			err: "manifest not signed: message not found: no annotation cosign.sigstore.dev/message", notSigned: true},
		{name: "no signature", annotations: map[string]string{d + "message": msg}, attestor: keysAttestor(key.pem),
			err: "manifest not signed: signature not found: no annotation cosign.sigstore.dev/signature", notSigned: true},
		{name: "message not base64", annotations: map[string]string{d + "message": "%%%", d + "signature": sigKey}, attestor: keysAttestor(key.pem),
			err: "failed to decode the message annotation cosign.sigstore.dev/message: illegal base64 data at input byte 0"},
		// a single manifest, signed as it is (upstream's k8s-manifest-sigstore
		// reads the message as YAML first)
		{name: "message of plain YAML", annotations: map[string]string{d + "message": gzip64(t, []byte(signedYAML)),
			d + "signature": signBlob(t, key.signer, []byte(signedYAML))}, attestor: keysAttestor(key.pem)},
		{name: "plain YAML, signature of another message", annotations: map[string]string{d + "message": gzip64(t, []byte(signedYAML)), d + "signature": sigKey},
			attestor: keysAttestor(key.pem), err: "signature verification failed: [signature 1/1] invalid signature when validating ASN.1 encoded signature"},
		{name: "message neither YAML nor a tar", annotations: map[string]string{d + "message": gzip64(t, []byte("not a manifest")), d + "signature": sigKey}, attestor: keysAttestor(key.pem),
			err: "failed to read YAMLs in the message annotation cosign.sigstore.dev/message: unexpected EOF"},
		{name: "certificate", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf},
			attestor: api.Attestor{Certificates: &api.CertificateAttestor{Certificate: string(leafPEM), CTLog: &api.CTLog{IgnoreSCT: true}}}, signer: "ci@example.com"},
		{name: "certificate with chain", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf},
			attestor: api.Attestor{Certificates: &api.CertificateAttestor{Certificate: string(leafPEM), CertificateChain: ca.pem, CTLog: &api.CTLog{IgnoreSCT: true}}}, signer: "ci@example.com"},
		{name: "certificate, other signer", annotations: map[string]string{d + "message": msg, d + "signature": sigKey},
			attestor: api.Attestor{Certificates: &api.CertificateAttestor{Certificate: string(leafPEM), CTLog: &api.CTLog{IgnoreSCT: true}}},
			err:      "signature verification failed: [signature 1/1] invalid signature when validating ASN.1 encoded signature"},
		{name: "keyless", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf, d + "certificate": gzip64(t, leafPEM)},
			attestor: keyless, signer: "ci@example.com"},
		{name: "keyless, other subject", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf, d + "certificate": gzip64(t, leafPEM)},
			attestor: func() api.Attestor {
				a := keyless
				k := *a.Keyless
				k.Subject = "other@example.com"
				a.Keyless = &k
				return a
			}(),
			err: "signature verification failed: [signature 1/1] none of the expected identities matched what was in the certificate, got subjects [ci@example.com] with issuer https://issuer.test"},
		{name: "keyless without certificate", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf}, attestor: keyless,
			err: "signature verification failed: [signature 1/1] no certificate found on signature"},
		{name: "rekor bundle", annotations: map[string]string{d + "message": msg, d + "signature": sigKey,
			d + "bundle": gzip64(t, blobBundle(t, log, blob, sigKey, key.pem))}, attestor: logged},
		{name: "keyless with rekor bundle", annotations: map[string]string{d + "message": msg, d + "signature": sigLeaf, d + "certificate": gzip64(t, leafPEM),
			d + "bundle": gzip64(t, blobBundle(t, log, blob, sigLeaf, string(leafPEM)))},
			attestor: func() api.Attestor {
				a := keyless
				k := *a.Keyless
				k.Rekor = &api.Rekor{URL: rekorURL, PubKey: log.pem}
				a.Keyless = &k
				return a
			}(), signer: "ci@example.com"},
		{name: "rekor bundle missing", annotations: map[string]string{d + "message": msg, d + "signature": sigKey}, attestor: logged,
			err: "signature verification failed: [signature 1/1] signature not found in transparency log"},
		{name: "bundle not JSON", annotations: map[string]string{d + "message": msg, d + "signature": sigKey, d + "bundle": gzip64(t, []byte("{"))}, attestor: logged,
			err: "signature verification failed: [signature 1/1] failed to decode the Rekor bundle: unexpected end of JSON input"},
	}
	v := verify.New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			domain := tt.domain
			if domain == "" {
				domain = "cosign.sigstore.dev"
			}
			got, err := v.VerifyManifest(context.Background(), engine.ManifestVerifyRequest{Annotations: tt.annotations, AnnotationDomain: domain, Attestor: tt.attestor})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || errors.Is(err, engine.ErrManifestNotSigned) != tt.notSigned {
					t.Fatalf("err = %v, want %q (not signed: %v)", err, tt.err, tt.notSigned)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Manifests) != 1 || !equalJSON(got.Manifests[0], want) || got.Signer != tt.signer {
				t.Errorf("got %+v", got)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// pushManifestImage pushes an image whose layer is the gzipped tar of the
// YAML files, as kubectl sigstore sign --image does.
func pushManifestImage(t *testing.T, reg *testRegistry, repoTag string, blob []byte) (string, name.Digest) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(blob, types.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	return reg.pushImage(t, repoTag, img)
}

func TestVerifyManifestImage(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	blob := manifestBlob(t, map[string]string{"deploy.yaml": signedYAML + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"})
	signed, d := pushManifestImage(t, reg, "manifests:signed", blob)
	sign(t, d, key.signer, nil)
	unsigned, _ := pushManifestImage(t, reg, "manifests:unsigned", manifestBlob(t, map[string]string{"a.yml": signedYAML}))
	v := verify.New()
	tests := []struct {
		name, repository string
		attestor         api.Attestor
		docs             int
		err              string
		notSigned        bool
	}{
		{name: "signed", repository: signed, attestor: keysAttestor(key.pem), docs: 2},
		{name: "list", repository: "  " + unsigned + ", " + signed, attestor: keysAttestor(key.pem), docs: 2},
		{name: "wrong key", repository: signed, attestor: keysAttestor(other.pem), err: "manifest image " + signed + ": no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{name: "unsigned", repository: unsigned, attestor: keysAttestor(key.pem), err: "manifest not signed: signature not found for the manifest image " + unsigned + ": no signatures found", notSigned: true},
		{name: "missing", repository: reg.host + "/manifests:missing", attestor: keysAttestor(key.pem), err: "failed to fetch the manifest image " + reg.host + "/manifests:missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.VerifyManifest(context.Background(), engine.ManifestVerifyRequest{Repository: tt.repository, AnnotationDomain: "cosign.sigstore.dev", Attestor: tt.attestor})
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) || errors.Is(err, engine.ErrManifestNotSigned) != tt.notSigned {
					t.Fatalf("err = %v, want %q (not signed: %v)", err, tt.err, tt.notSigned)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Manifests) != tt.docs || got.Manifests[0]["kind"] != "Deployment" || got.Manifests[1]["kind"] != "Service" {
				t.Errorf("got %+v", got.Manifests)
			}
		})
	}
}

// TestManifestsRule runs validate.manifests rules end to end: resources
// signed as kubectl sigstore sign signs them, verified by the engine with
// package verify.
func TestManifestsRule(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	blob := manifestBlob(t, map[string]string{"deploy.yaml": signedYAML})
	imageRef, d := pushManifestImage(t, reg, "manifests:v1", blob)
	sign(t, d, key.signer, nil)
	admitted := func(replicas float64, image string, annotations map[string]string) map[string]any {
		obj := yamlObject(t, signedYAML)
		meta := obj["metadata"].(map[string]any)
		meta["namespace"] = "prod"
		meta["uid"] = "4d1c"
		a := map[string]any{}
		for k, v := range annotations {
			a[k] = v
		}
		meta["annotations"] = a
		spec := maps.Clone(obj["spec"].(map[string]any))
		spec["replicas"] = replicas
		if image != "" {
			spec["template"] = map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": image}}}}
		}
		obj["spec"] = spec
		return obj
	}
	signedBy := func(s signature.Signer) map[string]string {
		return map[string]string{"cosign.sigstore.dev/message": gzip64(t, blob), "cosign.sigstore.dev/signature": signBlob(t, s, blob)}
	}
	rule := func(extra string, pems ...string) string {
		s := "      manifests:\n" + extra + "        attestors:\n        - count: 1\n          entries:\n"
		for _, p := range pems {
			s += "          - keys:\n              publicKeys: |-\n" + indent(p, "                ") + "\n"
		}
		return `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: signed-deployments
spec:
  rules:
  - name: manifest
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
` + s
	}
	const ignoreReplicas = "        ignoreFields:\n        - objects:\n          - kind: Deployment\n          fields:\n          - spec.replicas\n"
	const pass = "pass: verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: "
	tests := []struct {
		name, policy string
		obj          map[string]any
		want         string
	}{
		{"signed and unchanged", rule("", key.pem), admitted(2, "", signedBy(key.signer)), pass},
		{"changed field", rule("", key.pem), admitted(2, "evil:1.0", signedBy(key.signer)),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.template.spec.containers.0.image","values":{"after":"evil:1.0","before":"nginx:1.27"}}]}`},
		{"ignored field changed", rule(ignoreReplicas, key.pem), admitted(4, "", signedBy(key.signer)), pass},
		{"not ignored without ignoreFields", rule("", key.pem), admitted(4, "", signedBy(key.signer)),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":4,"before":2}}]}`},
		{"wrong key", rule("", other.pem), admitted(2, "", signedBy(key.signer)),
			"error: error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: signature verification failed: [signature 1/1] invalid signature when validating ASN.1 encoded signature"},
		{"count 1 of 2", rule("", other.pem, key.pem), admitted(2, "", signedBy(key.signer)), pass},
		{"unsigned", rule("", key.pem), admitted(2, "", nil),
			"fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: manifest not signed: message not found: no annotation cosign.sigstore.dev/message"},
		{"malformed annotation", rule("", key.pem), admitted(2, "", map[string]string{"cosign.sigstore.dev/message": "H4sI%%", "cosign.sigstore.dev/signature": "x"}),
			"error: error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: failed to decode the message annotation cosign.sigstore.dev/message: illegal base64 data at input byte 4"},
		{"image", rule("        repository: "+imageRef+"\n", key.pem), admitted(2, "", nil), pass},
		{"image, changed field", rule("        repository: "+imageRef+"\n", key.pem), admitted(3, "", nil),
			`fail: manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {"items":[{"key":"spec.replicas","values":{"after":3,"before":2}}]}`},
		{"image named by the resource", rule("", key.pem), admitted(2, "", map[string]string{"cosign.sigstore.dev/resourceBundleRef": imageRef}), pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, verify.New(), tt.policy)
			resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: tt.obj})
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			for _, p := range resp.Policies {
				for _, r := range p.Rules {
					lines = append(lines, string(r.Status)+": "+r.Message)
				}
			}
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// BenchmarkVerifyManifest: decoding the annotations, reading the YAML and
// checking one ECDSA signature with cosign.
func BenchmarkVerifyManifest(b *testing.B) {
	key := newKey(b)
	blob := manifestBlob(b, map[string]string{"deploy.yaml": signedYAML})
	req := engine.ManifestVerifyRequest{AnnotationDomain: "cosign.sigstore.dev", Attestor: keysAttestor(key.pem), Annotations: map[string]string{
		"cosign.sigstore.dev/message": gzip64(b, blob), "cosign.sigstore.dev/signature": signBlob(b, key.signer, blob)}}
	v := verify.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyManifest(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
