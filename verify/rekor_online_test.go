package verify_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-openapi/runtime"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	rekorclient "github.com/sigstore/rekor/pkg/client"
	"github.com/sigstore/rekor/pkg/generated/models"
	"github.com/sigstore/rekor/pkg/types"
	rekorutil "github.com/sigstore/rekor/pkg/util"
	"github.com/sigstore/sigstore/pkg/signature"
)

// testRekor is Rekor's API in process, as the log server handles entries:
// POST /api/v1/log/entries logs a proposed entry (cosign attest's upload
// of intoto and dsse entries), POST /api/v1/log/entries/retrieve
// searches by proposed entries (what cosign's online verification asks:
// a hashedrekord entry for a signature, dsse and intoto entries for an
// attestation). Both canonicalize the entry with rekor's types and key it
// by its RFC 6962 leaf hash, the entry's UUID; each answer has its
// inclusion proof (a tree of one leaf) and an entry timestamp (SET) the
// log's key signed.
type testRekor struct {
	srv      *httptest.Server
	log      *testLog
	status   atomic.Int32 // answer with this status instead, when set
	searches atomic.Int32
	// integrated is the entries' integrated time (Unix seconds); zero
	// means now
	integrated atomic.Int64

	mu      sync.Mutex
	entries map[string]models.LogEntryAnon // by UUID
}

func newRekor(t testing.TB, log *testLog) *testRekor {
	r := &testRekor{log: log, entries: map[string]models.LogEntryAnon{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testRekor) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	switch req.URL.Path {
	case "/api/v1/log/entries":
		pe, err := models.UnmarshalProposedEntry(req.Body, runtime.JSONConsumer())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		uuid, e, err := r.record(req.Context(), pe)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/api/v1/log/entries/"+uuid)
		w.Header().Set("ETag", uuid)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(models.LogEntry{uuid: e})
	case "/api/v1/log/entries/retrieve":
		r.searches.Add(1)
		if s := r.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		var query models.SearchLogQuery
		if err := json.NewDecoder(req.Body).Decode(&query); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := []models.LogEntry{}
		for _, pe := range query.Entries() {
			uuid, _, err := canonical(req.Context(), pe)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.mu.Lock()
			e, ok := r.entries[uuid]
			r.mu.Unlock()
			if ok {
				out = append(out, models.LogEntry{uuid: e})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	default:
		http.NotFound(w, req)
	}
}

// canonical returns an entry's UUID and canonical body, as the log
// server computes them.
func canonical(ctx context.Context, pe models.ProposedEntry) (string, []byte, error) {
	impl, err := types.UnmarshalEntry(pe)
	if err != nil {
		return "", nil, err
	}
	body, err := types.CanonicalizeEntry(ctx, impl)
	if err != nil {
		return "", nil, err
	}
	leaf := sha256.Sum256(append([]byte{0}, body...))
	return hex.EncodeToString(leaf[:]), body, nil
}

// record logs the proposed entry.
func (r *testRekor) record(ctx context.Context, pe models.ProposedEntry) (string, models.LogEntryAnon, error) {
	uuid, body, err := canonical(ctx, pe)
	if err != nil {
		return "", models.LogEntryAnon{}, err
	}
	at := r.integrated.Load()
	if at == 0 {
		at = time.Now().Unix()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[uuid]; ok {
		return uuid, e, nil
	}
	b64 := base64.StdEncoding.EncodeToString(body)
	index := int64(len(r.entries))
	// the SET signs the canonical JSON of these four (sorted keys, which
	// a map of plain values gives)
	payload, _ := json.Marshal(map[string]any{"body": b64, "integratedTime": at, "logIndex": index, "logID": r.log.id})
	digest := sha256.Sum256(payload)
	set, err := ecdsa.SignASN1(rand.Reader, r.log.key, digest[:])
	if err != nil {
		return "", models.LogEntryAnon{}, err
	}
	zero, one := int64(0), int64(1)
	leaf, _ := hex.DecodeString(uuid)
	// a tree of one leaf: the root is the leaf hash, in a checkpoint (a
	// signed note) of the log's key
	signer, err := signature.LoadECDSASigner(r.log.key, crypto.SHA256)
	if err != nil {
		return "", models.LogEntryAnon{}, err
	}
	checkpoint, err := rekorutil.CreateAndSignCheckpoint(ctx, "rekor.test", 1, 1, leaf, signer)
	if err != nil {
		return "", models.LogEntryAnon{}, err
	}
	e := models.LogEntryAnon{Body: b64, IntegratedTime: &at, LogIndex: &index, LogID: &r.log.id,
		Verification: &models.LogEntryAnonVerification{
			InclusionProof:       &models.InclusionProof{Hashes: []string{}, LogIndex: &zero, RootHash: &uuid, TreeSize: &one, Checkpoint: strPtr(string(checkpoint))},
			SignedEntryTimestamp: set,
		}}
	r.entries[uuid] = e
	return uuid, e, nil
}

func strPtr(s string) *string { return &s }

// add logs the signature's hashedrekord entry.
func (r *testRekor) add(t testing.TB, p []byte, b64sig, pubPEM string) {
	t.Helper()
	rp, _ := logEntry(t, r.log, p, b64sig, pubPEM, 0)
	body, err := base64.StdEncoding.DecodeString(rp.Body.(string))
	if err != nil {
		t.Fatal(err)
	}
	pe, err := models.UnmarshalProposedEntry(bytes.NewReader(body), runtime.JSONConsumer())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.record(context.Background(), pe); err != nil {
		t.Fatal(err)
	}
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

// attestOnline attaches a DSSE-signed in-toto statement about the image
// without its bundle and, when r is not nil, uploads it to the log with
// cosign's client as cosign attest does: an intoto entry, or a dsse
// entry when dsse is set; opts add a certificate chain.
func attestOnline(t testing.TB, d name.Digest, signer signature.Signer, pubPEM string, r *testRekor, dsse bool, predicateType string, predicate any, opts ...static.Option) {
	t.Helper()
	env := attestation(t, d, signer, predicateType, predicate)
	if r != nil {
		rc, err := rekorclient.GetRekorClient(r.srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		upload := cosign.TLogUploadInTotoAttestation
		if dsse {
			upload = cosign.TLogUploadDSSEEnvelope
		}
		if _, err := upload(context.Background(), rc, env, []byte(pubPEM)); err != nil {
			t.Fatal(err)
		}
	}
	att, err := static.NewAttestation(env, opts...)
	if err != nil {
		t.Fatal(err)
	}
	attach(t, d, att, true)
}
