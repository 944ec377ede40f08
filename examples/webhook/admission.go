package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
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

// engineRequest converts an admission request to an engine request.
func engineRequest(ar *admissionv1.AdmissionRequest) (*engine.Request, error) {
	req := &engine.Request{
		Operation:   api.AdmissionOperation(ar.Operation),
		Kind:        engine.GroupVersionKind{Group: ar.Kind.Group, Version: ar.Kind.Version, Kind: ar.Kind.Kind},
		Resource:    engine.GroupVersionResource{Group: ar.Resource.Group, Version: ar.Resource.Version, Resource: ar.Resource.Resource},
		SubResource: ar.SubResource,
		Name:        ar.Name,
		Namespace:   ar.Namespace,
		UID:         string(ar.UID),
		UserInfo: api.UserInfoData{
			Username: ar.UserInfo.Username,
			UID:      ar.UserInfo.UID,
			Groups:   ar.UserInfo.Groups,
		},
	}
	if ar.DryRun != nil {
		req.DryRun = *ar.DryRun
	}
	if len(ar.UserInfo.Extra) > 0 {
		req.UserInfo.Extra = make(map[string][]string, len(ar.UserInfo.Extra))
		for k, v := range ar.UserInfo.Extra {
			req.UserInfo.Extra[k] = []string(v)
		}
	}
	var err error
	if req.Object, err = decodeObject(ar.Object.Raw); err != nil {
		return nil, fmt.Errorf("request.object: %w", err)
	}
	if req.OldObject, err = decodeObject(ar.OldObject.Raw); err != nil {
		return nil, fmt.Errorf("request.oldObject: %w", err)
	}
	if req.Object == nil && req.OldObject == nil {
		return nil, errors.New("request has neither object nor oldObject")
	}
	return req, nil
}

func decodeObject(raw []byte) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// validate runs the validate rules; when the request is allowed it also
// runs the generate rules, which queue UpdateRequests.
func (s *Server) validate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	req, err := engineRequest(ar)
	if err != nil {
		return errorResponse(http.StatusBadRequest, err)
	}
	resp, err := set.Validate(ctx, req)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, fmt.Errorf("gavel: validation failed: %w", err))
	}
	if resp.Blocked() {
		return &admissionv1.AdmissionResponse{
			Allowed: false,
			Result: &metav1.Status{
				Status:  metav1.StatusFailure,
				Reason:  metav1.StatusReasonForbidden,
				Code:    http.StatusForbidden,
				Message: blockedMessage(resp),
			},
		}
	}
	out := &admissionv1.AdmissionResponse{Allowed: true, Warnings: s.validateWarnings(resp)}
	if !req.DryRun {
		if gen, err := set.Generate(ctx, req); err != nil {
			s.opts.Logf("generate for %s %s/%s: %v", ar.Kind.Kind, ar.Namespace, ar.Name, err)
		} else if n := len(gen.UpdateRequests); n > 0 {
			s.opts.Logf("queued %d update requests for %s %s/%s", n, ar.Kind.Kind, ar.Namespace, ar.Name)
		}
	}
	return out
}

// mutate runs the mutate rules and answers with their JSON patch.
func (s *Server) mutate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	req, err := engineRequest(ar)
	if err != nil {
		return errorResponse(http.StatusBadRequest, err)
	}
	if req.Object == nil {
		// DELETE: there is nothing to patch
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	resp, err := set.Mutate(ctx, req)
	if err != nil {
		return errorResponse(http.StatusInternalServerError, fmt.Errorf("gavel: mutation failed: %w", err))
	}
	var warnings []string
	for _, p := range resp.Policies {
		spec := p.Policy.Source().GetSpec()
		emit := spec.EmitWarning != nil && *spec.EmitWarning
		var failed []string
		for _, r := range p.Rules {
			switch r.Status {
			case engine.StatusFail, engine.StatusError:
				failed = append(failed, r.Name)
				warnings = append(warnings, warning(p.Policy, r))
			case engine.StatusPass:
				if emit {
					warnings = append(warnings, warning(p.Policy, r))
				}
			}
		}
		if len(failed) > 0 && failurePolicyFail(spec) {
			return errorResponse(http.StatusForbidden, fmt.Errorf("mutation policy %s error: failed to apply policy %s rules %v", p.Policy.Name(), p.Policy.Name(), failed))
		}
	}
	out := &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings}
	if len(resp.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		out.Patch, out.PatchType = resp.Patch, &pt
	}
	return out
}

// failurePolicyFail reports whether the policy's failurePolicy is Fail
// (the default).
func failurePolicyFail(spec *api.Spec) bool {
	return spec.FailurePolicy == nil || *spec.FailurePolicy != "Ignore"
}

// validateWarnings lists the non-blocking failures to surface: rules that
// ask for a warning (spec.emitWarning) and, with WarnOnAudit, every failing
// rule of an Audit policy.
func (s *Server) validateWarnings(resp *engine.Response) []string {
	var out []string
	for _, p := range resp.Policies {
		for _, r := range p.Rules {
			if r.Status != engine.StatusFail && r.Status != engine.StatusError {
				continue
			}
			if r.EmitWarning || (s.opts.WarnOnAudit && !p.FailureAction.IsEnforce()) {
				out = append(out, warning(p.Policy, r))
			}
		}
	}
	return out
}

// warning formats one admission warning as upstream does:
// "policy NAME.RULE: MESSAGE".
func warning(p *engine.Policy, r engine.RuleResult) string {
	return fmt.Sprintf("policy %s.%s: %s", p.Name(), r.Name, r.Message)
}

// blockedMessage lists the failing rules of Enforce policies in upstream's
// layout: the resource, then each policy with its rules and messages,
// policies and rules in name order.
func blockedMessage(resp *engine.Response) string {
	failures := map[string]map[string]string{}
	for _, p := range resp.Policies {
		if !p.FailureAction.IsEnforce() {
			continue
		}
		for _, r := range p.Rules {
			if r.Status != engine.StatusFail && r.Status != engine.StatusError {
				continue
			}
			if failures[p.Policy.Name()] == nil {
				failures[p.Policy.Name()] = map[string]string{}
			}
			failures[p.Policy.Name()][r.Name] = r.Message
		}
	}
	var b strings.Builder
	kind, _ := resp.Resource["kind"].(string)
	md, _ := resp.Resource["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	fmt.Fprintf(&b, "\n\nresource %s/%s/%s was blocked due to the following policies \n\n", kind, ns, name)
	for _, pol := range sortedKeys(failures) {
		fmt.Fprintf(&b, "%s:\n", pol)
		rules := failures[pol]
		for _, rule := range sortedKeys(rules) {
			fmt.Fprintf(&b, "  %s: %s\n", rule, quoteYAML(rules[rule]))
		}
	}
	return b.String()
}

// quoteYAML single-quotes a message the way a YAML encoder does when the
// plain form would be ambiguous (upstream renders the list with YAML).
func quoteYAML(s string) string {
	if s == "" || strings.ContainsAny(s, ":#'\"{}[],&*!|>%@`") || strings.TrimSpace(s) != s {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func errorResponse(code int32, err error) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: err.Error()},
	}
}
