package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// webhook answers AdmissionReviews with the policies the PolicySource
// serves now. It keeps no state: any number of replicas may serve.
type webhook struct {
	src         *cluster.PolicySource
	warnOnAudit bool
	// reports records the results of admitted requests for the policy
	// reports (nil: not recorded).
	reports *cluster.AdmissionReports
	// downstream writes the UpdateRequests of changes of generated
	// resources and clone sources (nil: /downstream admits and does
	// nothing).
	downstream *cluster.DownstreamAdmission
	// roles fills the RBAC roles bound to the requesting user (nil: none).
	roles *cluster.RoleBindings
	logf  func(string, ...any)
}

func (w *webhook) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /validate", w.serve(w.validate, false))
	mux.HandleFunc("POST /mutate", w.serve(w.mutate, false))
	mux.HandleFunc("POST /downstream", w.serve(w.downstreamChange, true))
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write([]byte("ok\n")) })
	return mux
}

type reviewFunc func(ctx context.Context, set *engine.PolicySet, req *engine.Request) *admissionv1.AdmissionResponse

// serve decodes the AdmissionReview and answers with fn's response. A
// request it cannot decode is refused, unless admit: then it is logged and
// admitted (a webhook that only records must never deny).
func (w *webhook) serve(fn reviewFunc, admit bool) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 3<<20)).Decode(&review); err != nil || review.Request == nil {
			http.Error(rw, "malformed AdmissionReview", http.StatusBadRequest)
			return
		}
		var resp *admissionv1.AdmissionResponse
		req, err := admission.Request(review.Request)
		if err == nil && w.roles != nil {
			req.Roles, req.ClusterRoles, err = w.roles.Of(req.Namespace, req.UserInfo)
		}
		switch {
		case err != nil && admit:
			w.logf("%s: %v", r.URL.Path, err)
			resp = &admissionv1.AdmissionResponse{Allowed: true}
		case err != nil:
			resp = errorResponse(http.StatusBadRequest, err)
		default:
			var set *engine.PolicySet
			if w.src != nil {
				set = w.src.Set() // one set for the whole request
			}
			resp = fn(r.Context(), set, req)
		}
		resp.UID = review.Request.UID
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
	}
}

// validate runs the validate rules and, for an admitted request, the
// generate rules, whose UpdateRequests the host writes to the cluster.
func (w *webhook) validate(ctx context.Context, set *engine.PolicySet, req *engine.Request) *admissionv1.AdmissionResponse {
	out := &admissionv1.AdmissionResponse{Allowed: true}
	// a DELETE carries the old object only: validate rules see it as
	// upstream's do (a rule may deny deleting)
	if req.Object != nil || req.OldObject != nil {
		resp, err := set.Validate(ctx, req)
		if err != nil {
			return errorResponse(http.StatusInternalServerError, fmt.Errorf("gavel: validation failed: %w", err))
		}
		if resp.Blocked() {
			// upstream's denial, its message written as upstream writes it
			// (yaml.v2, long lines folded)
			return admission.ValidateResponse(nil, resp, nil)
		}
		out.Warnings = w.warnings(resp)
		if w.reports != nil {
			w.reports.Record(req, resp) // queued, never waits
		}
	}
	if !req.DryRun {
		if _, err := set.Generate(ctx, req); err != nil {
			w.logf("generate for %s %s/%s: %v", req.Kind.Kind, req.Namespace, req.Name, err)
		}
	}
	return out
}

// downstreamChange handles an UPDATE or DELETE of an object carrying the
// generate tracking labels (the webhook configuration's objectSelector
// sends only those): the UpdateRequest that synchronizes it is written
// for the leader, now or when one starts. It always admits: a failure to
// write is logged and counted, never a denial.
func (w *webhook) downstreamChange(ctx context.Context, set *engine.PolicySet, req *engine.Request) *admissionv1.AdmissionResponse {
	if w.downstream != nil {
		if _, err := w.downstream.Handle(ctx, set, req); err != nil {
			w.logf("downstream %s %s %s/%s (%d failed so far): %v", req.Operation, req.Kind.Kind, req.Namespace, req.Name, w.downstream.Failed(), err)
		}
	}
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func (w *webhook) warnings(resp *engine.Response) []string {
	var out []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if r.Status != engine.StatusFail && r.Status != engine.StatusError {
				continue
			}
			if r.EmitWarning || (w.warnOnAudit && !p.FailureAction.IsEnforce()) {
				out = append(out, fmt.Sprintf("policy %s.%s: %s", p.Policy.Name(), r.Name, r.Message))
			}
		}
	}
	return out
}

// mutate answers with the JSON patch of the mutate rules.
func (w *webhook) mutate(ctx context.Context, set *engine.PolicySet, req *engine.Request) *admissionv1.AdmissionResponse {
	if req.Object == nil {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	resp, err := set.Mutate(ctx, req)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, fmt.Errorf("gavel: mutation failed: %w", err))
	}
	out := &admissionv1.AdmissionResponse{Allowed: true}
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if r.Status == engine.StatusFail || r.Status == engine.StatusError {
				out.Warnings = append(out.Warnings, fmt.Sprintf("policy %s.%s: %s", p.Policy.Name(), r.Name, r.Message))
			}
		}
	}
	if len(resp.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		out.Patch, out.PatchType = resp.Patch, &pt
	}
	return out
}

func errorResponse(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Result: &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: err.Error()}}
}
