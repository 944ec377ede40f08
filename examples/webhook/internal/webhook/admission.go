package webhook

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/engine"
)

// reviewFunc answers one admission request with the given policy set.
type reviewFunc func(ctx context.Context, set *engine.PolicySet, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// serveReview decodes an AdmissionReview, answers it and encodes the
// response review. Malformed reviews get HTTP 400: the API server then
// applies the webhook's failurePolicy.
func (s *Server) serveReview(fn reviewFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ct := r.Header.Get("Content-Type"); ct != "" {
			if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
				http.Error(w, "content type must be application/json", http.StatusUnsupportedMediaType)
				return
			}
		}
		var review admissionv1.AdmissionReview
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
		if err := dec.Decode(&review); err != nil {
			http.Error(w, "malformed AdmissionReview: "+err.Error(), http.StatusBadRequest)
			return
		}
		if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Request == nil {
			http.Error(w, "expected an admission.k8s.io/v1 AdmissionReview with a request", http.StatusBadRequest)
			return
		}
		resp := fn(r.Context(), s.store.cur.Load().set, review.Request)
		resp.UID = review.Request.UID
		out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(&out); err != nil {
			s.opts.Logf("writing AdmissionReview response: %v", err)
		}
	}
}

// validate answers with the validate rules (admission.ValidateResponse);
// an allowed request that is not a dry run then goes to the generate
// rules, which queue UpdateRequests. The engine request is built once
// (admission.Request), for both.
func (s *Server) validate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	req, err := admission.Request(ar)
	var resp *engine.Response
	if err == nil {
		resp, err = set.Validate(ctx, req)
	}
	out := admission.ValidateResponse(ar, resp, err)
	if !out.Allowed || req.DryRun {
		return out
	}
	if gen, err := set.Generate(ctx, req); err != nil {
		s.opts.Logf("generate for %s %s/%s: %v", ar.Kind.Kind, ar.Namespace, ar.Name, err)
	} else if n := len(gen.UpdateRequests); n > 0 {
		s.opts.Logf("queued %d update requests for %s %s/%s", n, ar.Kind.Kind, ar.Namespace, ar.Name)
	}
	return out
}

// mutate answers with the mutate rules' JSON patch (admission.Mutate).
func (s *Server) mutate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	resp, _ := admission.Mutate(ctx, set, ar)
	return resp
}
