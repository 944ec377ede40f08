package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// webhook answers AdmissionReviews with the policies the PolicySource
// serves now, through the admission package (the same answers as any
// other host of gavel: upstream's denials, warnings and patches). It
// keeps no state: any number of replicas may serve.
//
// Paths, as the webhook configurations the leader writes name them:
// /validate/fail and /validate/ignore serve the policies of that failure
// policy, /validate/{fail,ignore}/finegrained/KEY the policies of a
// webhook of their own (KEY: NAMESPACE/NAME or NAME of a policy with
// match conditions, kind.NAME of a CEL policy (its kind in lower case), selectors/HASH of CEL
// policies with the same selectors); /mutate likewise; /validate and
// /mutate alone serve every policy (static webhook configurations);
// /downstream the updates and deletions of generated resources and clone
// sources; /policyvalidate the ClusterPolicies and Policies created or
// updated (servePolicy).
type webhook struct {
	src *cluster.PolicySource
	// host gives subresource requests their resource's kind (nil: left
	// to the request's kind)
	host *cluster.Host
	// reports records the results of admitted requests for the policy
	// reports (nil: not recorded).
	reports *cluster.AdmissionReports
	// downstream writes the UpdateRequests of changes of generated
	// resources and clone sources (nil: /downstream admits and does
	// nothing).
	downstream *cluster.DownstreamAdmission
	// roles fills the RBAC roles bound to the requesting user (nil: none).
	roles *cluster.RoleBindings
	// controllerUser is the user gavel's controller writes as: its
	// requests are the controller's writes (engine.Request.ControllerWrite)
	controllerUser string
	metrics        *cluster.Metrics
	log            *slog.Logger
}

// policySet picks the policies one path serves.
type policySet func(w *webhook, r *http.Request) *engine.PolicySet

// allPolicies serves every policy the webhooks serve (not the admission
// policies the API server evaluates itself).
func allPolicies(w *webhook, _ *http.Request) *engine.PolicySet { return w.src.WebhookSet("", "") }

func byFailurePolicy(w *webhook, r *http.Request) *engine.PolicySet {
	return w.src.WebhookSet(failurePolicy(r), r.PathValue("key"))
}

func failurePolicy(r *http.Request) api.FailurePolicyType {
	if r.PathValue("fp") == "ignore" {
		return api.Ignore
	}
	return api.Fail
}

func (w *webhook) handler() http.Handler {
	mux := http.NewServeMux()
	for _, route := range []struct {
		path string
		set  policySet
	}{
		{"", allPolicies},
		{"/{fp}", byFailurePolicy},
		{"/{fp}" + cluster.FineGrainedPath + "/{key...}", byFailurePolicy},
	} {
		mux.HandleFunc("POST "+cluster.ValidatePath+route.path, w.serve(cluster.ValidatingWebhook, route.set, w.validate))
		mux.HandleFunc("POST "+cluster.MutatePath+route.path, w.serve(cluster.MutatingWebhook, route.set, w.mutate))
	}
	mux.HandleFunc("POST "+cluster.DownstreamPath, w.serveDownstream)
	mux.HandleFunc("POST "+cluster.PolicyPath, w.servePolicy)
	mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", w.readyz)
	return instrument(mux, w.metrics)
}

// readyz answers 200 once the policies that existed at start are
// compiled, 503 before.
func (w *webhook) readyz(rw http.ResponseWriter, _ *http.Request) {
	if w.src != nil && !w.src.Synced() {
		http.Error(rw, "policies not compiled yet", http.StatusServiceUnavailable)
		return
	}
	_, _ = rw.Write([]byte("ok\n"))
}

// instrument records kyverno_http_requests_total and its duration for
// every request.
func instrument(next http.Handler, m *cluster.Metrics) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(rw, r)
		m.HTTP(r.Method, r.URL.Path, time.Since(start))
	})
}

