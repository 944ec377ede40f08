package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/gavelpolicy/gavel/engine"
)

// The conditions of a policies.kyverno.io policy's status
// (status.conditionStatus), as upstream's status controller writes them:
// WebhookConfigured (not for a policy that runs in the background only),
// and RBACPermissionsGranted (whether gavel may get, list and watch what
// the policy matches, for the background scans). A policy that does not
// compile is not configured in the webhook: WebhookConfigured is False
// with the error, which status.conditionStatus.message holds too.
const (
	ConditionWebhookConfigured      = "WebhookConfigured"
	ConditionRBACPermissionsGranted = "RBACPermissionsGranted"
)

// statusLocation returns the path of the object that holds a status
// shape's conditions (and ready, and for policies.kyverno.io message).
func statusLocation(shape statusShape) []string {
	if shape == statusCEL {
		return []string{"status", "conditionStatus"}
	}
	return []string{"status"}
}

// shapeOf is the status shape of a policy of a kind.
func shapeOf(kind string) statusShape {
	if k := kindOfPolicy(kind); k != nil {
		return k.status
	}
	return statusNone
}

// readConditions returns the conditions of a policy's status.
func readConditions(obj map[string]any, shape statusShape) []metav1.Condition {
	m, _, _ := unstructured.NestedMap(obj, statusLocation(shape)...)
	var st struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	}
	if m == nil || fromObject(m, &st) != nil {
		return nil
	}
	return st.Conditions
}

// readCondition returns the condition of a type, as the object holds it
// (nil when it has none).
func readCondition(obj map[string]any, shape statusShape, typ string) *metav1.Condition {
	return meta.FindStatusCondition(readConditions(obj, shape), typ)
}

// hasConditions reports whether the object's status holds every
// condition (and, for policies.kyverno.io, the message).
func hasConditions(obj map[string]any, shape statusShape, conds []metav1.Condition, message string) bool {
	for _, c := range conds {
		if !sameCondition(readCondition(obj, shape, c.Type), c) {
			return false
		}
	}
	if shape == statusCEL {
		m, _, _ := unstructured.NestedString(obj, append(statusLocation(shape), "message")...)
		return m == message
	}
	return true
}

// setConditions sets conditions in obj's status (keeping the status'
// other fields and conditions), with ready (all conditions True) and,
// for policies.kyverno.io, the message.
func setConditions(obj map[string]any, shape statusShape, conds []metav1.Condition, message string) error {
	path := statusLocation(shape)
	m, _, _ := unstructured.NestedMap(obj, path...)
	if m == nil {
		m = map[string]any{}
	}
	var st struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	}
	_ = fromObject(m, &st)
	for _, c := range conds {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	enc, err := toObject(st)
	if err != nil {
		return err
	}
	m["conditions"] = enc["conditions"]
	ready := true
	for _, c := range st.Conditions {
		ready = ready && c.Status == metav1.ConditionTrue
	}
	m["ready"] = ready
	if shape == statusCEL {
		m["message"] = message
	}
	return unstructured.SetNestedMap(obj, m, path...)
}

// ready reports whether the policy's status shows it ready (a kind
// without status always does).
func ready(u *unstructured.Unstructured) bool {
	shape := shapeOf(u.GetKind())
	switch shape {
	case statusNone:
		return true
	case statusCEL:
		r, _, _ := unstructured.NestedBool(u.Object, "status", "conditionStatus", "ready")
		return r
	}
	c := readCondition(u.Object, shape, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue
}

func (s *PolicySource) processStatus(ctx context.Context) bool {
	key, shutdown := s.status.Get()
	if shutdown {
		return false
	}
	defer s.status.Done(key)
	s.h.metrics.reconcile("policy-status")
	err := s.writeStatus(ctx, key)
	switch {
	case err == nil || ctx.Err() != nil:
		s.status.Forget(key)
	case s.status.NumRequeues(key) < maxRetries:
		s.h.metrics.requeue("policy-status", s.status.NumRequeues(key))
		s.status.AddRateLimited(key)
	default:
		s.h.log.Error("policy status: giving up", "policy", key, "err", err)
		s.h.metrics.drop("policy-status")
		s.status.Forget(key)
	}
	return true
}

// maxRetries bounds the retries of an item of a controller's queue, as
// upstream's controllers do.
const maxRetries = 10

// writeStatus writes a policy's status when it differs (ClusterPolicy and
// Policy: the Ready condition, True or False with the compile error; the
// policies.kyverno.io kinds: upstream's conditions, see
// ConditionWebhookConfigured), and records a Warning event for a compile
// error. The kinds whose status the API server owns get the event only.
func (s *PolicySource) writeStatus(ctx context.Context, id string) error {
	s.mu.Lock()
	on, cerr := s.writeStat, s.errs[id]
	served := !s.gated || s.served[s.good[id]]
	s.mu.Unlock()
	u, exists := s.object(id)
	if !on || !exists {
		return nil
	}
	kind, _ := splitID(id)
	shape := shapeOf(kind)
	if shape == statusNone {
		if cerr != nil {
			s.h.events.policyError(u, cerr)
		}
		return nil
	}
	if cerr == nil && !served && needsWebhook(u, shape) {
		// Ready once the webhooks serve it (markServed queues it again);
		// the status written before stays, as upstream does not downgrade
		// a policy while its webhooks are being rebuilt
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var conds []metav1.Condition
	message := ""
	if shape == statusCEL {
		conds = s.celConditions(ctx, u, cerr)
		if cerr != nil {
			message = cerr.Error()
		}
	} else {
		c := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: "Ready", ObservedGeneration: u.GetGeneration()}
		if cerr != nil {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonFailed, cerr.Error()
		}
		conds = []metav1.Condition{c}
	}
	if cerr == nil && hasConditions(u.Object, shape, conds, message) && ready(u) {
		return nil // the cache already shows it
	}
	ri := s.h.dyn.Resource(s.gvrs[kind]).Namespace(u.GetNamespace())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if hasConditions(cur.Object, shape, conds, message) {
			if _, ok, _ := unstructured.NestedBool(cur.Object, append(statusLocation(shape), "ready")...); ok {
				return nil
			}
		}
		if err := setConditions(cur.Object, shape, conds, message); err != nil {
			return err
		}
		_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the status of policy %s: %w", id, err)
	}
	if cerr != nil {
		s.h.events.policyError(u, cerr)
	}
	return nil
}

