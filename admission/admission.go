package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
)

// Request converts an admission request into an engine request. It fails
// for an unknown operation, an object that is not a JSON object, and a
// request with neither object nor old object.
func Request(ar *admissionv1.AdmissionRequest) (*engine.Request, error) {
	req, err := request(ar)
	if err != nil {
		return nil, &conversionError{err}
	}
	return req, nil
}

// conversionError marks the errors of Request, whose text the responses
// carry as they are.
type conversionError struct{ err error }

func (e *conversionError) Error() string { return e.err.Error() }
func (e *conversionError) Unwrap() error { return e.err }

func request(ar *admissionv1.AdmissionRequest) (*engine.Request, error) {
	if ar == nil {
		return nil, errors.New("admission: no request")
	}
	op := api.AdmissionOperation(ar.Operation)
	switch op {
	case api.Create, api.Update, api.Delete, api.Connect:
	default:
		return nil, fmt.Errorf("admission: unknown operation %q", ar.Operation)
	}
	req := &engine.Request{
		Operation:   op,
		Kind:        schema.GroupVersionKind{Group: ar.Kind.Group, Version: ar.Kind.Version, Kind: ar.Kind.Kind},
		Resource:    schema.GroupVersionResource{Group: ar.Resource.Group, Version: ar.Resource.Version, Resource: ar.Resource.Resource},
		SubResource: ar.SubResource,
		Name:        ar.Name,
		Namespace:   ar.Namespace,
		UID:         string(ar.UID),
		DryRun:      ar.DryRun != nil && *ar.DryRun,
		UserInfo: api.UserInfoData{
			Username: ar.UserInfo.Username,
			UID:      ar.UserInfo.UID,
			Groups:   ar.UserInfo.Groups,
		},
	}
	if len(ar.UserInfo.Extra) > 0 {
		req.UserInfo.Extra = make(map[string][]string, len(ar.UserInfo.Extra))
		for k, v := range ar.UserInfo.Extra {
			req.UserInfo.Extra[k] = []string(v)
		}
	}
	var err error
	if req.Object, err = object(ar.Object); err != nil {
		return nil, fmt.Errorf("admission: request.object: %w", err)
	}
	if req.OldObject, err = object(ar.OldObject); err != nil {
		return nil, fmt.Errorf("admission: request.oldObject: %w", err)
	}
	if req.Object == nil && req.OldObject == nil {
		return nil, errors.New("admission: the request has neither object nor oldObject")
	}
	if ar.Namespace != "" && ar.Kind.Kind != "Namespace" {
		setNamespace(req.Object, ar.Namespace)
		setNamespace(req.OldObject, ar.Namespace)
	}
	return req, nil
}

// object decodes an object of the request: its raw JSON, else the object
// an in-process caller set (unstructured or typed).
func object(ext runtime.RawExtension) (map[string]any, error) {
	if raw := ext.Raw; len(raw) > 0 && string(raw) != "null" {
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		return obj, nil
	}
	switch o := ext.Object.(type) {
	case nil:
		return nil, nil
	case *unstructured.Unstructured:
		if o == nil {
			return nil, nil
		}
		return deepcopy.Object(o.Object), nil
	default:
		return runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	}
}

// setNamespace sets metadata.namespace of obj when it is empty, as
// upstream does with the objects of namespaced requests.
func setNamespace(obj map[string]any, ns string) {
	if obj == nil {
		return
	}
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		if obj["metadata"] != nil {
			return // left to the engine, which refuses it
		}
		md = map[string]any{}
		obj["metadata"] = md
	}
	if s, _ := md["namespace"].(string); s == "" {
		md["namespace"] = ns
	}
}

// Validate evaluates the validate rules of set on the request and answers
// it as upstream's validating webhook does (see ValidateResponse). It also
// returns the engine's response (nil when there is none), for reports.
// Hosts that add to the engine request (RBAC roles, namespace labels)
// call Request, set.Validate and ValidateResponse themselves.
func Validate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, *engine.Response) {
	req, err := Request(ar)
	var resp *engine.Response
	if err == nil {
		resp, err = set.Validate(ctx, req)
	}
	return ValidateResponse(ar, resp, err), resp
}

