package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// This file builds the events of policy results, as upstream's event
// package (pkg/event/events.go) and its callers (pkg/webhooks/utils,
// pkg/controllers/report/utils) build them.

// policyRef is the reference of a policy: its apiVersion as decoded
// (the first version of its kind when absent), kind, name, namespace and
// UID.
func policyRef(p *engine.Policy) corev1.ObjectReference {
	src := p.Source()
	kind := api.KindOf(src)
	apiVersion := src.GetObjectKind().GroupVersionKind().GroupVersion().String()
	if k := kindOfPolicy(kind); k != nil && (apiVersion == "" || apiVersion == "v1") && len(k.versions) > 0 {
		apiVersion = k.group + "/" + k.versions[0]
	}
	ref := corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: src.GetName(), Namespace: src.GetNamespace()}
	if u, ok := src.(interface{ GetUID() types.UID }); ok {
		ref.UID = u.GetUID()
	}
	return ref
}

// objectRef is the reference of an object (a resource of a result).
func objectRef(obj map[string]any) corev1.ObjectReference {
	u := unstructured.Unstructured{Object: obj}
	return corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID()}
}

// resultResource is the resource of a policy's result: the patched one
// when there is one (upstream's GetResourceSpec).
func resultResource(pr *engine.PolicyResult) map[string]any {
	if pr.PatchedResource != nil {
		return pr.PatchedResource
	}
	return pr.Resource
}

// refString is "Kind namespace/name" or "Kind name".
func refString(ref corev1.ObjectReference) string {
	return ref.Kind + " " + cache.NewObjectName(ref.Namespace, ref.Name).String()
}

// refKey is "Kind/namespace/name" or "Kind/name" (upstream's resourceKey).
func refKey(ref corev1.ObjectReference) string {
	return ref.Kind + "/" + cache.NewObjectName(ref.Namespace, ref.Name).String()
}

// policyViolationEvent is the event of a failed (or errored) rule on its
// policy, related to the resource (upstream's NewPolicyFailEvent):
// "Kind ns/name: [rule] fail (blocked); message".
func policyViolationEvent(source string, pr *engine.PolicyResult, rr *engine.RuleResult, blocked bool) eventInfo {
	res := objectRef(resultResource(pr))
	var b strings.Builder
	b.Grow(len(res.Kind) + len(res.Namespace) + len(res.Name) + len(rr.Name) + len(rr.Message) + 32)
	b.WriteString(refString(res))
	b.WriteString(": ")
	if rr.Name != "" {
		b.WriteString("[" + rr.Name + "] ")
	}
	b.WriteString(string(rr.Status))
	action := EventActionPassed
	if blocked {
		b.WriteString(" (blocked)")
		action = EventActionBlocked
	}
	if rr.Message != "" {
		b.WriteString("; ")
		b.WriteString(rr.Message)
	}
	return eventInfo{regarding: policyRef(pr.Policy), related: &res, reason: EventReasonPolicyViolation,
		action: action, note: b.String(), source: source}
}

// resourceViolationEvent is the event of a failed rule on the resource
// (upstream's NewResourceViolationEvent): "policy NAME/RULE fail: message".
func resourceViolationEvent(source string, pr *engine.PolicyResult, rr *engine.RuleResult) eventInfo {
	return eventInfo{regarding: objectRef(resultResource(pr)), reason: EventReasonPolicyViolation, action: EventActionPassed,
		note:   fmt.Sprintf("policy %s/%s %s: %s", pr.Policy.Source().GetName(), rr.Name, rr.Status, rr.Message),
		source: source}
}

// policyAppliedEvent is the success event of a policy on its resource
// (upstream's NewPolicyAppliedEvent): "Kind ns/name: pass", or "Kind
// ns/name is successfully mutated" for a policy that only mutates.
func policyAppliedEvent(source string, pr *engine.PolicyResult) eventInfo {
	res := objectRef(resultResource(pr))
	note, action := refString(res)+": pass", EventActionPassed
	if mutates(pr.Policy) {
		note, action = refString(res)+" is successfully mutated", EventActionMutated
	}
	return eventInfo{regarding: policyRef(pr.Policy), related: &res, reason: EventReasonPolicyApplied,
		action: action, note: note, source: source}
}

