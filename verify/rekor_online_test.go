package verify_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	"github.com/sigstore/sigstore/pkg/signature"
)

// testRekor is Rekor's API in process: it answers the searches cosign
// makes for signatures without a bundle (POST
// /api/v1/log/entries/retrieve with proposed hashedrekord entries) with
// the entries it logged, each with its inclusion proof (a tree of one
// leaf) and an entry timestamp the log's key signed.
type testRekor struct {
	srv      *httptest.Server
	log      *testLog
	status   atomic.Int32 // answer with this status instead, when set
	searches atomic.Int32

	mu      sync.Mutex
	entries map[string]map[string]any // by base64 signature: uuid -> entry
}

func newRekor(t testing.TB, log *testLog) *testRekor {
	r := &testRekor{log: log, entries: map[string]map[string]any{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || req.URL.Path != "/api/v1/log/entries/retrieve" {
			http.NotFound(w, req)
			return
		}
		r.searches.Add(1)
		if s := r.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		var query struct {
			Entries []struct {
				Spec struct {
					Signature struct {
						Content string `json:"content"`
					} `json:"signature"`
				} `json:"spec"`
			} `json:"entries"`
		}
		if err := json.NewDecoder(req.Body).Decode(&query); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := []any{}
		r.mu.Lock()
		for _, e := range query.Entries {
			if found, ok := r.entries[e.Spec.Signature.Content]; ok {
				out = append(out, found)
			}
		}
		r.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// add logs the signature's hashedrekord entry.
func (r *testRekor) add(t testing.TB, p []byte, b64sig, pubPEM string) {
	t.Helper()
	rp, set := logEntry(t, r.log, p, b64sig, pubPEM, 0)
	body, err := base64.StdEncoding.DecodeString(rp.Body.(string))
	if err != nil {
		t.Fatal(err)
	}
	// RFC 6962 leaf hash: the entry's UUID, and the root of a tree of one
	leaf := sha256.Sum256(append([]byte{0}, body...))
	uuid := hex.EncodeToString(leaf[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[b64sig] = map[string]any{uuid: map[string]any{
		"body": rp.Body, "integratedTime": rp.IntegratedTime, "logID": rp.LogID, "logIndex": rp.LogIndex,
		"verification": map[string]any{
			"inclusionProof":       map[string]any{"hashes": []string{}, "logIndex": 0, "rootHash": uuid, "treeSize": 1, "checkpoint": "test - 1\n1\n" + base64.StdEncoding.EncodeToString(leaf[:]) + "\n"},
			"signedEntryTimestamp": base64.StdEncoding.EncodeToString(set),
		},
	}}
}

// signOnline signs the image, logs the signature in the Rekor and attaches
// it without its bundle, as cosign sign did before bundles.
func signOnline(t *testing.T, d name.Digest, signer signature.Signer, pubPEM string, r *testRekor, opts ...static.Option) {
	t.Helper()
	p, b64sig := signPayload(t, d, signer)
	r.add(t, p, b64sig, pubPEM)
	sig, err := static.NewSignature(p, b64sig, opts...)
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, sig, false)
}