// ValidateResponse answers an admission request from the engine's
// Validate response and error, as upstream's validating webhook does:
//
//   - denied when the response is blocked (engine.Response.Blocked), with
//     upstream's message: "resource KIND/NAMESPACE/NAME was blocked due to
//     the following policies" followed by the YAML map of the rules that
//     did not pass of each Enforce policy and of each policy with
//     verifyImages checks to their messages;
//   - otherwise allowed, with a warning "policy NAME.RULE: MESSAGE" for
//     each rule that failed, errored or warned in an Enforce policy (errors
//     under failurePolicy Ignore) or in a policy with spec.emitWarning;
//   - for the CEL kinds (ValidatingPolicy, ValidatingAdmissionPolicy), as
//     upstream's handlers and the API server answer: denied when a result
//     fails (or errors, under failurePolicy Fail) with validationActions
//     Deny, with the messages of celMessage; a warning for each that
//     fails or errors with Warn; Audit only reports;
//   - denied with the error's text when err is set (a request Request
//     could not convert, an invalid object, a cancelled context).
func ValidateResponse(ar *admissionv1.AdmissionRequest, resp *engine.Response, err error) *admissionv1.AdmissionResponse {
	if err != nil {
		return deny(ar, failed("validation", err))
	}
	if resp == nil {
		return &admissionv1.AdmissionResponse{UID: uid(ar), Allowed: true}
	}
	var warnings, celWarnings []string
	for p, r := range resp.Rules() {
		switch {
		case celKind(p.Policy):
			if r.EmitWarning && notPassed(r) {
				celWarnings = append(celWarnings, celWarning(p, r))
			}
		case notPassed(r) && (p.FailureAction.IsEnforce() || r.EmitWarning):
			warnings = append(warnings, warning(p, r))
		}
	}
	if resp.Blocked() {
		// the warnings of CEL kinds go with denials too, as the API
		// server and upstream's handlers send them
		out := deny(ar, blockedMessage(resp, validateBlocked))
		out.Warnings = celWarnings
		return out
	}
	return &admissionv1.AdmissionResponse{UID: uid(ar), Allowed: true, Warnings: append(warnings, celWarnings...)}
}

// celKind reports a policy of a CEL kind (ValidatingPolicy,
// ValidatingAdmissionPolicy), which upstream answers with the messages of
// its own handlers.
func celKind(p *engine.Policy) bool {
	return api.KindOf(p.Source()) != api.KindClusterPolicy && api.KindOf(p.Source()) != api.KindPolicy
}

// celMessage is how upstream words a failing or erroring result of a CEL
// kind: "Policy NAME failed: MESSAGE" (error: for errors) for a
// ValidatingPolicy, the API server's "ValidatingAdmissionPolicy 'NAME'
// with binding 'BINDING' denied request: MESSAGE" for a
// ValidatingAdmissionPolicy.
func celMessage(p *engine.PolicyResult, r *engine.RuleResult) string {
	if api.KindOf(p.Policy.Source()) == api.KindValidatingAdmissionPolicy {
		if b := r.Properties[engine.PropertyBinding]; b != "" {
			return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", p.Policy.Source().GetName(), b, r.Message)
		}
		return fmt.Sprintf("ValidatingAdmissionPolicy '%s' denied request: %s", p.Policy.Source().GetName(), r.Message)
	}
	verb := "failed"
	if r.Status == engine.StatusError {
		verb = "error"
	}
	return fmt.Sprintf("Policy %s %s: %s", p.Policy.Source().GetName(), verb, r.Message)
}

