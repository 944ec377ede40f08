package verify_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// Keyless attestors without roots verify with Sigstore's trusted root. An
// air-gapped cluster keeps a trusted_root.json (here a test one) and gives
// it to the Verifier; without it such attestors are "not configured".
func ExampleWithTrustedRoot() {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	img, _ := random.Image(64, 1)
	ref, _ := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/app:v1")
	if err := remote.Write(ref, img); err != nil {
		panic(err)
	}
	d, _ := img.Digest()

	tr, err := root.NewTrustedRootFromPath(filepath.Join("testdata", "trusted_root.json"))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d certificate authority, %d Rekor log\n", len(tr.FulcioCertificateAuthorities()), len(tr.RekorLogs()))

	req := engine.ImageVerifyRequest{Image: ref.Context().Digest(d.String()).String(), Attestor: api.Attestor{Keyless: &api.KeylessAttestor{
		Subject: "dev@example.com", Issuer: "https://issuer.example",
		Rekor: &api.Rekor{IgnoreTlog: true}, CTLog: &api.CTLog{IgnoreSCT: true}}}}
	for _, v := range []*verify.Verifier{verify.New(), verify.New(verify.WithTrustedRoot(tr))} {
		fmt.Println(v.VerifySignature(context.Background(), req))
	}
	// Output:
	// 1 certificate authority, 1 Rekor log
	// keyless verification without roots needs Sigstore's trusted root (verify.WithTUF or verify.WithTrustedRoot): not configured
	// no signatures found
}

// Sigstore's public-good trusted root comes through TUF, as cosign gets
// it; the program chooses where the TUF metadata is cached (cosign's
// place is ~/.sigstore/root). The root is fetched when a policy first
// needs it, then once a day. A private Sigstore's repository needs its
// TUF root.json.
func ExampleWithTUF() {
	home, err := os.UserHomeDir()
	if err != nil {
		panic(err)
	}
	publicGood := verify.New(verify.WithTUF(verify.TUFOptions{CacheDir: filepath.Join(home, ".sigstore", "root")}))
	_ = engine.WithImageVerifier(publicGood)

	private := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: "https://tuf.sigstore.internal"}))
	req := engine.ImageVerifyRequest{Image: "registry.internal/app@sha256:" + strings.Repeat("0", 64), Attestor: api.Attestor{Keyless: &api.KeylessAttestor{
		Subject: "dev@example.com", Issuer: "https://issuer.example",
		Rekor: &api.Rekor{IgnoreTlog: true}, CTLog: &api.CTLog{IgnoreSCT: true}}}}
	fmt.Println(private.VerifySignature(context.Background(), req))
	// Output:
	// keyless verification without roots: TUF repository https://tuf.sigstore.internal: no trusted root.json (TUFOptions.Root)
}