// mutates reports whether a policy's success is a mutation: a
// MutatingPolicy, or a ClusterPolicy or Policy with mutate rules and no
// validate or verifyImages rule.
func mutates(p *engine.Policy) bool {
	switch api.KindOf(p.Source()) {
	case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy:
		return true
	case api.KindClusterPolicy, api.KindPolicy:
		return p.HasRuleType(engine.Mutation) && !p.HasRuleType(engine.Validation) && !p.HasRuleType(engine.ImageVerify)
	}
	return false
}

// exceptionEvents are the events of a rule skipped by PolicyExceptions
// (upstream's NewPolicyExceptionEvents): one on each exception and one on
// the policy, related to the resource; ClusterPolicy and Policy only, as
// upstream. uid gives an exception's UID ("" when unknown).
func exceptionEvents(source string, pr *engine.PolicyResult, rr *engine.RuleResult, uid func(key string) types.UID) []eventInfo {
	switch api.KindOf(pr.Policy.Source()) {
	case api.KindClusterPolicy, api.KindPolicy:
	default:
		return nil
	}
	src := pr.Policy.Source()
	res := objectRef(resultResource(pr))
	polName := src.GetName()
	if src.GetNamespace() != "" {
		polName = src.GetNamespace() + "/" + polName
	}
	excNote := fmt.Sprintf("resource %s was skipped from policy rule %s/%s", refKey(res), polName, rr.Name)
	out := make([]eventInfo, 0, len(rr.Exceptions)+1)
	for _, key := range rr.Exceptions {
		ns, name, ok := strings.Cut(key, "/")
		if !ok {
			ns, name = "", key
		}
		ref := corev1.ObjectReference{APIVersion: PolicyExceptions.GroupVersion().String(), Kind: api.KindPolicyException, Name: name, Namespace: ns}
		if uid != nil {
			ref.UID = uid(key)
		}
		rel := res
		out = append(out, eventInfo{regarding: ref, related: &rel, reason: EventReasonPolicySkipped, action: EventActionPassed,
			note: excNote, source: source})
	}
	out = append(out, eventInfo{regarding: policyRef(pr.Policy), related: &res, reason: EventReasonPolicySkipped, action: EventActionPassed,
		note:   fmt.Sprintf("resource %s was skipped from rule %s due to policy exceptions %s", refKey(res), rr.Name, strings.Join(rr.Exceptions, ", ")),
		source: source})
	return out
}

// ruleStats counts the statuses of a policy's rules.
type ruleStats struct{ fail, errs, skip, warn int }

func statsOf(pr *engine.PolicyResult) ruleStats {
	var s ruleStats
	for i := range pr.Rules {
		switch pr.Rules[i].Status {
		case engine.StatusFail:
			s.fail++
		case engine.StatusError:
			s.errs++
		case engine.StatusSkip:
			s.skip++
		case engine.StatusWarn:
			s.warn++
		}
	}
	return s
}

// admissionEvents are the events of an admission's results, as
// upstream's webhooks record them (pkg/webhooks/utils.GenerateEvents):
// for a policy with a failed or errored rule, a PolicyViolation on the
// policy per such rule ("(blocked)" when the request is denied) and, when
// the request is admitted, one on the resource; for a policy with skipped
// rules, the exception events of the rules the exceptions skipped (when
// admitted); otherwise a PolicyApplied. Policies without rule results and
// resources without a name (generateName) have none. When the request is
// denied, the results of the ClusterPolicies and Policies in Audit are
// left out: upstream evaluates them only after admitting.
func (r *eventRecorder) admissionEvents(resp *engine.Response, blocked bool, uid func(string) types.UID) []eventInfo {
	var out []eventInfo
	for i := range resp.Policies {
		pr := &resp.Policies[i]
		switch r.admissionReason(pr, blocked) {
		case EventReasonPolicyViolation:
			for j := range pr.Rules {
				rr := &pr.Rules[j]
				if rr.Status != engine.StatusFail && rr.Status != engine.StatusError {
					continue
				}
				out = append(out, policyViolationEvent(EventSourceAdmission, pr, rr, blocked))
				if !blocked {
					out = append(out, resourceViolationEvent(EventSourceAdmission, pr, rr))
				}
			}
		case EventReasonPolicySkipped:
			for j := range pr.Rules {
				if rr := &pr.Rules[j]; rr.Status == engine.StatusSkip && len(rr.Exceptions) > 0 {
					out = append(out, exceptionEvents(EventSourceAdmission, pr, rr, uid)...)
				}
			}
		case EventReasonPolicyApplied:
			out = append(out, policyAppliedEvent(EventSourceAdmission, pr))
		}
	}
	return out
}