// celWarning is the admission warning of a result of a CEL kind whose
// validation actions hold Warn: upstream's "Policy NAME failed: MESSAGE"
// or the API server's "Validation failed for ValidatingAdmissionPolicy
// 'NAME' with binding 'BINDING': MESSAGE".
func celWarning(p *engine.PolicyResult, r *engine.RuleResult) string {
	if api.KindOf(p.Policy.Source()) == api.KindValidatingAdmissionPolicy {
		return fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", p.Policy.Source().GetName(), r.Properties[engine.PropertyBinding], r.Message)
	}
	return celMessage(p, r)
}

// Mutate evaluates the mutate rules of set on the request and answers it
// as upstream's mutating webhook does (see MutateResponse); a request
// without an object (DELETE) is allowed without evaluation. It also
// returns the engine's response (nil when there is none).
func Mutate(ctx context.Context, set *engine.PolicySet, ar *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, *engine.Response) {
	req, err := Request(ar)
	var resp *engine.Response
	if err == nil && req.Object != nil {
		resp, err = set.Mutate(ctx, req)
	}
	return MutateResponse(ar, resp, err), resp
}

// MutateResponse answers an admission request from the engine's Mutate
// response and error, as upstream's mutating webhook does (its mutation
// handler, then its image verification handler):
//
//   - denied when a policy's mutate rules block the request (a mutate rule
//     errored in a policy whose failure policy is Fail, see
//     engine.PolicyResult.Blocks), with upstream's message "mutation
//     policy NAME error: failed to apply policy NAME rules [RULE: MESSAGE
//     ...]" for the first such policy;
//   - denied when a policy's verifyImages rules block it, with upstream's
//     blocked-resource message (as ValidateResponse's) of the verifyImages
//     rules that did not pass, of every policy;
//   - denied for the digest pins of ImageValidatingPolicies (with Deny),
//     with upstream's "Policy NAME error: MESSAGE", joined with "; ";
//   - for the mutating CEL kinds, as upstream's MutatingPolicy handler and
//     the API server answer: denied when a result errors under
//     failurePolicy Fail, with "Resource: NAMESPACE/NAME, Kind: KIND,
//     Errors: [Policy NAME: MESSAGE ...]" (MutatingPolicy) or "policy
//     'NAME' with binding 'BINDING' denied request: MESSAGE"
//     (MutatingAdmissionPolicy), and no warnings for their other results;
//   - otherwise allowed with the RFC 6902 patch of the mutations (patch
//     type JSONPatch) and a warning "policy NAME.RULE: MESSAGE" for each
//     rule that failed, errored or warned, and for each applied rule of a
//     policy with spec.emitWarning;
//   - denied with the error's text when err is set.
//
// A request without an object (DELETE) is allowed, without a patch.
func MutateResponse(ar *admissionv1.AdmissionRequest, resp *engine.Response, err error) *admissionv1.AdmissionResponse {
	if err != nil {
		return deny(ar, failed("mutation", err))
	}
	if resp == nil || (ar != nil && ar.Operation == admissionv1.Delete) {
		return &admissionv1.AdmissionResponse{UID: uid(ar), Allowed: true}
	}
	for i := range resp.Policies {
		p := &resp.Policies[i]
		if celKind(p.Policy) || !rulesOf(p, engine.Mutation).Blocks() {
			continue
		}
		var failed []string
		for j := range p.Rules {
			if r := &p.Rules[j]; r.Type == engine.Mutation && (r.Status == engine.StatusFail || r.Status == engine.StatusError) {
				failed = append(failed, r.Name+": "+r.Message)
			}
		}
		name := p.Policy.Source().GetName()
		return deny(ar, fmt.Sprintf("mutation policy %s error: failed to apply policy %s rules [%s]", name, name, strings.Join(failed, " ")))
	}
	for i := range resp.Policies {
		if p := &resp.Policies[i]; !celKind(p.Policy) && rulesOf(p, engine.ImageVerify).Blocks() {
			return deny(ar, blockedMessage(resp, func(_ *engine.PolicyResult, r *engine.RuleResult) bool {
				return r.Type == engine.ImageVerify && notPassed(r)
			}))
		}
	}
	if msg := celMutationDenial(resp); msg != "" {
		return deny(ar, msg)
	}
	var warnings, pinWarnings, pins []string
	for i := range resp.Policies {
		p := &resp.Policies[i]
		if !imagePolicy(p.Policy) {
			continue
		}
		for j := range p.Rules {
			r := &p.Rules[j]
			if p.Blocks() && (r.Status == engine.StatusFail || r.Status == engine.StatusError) {
				pins = append(pins, celMessage(p, r))
			}
			if r.EmitWarning && notPassed(r) {
				pinWarnings = append(pinWarnings, celWarning(p, r))
			}
		}
	}
	for p, r := range resp.Rules() {
		if !celKind(p.Policy) && (notPassed(r) || (r.EmitWarning && r.Status == engine.StatusPass)) {
			warnings = append(warnings, warning(p, r))
		}
	}
	if len(pins) > 0 {
		// ImageValidatingPolicies' digest pins, as upstream's handler
		// answers them
		out := deny(ar, strings.Join(pins, "; "))
		out.Warnings = pinWarnings
		return out
	}
	out := &admissionv1.AdmissionResponse{UID: uid(ar), Allowed: true, Warnings: append(warnings, pinWarnings...)}
	if len(resp.Patch) > 0 {
		pt := admissionv1.PatchTypeJSONPatch
		out.Patch, out.PatchType = resp.Patch, &pt
	}
	return out
}

