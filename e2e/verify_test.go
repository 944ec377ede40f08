//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// privateRegistry is go-containerregistry's in-process registry on
// 127.0.0.1, whose repositories under private/ need a user and password.
type privateRegistry struct {
	srv  *httptest.Server
	host string
	auth authn.Authenticator
}

func newPrivateRegistry(t *testing.T) *privateRegistry {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/private/") {
			if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &privateRegistry{srv: srv, host: strings.TrimPrefix(srv.URL, "http://"),
		auth: &authn.Basic{Username: "puller", Password: "s3cret"}}
}

// pushSigned writes a random image at repo:tag and, when signer is set,
// cosign's signature of it (the simple signing payload, as cosign sign
// writes it); it returns the digest reference.
func (r *privateRegistry) pushSigned(t *testing.T, repoTag string, signer signature.Signer) name.Digest {
	t.Helper()
	ref, err := name.ParseReference(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.auth)); err != nil {
		t.Fatal(err)
	}
	h, _ := img.Digest()
	d := ref.Context().Digest(h.String())
	if signer == nil {
		return d
	}
	p, err := (&payload.Cosign{Image: d}).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signer.SignMessage(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := static.NewSignature(p, base64.StdEncoding.EncodeToString(raw))
	if err != nil {
		t.Fatal(err)
	}
	opts := ociremote.WithRemoteOptions(remote.WithAuth(r.auth))
	se, err := ociremote.SignedEntity(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	if se, err = mutate.AttachSignatureToEntity(se, sig); err != nil {
		t.Fatal(err)
	}
	if err := ociremote.WriteSignatures(d.Repository, se, opts); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestVerifyImages: verifyImages rules in the cluster, against a registry
// on 127.0.0.1 and images signed with cosign's format at test time; the
// key comes from a Secret and the registry's credentials from the Pod's
// imagePullSecrets, both read through the host; a verified image is
// pinned to its digest and the verification annotation written; an
// unsigned one is denied.
func TestVerifyImages(t *testing.T) {
	e := suite
	ctx := context.Background()
	e.stopGavel()
	reg := newPrivateRegistry(t)
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	signed := reg.pushSigned(t, "private/app:v1", signer)
	reg.pushSigned(t, "private/other:v1", signer)
	reg.pushSigned(t, "private/unsigned:v1", nil)

	e.namespace(t, "verify", nil)
	// the key, in gavel's namespace; the pull secret, in the Pods'
	if _, err := e.Kube.CoreV1().Secrets("gavel").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cosign"}, Data: map[string][]byte{"cosign.pub": pub},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dockercfg, _ := json.Marshal(map[string]any{"auths": map[string]any{reg.host: map[string]any{
		"auth": base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))}}})
	if _, err := e.Kube.CoreV1().Secrets("verify").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: dockercfg},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := map[string]any{
		"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": map[string]any{"name": "e2e-verify"},
		"spec": map[string]any{"webhookTimeoutSeconds": int64(20), "background": false, "rules": []any{map[string]any{
			"name":  "signed",
			"match": map[string]any{"any": []any{map[string]any{"resources": map[string]any{"kinds": []any{"Pod"}, "namespaces": []any{"verify"}}}}},
			"verifyImages": []any{map[string]any{
				"imageReferences": []any{"127.0.0.1:*/private/*"},
				"failureAction":   "Enforce",
				"attestors": []any{map[string]any{"entries": []any{map[string]any{"keys": map[string]any{
					"secret": map[string]any{"name": "e2e-cosign", "namespace": "gavel"}, "rekor": map[string]any{"ignoreTlog": true},
					"ctlog": map[string]any{"ignoreSCT": true}}}}}},
			}},
		}}},
	}
	if err := e.Apply(ctx, policy); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Dynamic.Resource(clusterPolicies).Delete(ctx, "e2e-verify", metav1.DeleteOptions{}) }()
	e.chartWebhooks(t)
	p, _, _ := e.deployed(t, "verify")
	t.Cleanup(p.Stop)

	pod := func(name, image string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "verify"},
			Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
				Containers: []corev1.Container{{Name: "c", Image: image}}},
		}
	}
	tag := reg.host + "/private/app:v1"
	var created *corev1.Pod
	start := time.Now()
	eventually(t, 60*time.Second, "the signed image admitted, pinned to its digest", func() bool {
		name := fmt.Sprintf("signed-%d", time.Now().UnixNano())
		created, err = e.Kube.CoreV1().Pods("verify").Create(ctx, pod(name, tag), metav1.CreateOptions{})
		return err == nil && created.Spec.Containers[0].Image == tag+"@"+signed.DigestStr()
	})
	t.Logf("signed image verified and pinned %s after gavel started", time.Since(start).Round(time.Millisecond))
	ann := created.Annotations["kyverno.io/verify-images"]
	if !strings.Contains(ann, signed.DigestStr()) || !strings.Contains(ann, "pass") {
		t.Errorf("verify-images annotation %q, want the digest passed", ann)
	}
	_, err = e.Kube.CoreV1().Pods("verify").Create(ctx, pod("unsigned", reg.host+"/private/unsigned:v1"), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "denied the request") || !strings.Contains(err.Error(), "e2e-verify") {
		t.Errorf("the unsigned image: %v, want e2e-verify's denial", err)
	}
	// without the pull secret the registry refuses gavel: an error, denied
	// (an image not verified before: the engine keeps verified digests)
	noCreds := pod("no-creds", reg.host+"/private/other:v1")
	noCreds.Spec.ImagePullSecrets = nil
	if _, err := e.Kube.CoreV1().Pods("verify").Create(ctx, noCreds, metav1.CreateOptions{}); err == nil {
		t.Error("an image of the private registry verified without its credentials")
	}
}
