package verify_test

import (
	"context"
	"crypto"
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// testKMS is a KMS provider registered with sigstore's registry for the
// test: gaveltestkms://NAME serves the test key NAME, gaveldownkms://
// fails as an unreachable KMS does, gavelresetkms:// once its client was
// made.
var testKMSKeys = map[string]*testKey{}

// kmsKey is the SignerVerifier a provider returns; the verifier asks it
// for the public key only.
type kmsKey struct{ signature.SignerVerifier }

func (kmsKey) CreateKey(context.Context, string) (crypto.PublicKey, error) {
	return nil, errors.New("read-only test KMS")
}
func (kmsKey) CryptoSigner(context.Context, func(error)) (crypto.Signer, crypto.SignerOpts, error) {
	return nil, nil, errors.New("read-only test KMS")
}
func (kmsKey) SupportedAlgorithms() []string { return []string{"ecdsa-p256-sha256"} }
func (kmsKey) DefaultAlgorithm() string      { return "ecdsa-p256-sha256" }

// unreachableKey is a key whose KMS stops answering after the client was
// made.
type unreachableKey struct{ kmsKey }

func (unreachableKey) PublicKey(...signature.PublicKeyOption) (crypto.PublicKey, error) {
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
}

func init() {
	kms.AddProvider("gaveltestkms://", func(_ context.Context, ref string, hash crypto.Hash, _ ...signature.RPCOption) (kms.SignerVerifier, error) {
		k, ok := testKMSKeys[strings.TrimPrefix(ref, "gaveltestkms://")]
		if !ok {
			return nil, errors.New("key not found: " + ref)
		}
		sv, err := signature.LoadECDSASignerVerifier(k.priv, hash)
		if err != nil {
			return nil, err
		}
		return kmsKey{sv}, nil
	})
	kms.AddProvider("gavelresetkms://", func(context.Context, string, crypto.Hash, ...signature.RPCOption) (kms.SignerVerifier, error) {
		return unreachableKey{}, nil
	})
	kms.AddProvider("gaveldownkms://", func(context.Context, string, crypto.Hash, ...signature.RPCOption) (kms.SignerVerifier, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	})
}

// TestKMSKeys: keys.kms through sigstore's KMS registry, with the scheme
// of a provider the program registered, and k8s:// references read as
// Secrets.
func TestKMSKeys(t *testing.T) {
	reg := newRegistry(t)
	key, other := newKey(t), newKey(t)
	testKMSKeys["signer"], testKMSKeys["other"] = key, other
	img, d := reg.push(t, "app:v1")
	sign(t, d, key.signer, nil)
	v := verify.New(verify.WithSecrets(secrets{"keys/signer": {"cosign.pub": []byte(key.pem)}}))
	prefix := "failed to verify image " + img + ": .attestors[0].entries[0].keys: "
	tests := []struct{ name, keys, want string }{
		{"kms key", "            kms: gaveltestkms://signer\n", "pass: verified image signatures for " + img},
		{"sha512 kms key", "            kms: gaveltestkms://signer\n            signatureAlgorithm: sha512\n", "fail: " + prefix + "no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{"other kms key", "            kms: gaveltestkms://other\n", "fail: " + prefix + "no matching signatures: invalid signature when validating ASN.1 encoded signature"},
		{"unknown kms key", "            kms: gaveltestkms://none\n", "fail: " + prefix + "failed to load KMS key gaveltestkms://none: key not found: gaveltestkms://none"},
		{"kms unreachable", "            kms: gaveldownkms://key\n", "error: " + prefix + "image registry unavailable: failed to load KMS key gaveldownkms://key: dial tcp: connection refused"},
		{"kms reset", "            kms: gavelresetkms://key\n", "error: " + prefix + "image registry unavailable: failed to read the public key of KMS key gavelresetkms://key: read tcp: connection reset by peer"},
		{"no provider", "            kms: awskms:///alias/signer\n", "error: " + prefix + "KMS key awskms:///alias/signer: no KMS provider registered for its scheme (import github.com/gavelpolicy/gavel/verify/kmsproviders for cosign's providers): not configured"},
		{"k8s:// kms", "            kms: k8s://keys/signer\n", "pass: verified image signatures for " + img},
		{"bad k8s://", "            kms: k8s://signer\n", "fail: " + prefix + "invalid key reference k8s://signer: want k8s://namespace/name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := compile(t, v, policy("", "      attestors:\n      - entries:\n        - keys:\n"+tt.keys))
			if _, got := run(t, set, pod(img)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	// the typed causes
	req := engine.ImageVerifyRequest{Image: d.String(), Attestor: api.Attestor{Keys: &api.StaticKeyAttestor{KMS: "awskms:///alias/signer"}}}
	if err := v.VerifySignature(context.Background(), req); !errors.Is(err, verify.ErrKMSProviderNotRegistered) || !errors.Is(err, engine.ErrNotConfigured) {
		t.Errorf("unregistered provider: %v", err)
	}
	req.Attestor.Keys.KMS = "gaveldownkms://key"
	if err := v.VerifySignature(context.Background(), req); !errors.Is(err, engine.ErrRegistryUnavailable) {
		t.Errorf("unreachable KMS: %v", err)
	}
	// failurePolicy Ignore lets the image through when the KMS is down
	set := compile(t, v, policy("  webhookConfiguration:\n    failurePolicy: Ignore\n", "      attestors:\n      - entries:\n        - keys:\n            kms: gaveldownkms://key\n"))
	if resp, got := run(t, set, pod(img)); !strings.HasPrefix(got, "skip: ") || resp.Blocked() {
		t.Errorf("failurePolicy Ignore: got %s (blocked %v)", got, resp.Blocked())
	}
}

// TestLinksNoCloudSDK: package verify compiles none of the clouds' SDKs;
// the KMS providers and credential helpers come with the opt-in packages
// (kmsproviders, cloudauth), as `go list -deps` tells.
func TestLinksNoCloudSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(gobin, "list", "-deps", "github.com/gavelpolicy/gavel/verify").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/sigstore/sigstore/pkg/signature/kms") {
		t.Fatalf("go list -deps gave no sigstore kms registry: %d packages", len(deps))
	}
	for _, d := range deps {
		for _, bad := range []string{"aws-sdk-go", "cloud.google.com", "azure-sdk-for-go", "hashicorp/vault", "ecr-login", "docker-credential-acr-env", "/kms/aws", "/kms/gcp", "/kms/azure", "/kms/hashivault"} {
			if strings.Contains(d, bad) {
				t.Errorf("verify imports %s", d)
			}
		}
	}
}