// imagePolicy reports an ImageValidatingPolicy (of either scope).
func imagePolicy(p *engine.Policy) bool {
	return api.KindOf(p.Source()) == api.KindImageValidatingPolicy || api.KindOf(p.Source()) == api.KindNamespacedImageValidatingPolicy
}

// celMutationDenial is the message of the mutating CEL kinds' errors
// that deny a request ("" when none does): a MutatingAdmissionPolicy's
// first, in the API server's words, else the MutatingPolicies' together,
// in upstream's handler's.
func celMutationDenial(resp *engine.Response) string {
	var mpol []string
	for i := range resp.Policies {
		p := &resp.Policies[i]
		k := api.KindOf(p.Policy.Source())
		if k != api.KindMutatingPolicy && k != api.KindNamespacedMutatingPolicy && k != api.KindMutatingAdmissionPolicy || !p.Blocks() {
			continue
		}
		for j := range p.Rules {
			r := &p.Rules[j]
			if r.Status != engine.StatusError {
				continue
			}
			if k == api.KindMutatingAdmissionPolicy {
				if b := r.Properties[engine.PropertyMAPBinding]; b != "" {
					return fmt.Sprintf("policy '%s' with binding '%s' denied request: %s", p.Policy.Source().GetName(), b, r.Message)
				}
				return fmt.Sprintf("policy %q denied request: %s", p.Policy.Source().GetName(), r.Message)
			}
			mpol = append(mpol, fmt.Sprintf("Policy %s: %s", p.Policy.Source().GetName(), r.Message))
		}
	}
	if len(mpol) == 0 {
		return ""
	}
	kind, _ := resp.Resource["kind"].(string)
	md, _ := resp.Resource["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return fmt.Sprintf("Resource: %s/%s, Kind: %s, Errors: %v", ns, name, kind, mpol)
}

// validateBlocked selects the rules upstream's validating webhook lists
// when it blocks: those that did not pass, of the Enforce policies and of
// the policies whose verifyImages checks it evaluates (Audit ones too).
func validateBlocked(p *engine.PolicyResult, r *engine.RuleResult) bool {
	if !notPassed(r) {
		return false
	}
	if p.FailureAction.IsEnforce() {
		return true
	}
	for i := range p.Rules {
		if p.Rules[i].Type == engine.ImageVerify {
			return true
		}
	}
	return false
}

// rulesOf is p with only its results of rules of type t: upstream's
// mutating webhook evaluates mutate rules and verifyImages rules apart,
// each with its own block decision.
func rulesOf(p *engine.PolicyResult, t engine.RuleType) *engine.PolicyResult {
	q := *p
	q.Rules = nil
	for i := range p.Rules {
		if p.Rules[i].Type == t {
			q.Rules = append(q.Rules, p.Rules[i])
		}
	}
	return &q
}

// failed is the message of a request that could not be evaluated: the
// conversion's own error, or the engine's.
func failed(step string, err error) string {
	var conv *conversionError
	if errors.As(err, &conv) {
		return err.Error()
	}
	return "gavel: " + step + " failed: " + err.Error()
}

func uid(ar *admissionv1.AdmissionRequest) (u types.UID) {
	if ar != nil {
		u = ar.UID
	}
	return u
}

// deny is upstream's answer to a denied request: status Failure with the
// message, no code (the API server reports 403).
func deny(ar *admissionv1.AdmissionRequest, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		UID:     uid(ar),
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Message: msg},
	}
}