// admissionReason is the reason of the events of a policy's admission
// results (admissionEvents), "" when it has none or they are not
// recorded now (eventRecorder.enabled).
func (r *eventRecorder) admissionReason(pr *engine.PolicyResult, blocked bool) string {
	if len(pr.Rules) == 0 || pr.Policy == nil || objectRef(resultResource(pr)).Name == "" {
		return ""
	}
	if blocked && !pr.FailureAction.IsEnforce() {
		switch api.KindOf(pr.Policy.Source()) {
		case api.KindClusterPolicy, api.KindPolicy:
			return ""
		}
	}
	s := statsOf(pr)
	reason := EventReasonPolicyApplied
	switch {
	case s.fail+s.errs > 0:
		reason = EventReasonPolicyViolation
	case s.skip > 0:
		if blocked || !slices.ContainsFunc(pr.Rules, func(rr engine.RuleResult) bool { return len(rr.Exceptions) > 0 }) {
			return ""
		}
		reason = EventReasonPolicySkipped
	}
	if !r.enabled(reason) {
		return ""
	}
	return reason
}

// hasAdmissionEvents reports whether admissionEvents would return events
// (true also when the configuration's successEventActions would leave
// them all out).
func (r *eventRecorder) hasAdmissionEvents(resp *engine.Response, blocked bool) bool {
	for i := range resp.Policies {
		if r.admissionReason(&resp.Policies[i], blocked) != "" {
			return true
		}
	}
	return false
}

// scanEvents are the events of a background scan's results, as
// upstream's reports controller records them
// (pkg/controllers/report/utils.GenerateEvents): a PolicyViolation on the
// resource and one on the policy for each rule that did not pass nor
// skip (warn included), the exception events of the skipped rules, and a
// PolicyApplied for a policy without a failure.
func (r *eventRecorder) scanEvents(pr *engine.PolicyResult, uid func(string) types.UID) []eventInfo {
	if len(pr.Rules) == 0 || pr.Policy == nil || objectRef(resultResource(pr)).Name == "" {
		return nil
	}
	var out []eventInfo
	s := statsOf(pr)
	if s.fail+s.errs+s.warn > 0 && r.enabled(EventReasonPolicyViolation) {
		for j := range pr.Rules {
			rr := &pr.Rules[j]
			if rr.Status != engine.StatusPass && rr.Status != engine.StatusSkip {
				out = append(out, resourceViolationEvent(EventSourceScan, pr, rr), policyViolationEvent(EventSourceScan, pr, rr, false))
			}
		}
	}
	if s.skip > 0 && r.enabled(EventReasonPolicySkipped) {
		for j := range pr.Rules {
			if rr := &pr.Rules[j]; rr.Status == engine.StatusSkip && len(rr.Exceptions) > 0 {
				out = append(out, exceptionEvents(EventSourceScan, pr, rr, uid)...)
			}
		}
	}
	if s.fail == 0 && r.enabled(EventReasonPolicyApplied) {
		out = append(out, policyAppliedEvent(EventSourceScan, pr))
	}
	return out
}

// enabled reports whether events of a reason may be recorded now (not
// omitted; PolicyApplied: generateSuccessEvents), so that the events
// that would be dropped are not built.
func (r *eventRecorder) enabled(reason string) bool {
	if r.omit[reason] {
		return false
	}
	if reason == EventReasonPolicyApplied {
		cfg := r.config()
		return cfg != nil && cfg.GenerateSuccessEvents
	}
	return true
}