type reviewFunc func(ctx context.Context, part string, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// decode reads an AdmissionReview; it answers 400 itself (the API server
// then applies the webhook's failure policy) and returns nil when the
// body is not one.
func decode(rw http.ResponseWriter, r *http.Request) *admissionv1.AdmissionReview {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(rw, r.Body, 3<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "malformed AdmissionReview", http.StatusBadRequest)
		return nil
	}
	return &review
}

func respond(rw http.ResponseWriter, review *admissionv1.AdmissionReview, resp *admissionv1.AdmissionResponse) {
	resp.UID = review.Request.UID
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}

// serve answers an AdmissionReview with fn on the path's policies, and
// records the admission's metrics.
func (w *webhook) serve(typ string, pick policySet, fn reviewFunc) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		start := time.Now()
		review := decode(rw, r)
		if review == nil {
			return
		}
		part := r.PathValue("fp")
		var resp *admissionv1.AdmissionResponse
		if set := pick(w, r); set == nil {
			// a policy's own webhook after the policy went: nothing to say
			resp = &admissionv1.AdmissionResponse{Allowed: true}
		} else {
			resp = fn(r.Context(), part, set, review.Request)
		}
		respond(rw, review, resp)
		ar := review.Request
		w.metrics.Admission(typ, ar.Kind.Kind, ar.Namespace, api.AdmissionOperation(ar.Operation), resp.Allowed, time.Since(start))
	}
}

// validate answers with the validate rules (admission.ValidateResponse);
// an allowed request that is not a dry run then goes to the generate
// rules, whose UpdateRequests the host writes to the cluster.
func (w *webhook) validate(ctx context.Context, part string, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	req, err := w.request(ar)
	if err == nil && w.skips(req) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var resp *engine.Response
	if err == nil {
		resp, err = set.Validate(ctx, req)
	}
	out := admission.ValidateResponse(ar, resp, err)
	if req == nil {
		return out
	}
	w.metrics.Results(req, resp, false)
	w.events(req, resp, !out.Allowed)
	if !out.Allowed || req.DryRun {
		return out
	}
	if w.reports != nil && resp != nil {
		w.reports.Record(req, resp, part) // queued, never waits
	}
	gen, err := set.Generate(ctx, req)
	if err != nil {
		w.log.Error("generate", "kind", ar.Kind.Kind, "namespace", ar.Namespace, "name", ar.Name, "err", err)
	}
	if w.host != nil {
		w.host.RecordGenerateEvents(gen) // a request not written: its policy's PolicyError
	}
	w.metrics.Results(req, gen, false)
	return out
}

// request converts the admission request (admission.Request) and gives a
// subresource request its resource's kind, which match blocks select
// (cluster.Host.SetResourceKind): the one thing the host adds.
func (w *webhook) request(ar *admissionv1.AdmissionRequest) (*engine.Request, error) {
	req, err := admission.Request(ar)
	if err == nil && w.host != nil {
		w.host.SetResourceKind(req)
	}
	if err == nil && w.roles != nil {
		req.Roles, req.ClusterRoles, err = w.roles.Of(req.Namespace, req.UserInfo)
	}
	if err == nil && w.controllerUser != "" && req.UserInfo.Username == w.controllerUser {
		// the controller's own write: policies that skip background
		// requests leave it alone, as upstream's webhooks
		req.ControllerWrite = true
	}
	return req, err
}

// skips reports whether the host's configuration (its ConfigMap's
// resourceFilters and user exclusions) leaves the request out: it is then
// admitted without evaluating a policy, as upstream's webhooks filter
// requests before their handlers.
func (w *webhook) skips(req *engine.Request) bool {
	return w.host != nil && w.host.Config().SkipsRequest(req)
}

