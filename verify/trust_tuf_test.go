package verify_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/verify"
)

// tufRepo is a TUF repository served over HTTP, made with go-tuf's
// metadata package: one key for the four roles, one target,
// trusted_root.json, as Sigstore's repository serves it.
type tufRepo struct {
	srv      *httptest.Server
	root     []byte
	requests atomic.Int32
	failing  atomic.Bool // answer 503
	// hold, when set, holds every request until it is closed
	hold chan struct{}
}

func newTUFRepo(t testing.TB, trustedRoot []byte) *tufRepo {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := signature.LoadED25519Signer(priv)
	if err != nil {
		t.Fatal(err)
	}
	key, err := metadata.KeyFromPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(24 * time.Hour).UTC()
	files := map[string][]byte{}
	publish := func(name string, md interface {
		Sign(signature.Signer) (*metadata.Signature, error)
		ToBytes(bool) ([]byte, error)
	}) {
		if _, err := md.Sign(signer); err != nil {
			t.Fatal(err)
		}
		raw, err := md.ToBytes(false)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = raw
	}
	root := metadata.Root(expires)
	for _, role := range []string{metadata.ROOT, metadata.TARGETS, metadata.SNAPSHOT, metadata.TIMESTAMP} {
		if err := root.Signed.AddKey(key, role); err != nil {
			t.Fatal(err)
		}
	}
	publish("1.root.json", root)
	targets := metadata.Targets(expires)
	tf, err := metadata.TargetFile().FromBytes("trusted_root.json", trustedRoot, "sha256")
	if err != nil {
		t.Fatal(err)
	}
	targets.Signed.Targets["trusted_root.json"] = tf
	publish("1.targets.json", targets)
	publish("1.snapshot.json", metadata.Snapshot(expires))
	publish("timestamp.json", metadata.Timestamp(expires))
	sum := sha256.Sum256(trustedRoot)
	files["targets/"+hex.EncodeToString(sum[:])+".trusted_root.json"] = trustedRoot

	r := &tufRepo{root: files["1.root.json"]}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if r.hold != nil {
			<-r.hold
		}
		if r.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		data, ok := files[req.URL.Path[1:]]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// TestTUF: the trusted root comes from a TUF repository, fetched when a
// policy first needs it and then kept for RefreshInterval.
func TestTUF(t *testing.T) {
	reg := newRegistry(t)
	ca, log := newCA(t), newLog(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	img, d := reg.push(t, "app:keyless")
	signLoggedWith(t, d, signer, string(leaf), log, static.WithCertChain(leaf, []byte(ca.pem)))
	repo := newTUFRepo(t, trustedRootJSON(t, ca, log))
	rekor := newRekor(t, log) // logs nothing: the signature carries its bundle
	cache := t.TempDir()
	v := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL, Root: repo.root, CacheDir: cache, RefreshInterval: time.Hour}))

	entry := "      attestors:\n      - entries:\n        - keyless:\n            subject: dev@example.com\n            issuer: https://issuer.test" +
		"\n            rekor:\n              url: " + rekor.srv.URL + "\n            ctlog:\n              ignoreSCT: true\n"
	set := compile(t, v, policy("", entry))
	if _, got := run(t, set, pod(img)); got != "pass: verified image signatures for "+img {
		t.Fatalf("got %s", got)
	}
	fetched := repo.requests.Load()
	if fetched == 0 {
		t.Fatal("the TUF repository was not asked")
	}
	// kept in memory: a second verification (no cache) asks nothing
	set = compile(t, v, policy("", entry), engine.WithImageVerifyCache(engine.ImageVerifyCacheOptions{Disabled: true}))
	if _, got := run(t, set, pod(img)); got != "pass: verified image signatures for "+img {
		t.Fatalf("second run: got %s", got)
	}
	if n := repo.requests.Load(); n != fetched {
		t.Errorf("the trusted root was fetched again: %d requests, then %d", fetched, n)
	}
	// the metadata was kept in the cache directory
	found := false
	filepath.WalkDir(cache, func(path string, e os.DirEntry, err error) error {
		if err == nil && e.Name() == "timestamp.json" {
			found = true
		}
		return nil
	})
	if !found {
		t.Errorf("no timestamp.json under %s", cache)
	}

	req := engine.ImageVerifyRequest{Image: d.String(), Attestor: api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test",
		Rekor: &api.Rekor{URL: rekor.srv.URL}, CTLog: &api.CTLog{IgnoreSCT: true}}}}
	// a repository that cannot be reached: "unavailable", so failurePolicy
	// Ignore applies
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	err := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: down.URL, Root: repo.root})).VerifySignature(context.Background(), req)
	if !errors.Is(err, engine.ErrRegistryUnavailable) {
		t.Errorf("repository down: %v", err)
	}
	// metadata signed by another key than the trusted TUF root's
	other := newTUFRepo(t, trustedRootJSON(t, ca, log))
	err = verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: other.srv.URL, Root: repo.root})).VerifySignature(context.Background(), req)
	if err == nil || errors.Is(err, engine.ErrRegistryUnavailable) {
		t.Errorf("untrusted repository: %v", err)
	}
	// another repository than the public good needs its root.json
	err = verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL})).VerifySignature(context.Background(), req)
	if err == nil || err.Error() != "keyless verification without roots: TUF repository "+repo.srv.URL+": no trusted root.json (TUFOptions.Root)" {
		t.Errorf("no TUF root: %v", err)
	}
	// past RefreshInterval the repository is asked again; when it cannot
	// be reached, the root fetched before still serves
	stale := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL, Root: repo.root, RefreshInterval: time.Nanosecond}))
	if err := stale.VerifySignature(context.Background(), req); err != nil {
		t.Fatalf("refreshing root: %v", err)
	}
	before := repo.requests.Load()
	if err := stale.VerifySignature(context.Background(), req); err != nil || repo.requests.Load() == before {
		t.Errorf("refresh: %v, %d requests then %d", err, before, repo.requests.Load())
	}
	repo.failing.Store(true)
	if err := stale.VerifySignature(context.Background(), req); err != nil {
		t.Errorf("failed refresh: %v", err)
	}
	// a failed refresh is not tried on every verification
	slow := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL, Root: repo.root, RefreshInterval: 300 * time.Millisecond}))
	repo.failing.Store(false)
	if err := slow.VerifySignature(context.Background(), req); err != nil {
		t.Fatalf("slow refresh: %v", err)
	}
	repo.failing.Store(true)
	time.Sleep(350 * time.Millisecond)
	before = repo.requests.Load()
	for range 3 {
		if err := slow.VerifySignature(context.Background(), req); err != nil {
			t.Errorf("failed refresh: %v", err)
		}
	}
	if n := repo.requests.Load() - before; n != 1 {
		t.Errorf("%d requests for 3 verifications after a failed refresh, want 1", n)
	}
	// a cancelled context stops the fetch
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL, Root: repo.root})).VerifySignature(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestTUFSharedFetch: verifications that wait for one fetch of the
// trusted root each wait on their own context: the first, whose deadline
// passes, fails alone; the fetch goes on and serves the others.
func TestTUFSharedFetch(t *testing.T) {
	reg := newRegistry(t)
	ca, log := newCA(t), newLog(t)
	signer, leaf := ca.issue(t, "dev@example.com", "https://issuer.test")
	_, d := reg.push(t, "app:keyless")
	signLoggedWith(t, d, signer, string(leaf), log, static.WithCertChain(leaf, []byte(ca.pem)))
	repo := newTUFRepo(t, trustedRootJSON(t, ca, log))
	repo.hold = make(chan struct{})
	rekor := newRekor(t, log)
	v := verify.New(verify.WithTUF(verify.TUFOptions{RepositoryURL: repo.srv.URL, Root: repo.root}))
	req := engine.ImageVerifyRequest{Image: d.String(), Attestor: api.Attestor{Keyless: &api.KeylessAttestor{Subject: "dev@example.com", Issuer: "https://issuer.test",
		Rekor: &api.Rekor{URL: rekor.srv.URL}, CTLog: &api.CTLog{IgnoreSCT: true}}}}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	firstDone := make(chan error, 1)
	go func() { firstDone <- v.VerifySignature(short, req) }()
	others := make(chan error, 3)
	for range 3 {
		go func() { others <- v.VerifySignature(context.Background(), req) }()
	}
	if err := <-firstDone; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("first verification: %v, want its deadline", err)
	}
	close(repo.hold)
	for range 3 {
		if err := <-others; err != nil {
			t.Errorf("verification waiting for the fetch: %v", err)
		}
	}
}