// backgroundFailedEvent is the event of a generate or mutate-existing
// rule that failed (upstream's NewBackgroundFailedEvent): a PolicyError on
// the policy, related to the trigger (generate) or target (mutate).
func backgroundFailedEvent(source string, p *engine.Policy, rule string, err error, res corev1.ObjectReference) eventInfo {
	note := fmt.Sprintf("policy %s/%s error: %v", p.Source().GetName(), rule, err)
	if rule == "" {
		note = fmt.Sprintf("policy %s error: %v", p.Source().GetName(), err)
	}
	return eventInfo{regarding: policyRef(p), related: &res, reason: EventReasonPolicyError, action: EventActionNone,
		note: note, source: source}
}

// backgroundSuccessEvents are the events of resources generated or
// mutated by a policy (upstream's NewBackgroundSuccessEvent): a
// PolicyApplied on the policy related to each.
func backgroundSuccessEvents(source string, p *engine.Policy, resources []corev1.ObjectReference) []eventInfo {
	note, action := "resource generated", EventActionGenerated
	if source == EventSourceMutate {
		note, action = "resource mutated", EventActionMutated
	}
	out := make([]eventInfo, 0, len(resources))
	for i := range resources {
		out = append(out, eventInfo{regarding: policyRef(p), related: &resources[i], reason: EventReasonPolicyApplied,
			action: action, note: note, source: source})
	}
	return out
}

// resourceGenerationEvent is the event on a generated resource (upstream's
// NewResourceGenerationEvent): "Created Kind name as a result of applying
// policy POLICY/RULE".
func resourceGenerationEvent(policyKey, rule string, res corev1.ObjectReference) eventInfo {
	return eventInfo{regarding: res, reason: EventReasonPolicyApplied, action: EventActionNone, source: EventSourceGenerate,
		note: fmt.Sprintf("Created %s %s as a result of applying policy %s/%s", res.Kind, res.Name, policyKey, rule)}
}

// cleanupEvent is the event of a deletion by a cleanup or deleting policy
// (upstream's NewCleanupPolicyEvent and NewDeletingPolicyEvent): on the
// policy, related to the object, PolicyApplied or PolicyError.
func cleanupEvent(p *engine.Policy, u *unstructured.Unstructured, err error) eventInfo {
	verb, failed := "deleted", "delete"
	switch api.KindOf(p.Source()) {
	case api.KindClusterCleanupPolicy, api.KindCleanupPolicy:
		verb, failed = "cleaned up", "clean up"
	}
	target := fmt.Sprintf("%s/%s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	ev := eventInfo{regarding: policyRef(p), reason: EventReasonPolicyApplied, action: EventActionCleanedUp, source: EventSourceCleanup,
		related: &corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace()},
		note:    fmt.Sprintf("successfully %s the target resource %s", verb, target)}
	if err != nil {
		ev.reason, ev.action = EventReasonPolicyError, EventActionNone
		ev.note = fmt.Sprintf("failed to %s the target resource %s: %v", failed, target, err)
	}
	return ev
}

// updateRequestEvents are the events of a processed UpdateRequest, as
// upstream's generate and mutate-existing controllers record them (a
// MutatingPolicy's: mpolEvents): for
// each rule that failed (or errored; warned too for mutate-existing), a
// PolicyError on the policy related to the trigger (generate) or to the
// target (mutate-existing, the trigger when no target is known); for each
// rule that passed, a PolicyApplied on each generated resource ("Created
// ...") and one on the policy related to each generated or mutated
// resource.
func updateRequestEvents(ur *api.UpdateRequest, results []engine.PolicyResult) []eventInfo {
	source := EventSourceGenerate
	if ur.Spec.Type == api.URMutate {
		source = EventSourceMutate
	}
	var out []eventInfo
	for i := range results {
		pr := &results[i]
		if pr.Policy == nil {
			continue
		}
		if source == EventSourceMutate && mutatingPolicy(pr.Policy) {
			out = append(out, mpolEvents(pr)...)
			continue
		}
		for j := range pr.Rules {
			rr := &pr.Rules[j]
			switch rr.Status {
			case engine.StatusPass:
				var refs []corev1.ObjectReference
				objs := rr.GeneratedResources
				if source == EventSourceMutate {
					objs = rr.PatchedTargets
				}
				for _, obj := range objs {
					ref := objectRef(obj)
					refs = append(refs, ref)
					if source == EventSourceGenerate {
						out = append(out, resourceGenerationEvent(ur.Spec.Policy, rr.Name, ref))
					}
				}
				out = append(out, backgroundSuccessEvents(source, pr.Policy, refs)...)
			case engine.StatusFail, engine.StatusError, engine.StatusWarn:
				if rr.Status == engine.StatusWarn && source != EventSourceMutate {
					continue
				}
				related := objectRef(pr.Resource)
				if source == EventSourceMutate && len(rr.PatchedTargets) > 0 {
					related = objectRef(rr.PatchedTargets[0])
				}
				out = append(out, backgroundFailedEvent(source, pr.Policy, rr.Name, errors.New(rr.Message), related))
			}
		}
	}
	return out
}