// notPassed reports whether a result is a failure, an error or a warning,
// the results upstream turns into messages.
func notPassed(r *engine.RuleResult) bool {
	return r.Status != engine.StatusPass && r.Status != engine.StatusSkip
}

// warning is upstream's admission warning of a rule result.
func warning(p *engine.PolicyResult, r *engine.RuleResult) string {
	return "policy " + p.Policy.Source().GetName() + "." + r.Name + ": " + r.Message
}

// blockedMessage is upstream's message of a denied request: for
// ClusterPolicies and Policies, the resource, then the YAML map of each
// policy's rules that include selects to their messages
// (classicBlockedMessage); the denials of CEL kinds (see celMessage)
// joined with "; ", as upstream's handlers of those kinds write them,
// alone when only they deny, else after the former.
func blockedMessage(resp *engine.Response, include func(*engine.PolicyResult, *engine.RuleResult) bool) string {
	var cel []string
	classic := false
	for i := range resp.Policies {
		p := &resp.Policies[i]
		if !celKind(p.Policy) {
			for j := range p.Rules {
				classic = classic || include(p, &p.Rules[j])
			}
			continue
		}
		if !p.Blocks() {
			continue
		}
		for j := range p.Rules {
			if r := &p.Rules[j]; r.Status == engine.StatusFail || r.Status == engine.StatusError {
				cel = append(cel, celMessage(p, r))
			}
		}
	}
	if !classic {
		return strings.Join(cel, "; ")
	}
	msg := classicBlockedMessage(resp, include)
	if len(cel) > 0 {
		msg += "\n" + strings.Join(cel, "; ")
	}
	return msg
}

// classicBlockedMessage is upstream's message of a request that
// ClusterPolicies and Policies deny (GetBlockedMessages): the resource,
// then the YAML map (yaml.v3, indent 2, as upstream writes it) of each
// policy's rules that include selects to their messages, policies and
// rules sorted by name.
func classicBlockedMessage(resp *engine.Response, include func(*engine.PolicyResult, *engine.RuleResult) bool) string {
	failures := map[string]map[string]string{}
	for p, r := range resp.Rules() {
		if celKind(p.Policy) || !include(p, r) {
			continue
		}
		rules := failures[p.Policy.Source().GetName()]
		if rules == nil {
			rules = map[string]string{}
			failures[p.Policy.Source().GetName()] = rules
		}
		rules[r.Name] = r.Message
	}
	kind, _ := resp.Resource["kind"].(string)
	md, _ := resp.Resource["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	err := enc.Encode(failures)
	if cerr := enc.Close(); err == nil {
		err = cerr
	}
	results := bytes.TrimPrefix(buf.Bytes(), []byte("---\n"))
	if err != nil {
		results = fmt.Appendf(nil, "failed to encode failures: %v\n", err)
	}
	return fmt.Sprintf("\n\nresource %s/%s/%s was blocked due to the following policies \n\n%s", kind, ns, name, results)
}