// needsWebhook reports whether a policy is served through the webhook
// configurations: every ClusterPolicy and Policy, and the
// policies.kyverno.io policies with admission enabled or background
// disabled (upstream's WebhookConfigured condition).
func needsWebhook(u *unstructured.Unstructured, shape statusShape) bool {
	if shape != statusCEL {
		return true
	}
	return enabled(u, "admission") || !enabled(u, "background")
}

// gateReadyOnServed makes the status wait for the webhook configurations:
// a compiled policy is written Ready (WebhookConfigured for the
// policies.kyverno.io kinds) once markServed says the webhooks serve it,
// as upstream's webhook controller writes the status after the webhook
// configurations. NewWebhookController calls it.
func (s *PolicySource) gateReadyOnServed() {
	s.mu.Lock()
	s.gated = true
	s.mu.Unlock()
}

// markServed records that the webhook configurations now in the cluster
// were built from set, and queues the status of the policies it serves
// for the first time.
func (s *PolicySource) markServed(set *engine.PolicySet) {
	served := map[*engine.Policy]bool{}
	for _, p := range set.Policies() {
		served[p] = true
	}
	s.mu.Lock()
	var ids []string
	for id, p := range s.good {
		if served[p] && !s.served[p] {
			ids = append(ids, id)
		}
	}
	s.served = served
	on := s.writeStat
	s.mu.Unlock()
	if on {
		for _, id := range ids {
			s.status.Add(id)
		}
	}
}

// celConditions returns upstream's conditions of a policies.kyverno.io
// policy: WebhookConfigured unless it runs in the background only (True
// when it compiled: the webhooks serve it), RBACPermissionsGranted (True
// when its background scans need no permission, or gavel has them: a
// SelfSubjectAccessReview per verb and resource).
func (s *PolicySource) celConditions(ctx context.Context, u *unstructured.Unstructured, cerr error) []metav1.Condition {
	cond := func(typ string, ok bool, msg string) metav1.Condition {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: msg, ObservedGeneration: u.GetGeneration()}
		if !ok {
			c.Status, c.Reason = metav1.ConditionFalse, ReasonFailed
		}
		return c
	}
	admission := enabled(u, "admission")
	background := enabled(u, "background")
	var out []metav1.Condition
	if admission || !background {
		switch {
		case cerr != nil:
			out = append(out, cond(ConditionWebhookConfigured, false, "Policy is not configured in the webhook: "+cerr.Error()))
		default:
			out = append(out, cond(ConditionWebhookConfigured, true, "Webhook configured."))
		}
	}
	if !background {
		return append(out, cond(ConditionRBACPermissionsGranted, true, "Background scanning disabled; reporting permissions not required."))
	}
	if err := s.canScan(ctx, u); err != nil {
		return append(out, cond(ConditionRBACPermissionsGranted, false, fmt.Sprintf("Policy is not ready for reporting, missing permissions: %v.", err)))
	}
	return append(out, cond(ConditionRBACPermissionsGranted, true, "Policy is ready for reporting."))
}

// enabled reads spec.evaluation.<mode>.enabled (default true).
func enabled(u *unstructured.Unstructured, mode string) bool {
	v, found, _ := unstructured.NestedBool(u.Object, "spec", "evaluation", mode, "enabled")
	return !found || v
}

// canScan checks that gavel may get, list and watch every resource the
// policy's matchConstraints name (the background scans'), as upstream
// checks its reports controller's rights.
func (s *PolicySource) canScan(ctx context.Context, u *unstructured.Unstructured) error {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "matchConstraints", "resourceRules")
	var errs []error
	for _, r := range rules {
		m, _ := r.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		versions, _, _ := unstructured.NestedStringSlice(m, "apiVersions")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		for _, g := range groups {
			for _, v := range versions {
				for _, res := range resources {
					for _, verb := range []string{"get", "list", "watch"} {
						if err := s.allowed(ctx, g, v, res, verb); err != nil {
							errs = append(errs, err)
						}
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// allowed asks the API server whether gavel may do verb on a resource.
func (s *PolicySource) allowed(ctx context.Context, group, version, resource, verb string) error {
	rev, err := s.h.kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authzv1.SelfSubjectAccessReview{
		Spec: authzv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authzv1.ResourceAttributes{
			Group: group, Version: version, Resource: resource, Verb: verb,
		}},
	}, metav1.CreateOptions{})
	switch {
	case err != nil:
		return err
	case !rev.Status.Allowed:
		return fmt.Errorf("%s %s/%s/%s: %s", verb, group, version, resource, rev.Status.Reason)
	}
	return nil
}

func sameCondition(c *metav1.Condition, want metav1.Condition) bool {
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message && c.ObservedGeneration == want.ObservedGeneration
}