func mutatingPolicy(p *engine.Policy) bool {
	switch api.KindOf(p.Source()) {
	case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy:
		return true
	}
	return false
}

// mpolEvents are the events of a MutatingPolicy's mutate-existing
// results, as upstream's background processor records them (through its
// webhooks' GenerateEvents, per target): PolicyApplied "is successfully
// mutated" on the policy related to each patched target, or the
// PolicyViolation events of a failed or errored rule on the policy and
// the target (the trigger when no target is known).
func mpolEvents(pr *engine.PolicyResult) []eventInfo {
	var out []eventInfo
	for j := range pr.Rules {
		rr := &pr.Rules[j]
		switch rr.Status {
		case engine.StatusPass:
			for _, t := range rr.PatchedTargets {
				out = append(out, policyAppliedEvent(EventSourceMutate, &engine.PolicyResult{Policy: pr.Policy, Resource: t}))
			}
		case engine.StatusFail, engine.StatusError:
			target := &engine.PolicyResult{Policy: pr.Policy, Resource: pr.Resource}
			if len(rr.PatchedTargets) > 0 {
				target.Resource = rr.PatchedTargets[0]
			}
			out = append(out, policyViolationEvent(EventSourceMutate, target, rr, false), resourceViolationEvent(EventSourceMutate, target, rr))
		}
	}
	return out
}

// queueFailedEvents are the PolicyError events of the UpdateRequests that
// could not be written (status Failed), on each one's policy
// (requestPolicy), as upstream's webhooks record a failure of their
// UpdateRequest generator:
//   - a generate request: "policy KEY error: ..." (NewFailedEvent);
//   - a mutate-existing request: related to resource, "policy NAME error:
//     failed to create update request: ..." (NewBackgroundFailedEvent);
//   - the request of a changed downstream resource or clone source
//     (downstream): related to it, "policy NAME error: ..."
//     (NewBackgroundFailedEvent).
func queueFailedEvents(urs []*api.UpdateRequest, policies []*engine.Policy, resource map[string]any, downstream bool) []eventInfo {
	var out []eventInfo
	for _, ur := range urs {
		if ur.Status.State != api.URFailed {
			continue
		}
		p := requestPolicy(ur, policies)
		if p == nil {
			continue
		}
		err := errors.New(ur.Status.Message)
		switch {
		case downstream:
			out = append(out, backgroundFailedEvent(EventSourceGenerate, p, "", err, objectRef(resource)))
		case ur.Spec.Type == api.URMutate:
			out = append(out, backgroundFailedEvent(EventSourceGenerate, p, "", fmt.Errorf("failed to create update request: %w", err), objectRef(resource)))
		default:
			out = append(out, eventInfo{regarding: policyRef(p), reason: EventReasonPolicyError, action: EventActionNone,
				note: fmt.Sprintf("policy %s error: %v", ur.Spec.Policy, err), source: EventSourceGenerate})
		}
	}
	return out
}

// requestPolicy is the policy an UpdateRequest runs: the one of its key
// whose kind makes requests of its type.
func requestPolicy(ur *api.UpdateRequest, policies []*engine.Policy) *engine.Policy {
	for _, p := range policies {
		if p.Key() != ur.Spec.Policy {
			continue
		}
		switch api.KindOf(p.Source()) {
		case api.KindClusterPolicy, api.KindPolicy:
			if ur.Spec.Type != api.URCELGenerate {
				return p
			}
		case api.KindGeneratingPolicy, api.KindNamespacedGeneratingPolicy:
			if ur.Spec.Type == api.URCELGenerate {
				return p
			}
		case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy:
			if ur.Spec.Type == api.URMutate {
				return p
			}
		}
	}
	return nil
}