// mutate answers with the mutate rules' JSON patch, as admission.Mutate
// does (its three steps, so that the request is decoded once). The
// results of the CEL mutating kinds of an admitted request are recorded
// for the reports, as upstream's MutatingPolicy handler does.
func (w *webhook) mutate(ctx context.Context, part string, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	req, err := w.request(ar)
	if err == nil && w.skips(req) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	var resp *engine.Response
	if err == nil && req.Object != nil {
		resp, err = set.Mutate(ctx, req)
	}
	if resp != nil {
		w.metrics.Results(req, resp, false)
	}
	out := admission.MutateResponse(ar, resp, err)
	if req != nil {
		w.events(req, resp, !out.Allowed)
	}
	if out.Allowed && w.reports != nil && resp != nil && !req.DryRun {
		if cel := celMutations(resp); cel != nil {
			w.reports.Record(req, cel, "mutate-"+part) // queued, never waits
		}
	}
	return out
}

// events records the Kubernetes events of an admission's results
// (cluster.Host.RecordAdmissionEvents: queued, never waited for); a dry
// run's only when it is denied, as nothing was written.
func (w *webhook) events(req *engine.Request, resp *engine.Response, blocked bool) {
	if w.host != nil && resp != nil && (blocked || !req.DryRun) {
		w.host.RecordAdmissionEvents(resp, blocked)
	}
}

// celMutations returns the results of the CEL mutating kinds of a Mutate
// response (nil when there are none): the reports keep those, and the
// validating webhook records the rest.
func celMutations(resp *engine.Response) *engine.Response {
	var out *engine.Response
	for _, pr := range resp.Policies {
		switch api.KindOf(pr.Policy.Source()) {
		case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy:
			if out == nil {
				out = &engine.Response{Resource: resp.Resource}
			}
			out.Policies = append(out.Policies, pr)
		}
	}
	return out
}

// serveDownstream handles an UPDATE or DELETE of an object carrying the
// generate tracking labels (the webhook configuration's objectSelector
// sends only those): the UpdateRequest that synchronizes it is written
// for the leader, now or when one starts. It always admits: a request it
// cannot decode, or a failure to write, is logged and counted, never a
// denial.
func (w *webhook) serveDownstream(rw http.ResponseWriter, r *http.Request) {
	review := decode(rw, r)
	if review == nil {
		return
	}
	req, err := admission.Request(review.Request)
	switch {
	case err != nil:
		w.log.Warn("downstream: request not understood", "err", err)
	case w.downstream != nil:
		if _, err := w.downstream.Handle(r.Context(), w.src.Set(), req); err != nil {
			w.log.Error("downstream: writing the UpdateRequest", "operation", req.Operation, "kind", req.Kind.Kind,
				"namespace", req.Namespace, "name", req.Name, "failed", w.downstream.Failed(), "err", err)
		}
	}
	respond(rw, review, &admissionv1.AdmissionResponse{Allowed: true})
}

// servePolicy answers the policies' own webhook: a ClusterPolicy or
// Policy is admitted when the engine of the served policies compiles it,
// refused with the compiler's errors otherwise (the API server shows
// them after "denied the request: "), as upstream's policy validating
// webhook refuses an invalid policy.
func (w *webhook) servePolicy(rw http.ResponseWriter, r *http.Request) {
	review := decode(rw, r)
	if review == nil {
		return
	}
	resp := &admissionv1.AdmissionResponse{Allowed: true}
	if err := w.checkPolicy(review.Request.Object.Raw); err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonBadRequest,
			Code: http.StatusBadRequest, Message: err.Error()}
	}
	respond(rw, review, resp)
}

// checkPolicy compiles the policy of an admission request's object.
func (w *webhook) checkPolicy(raw []byte) error {
	if w.src == nil || w.src.Set() == nil {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("the policy is not a JSON object: %w", err)
	}
	if md, _ := obj["metadata"].(map[string]any); md["deletionTimestamp"] != nil {
		// going: its finalizers may be removed whatever it holds
		return nil
	}
	p, err := api.DecodePolicy(api.Document{Source: "admission request", Object: obj})
	if err != nil {
		return err
	}
	_, err = w.src.Set().Engine().Compile(p)
	return err
}
