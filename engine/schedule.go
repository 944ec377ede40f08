package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cron"
)

// deletion is what the deleting kinds share: the compiled schedule and
// the propagation of their deletions.
type deletion struct {
	schedule    *cron.Schedule
	propagation string
}

// compileDeletion compiles a schedule (required) and a propagation policy
// (empty, Foreground, Background or Orphan).
func compileDeletion(schedule string, propagation *metav1.DeletionPropagation, path *field.Path, kind string) (deletion, field.ErrorList) {
	var d deletion
	var errs field.ErrorList
	if strings.TrimSpace(schedule) == "" {
		errs = append(errs, field.Required(path.Child("schedule"), "schedule is required"))
	} else if s, err := cron.Parse(schedule); err != nil {
		errs = append(errs, field.Invalid(path.Child("schedule"), schedule, fmt.Sprintf("schedule spec in the %s is not in proper cron format: %v", kind, err)))
	} else {
		d.schedule = s
	}
	if propagation != nil {
		switch p := *propagation; p {
		case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
			d.propagation = string(p)
		default:
			errs = append(errs, field.NotSupported(path.Child("deletionPropagationPolicy"), p, []string{"Foreground", "Background", "Orphan"}))
		}
	}
	return d, errs
}

// deletingBody is implemented by the bodies of the deleting kinds
// (DeletingPolicy, NamespacedDeletingPolicy, CleanupPolicy,
// ClusterCleanupPolicy).
type deletingBody interface {
	// cleanup evaluates the policy on an existing object, appending its
	// result (if any) to rs.results.
	cleanup(rs *reqState, p *Policy)
	deletionSpec() *deletion
	targets() []CleanupTarget
}

// NextRun returns the first time after after at which a deleting policy
// (DeletingPolicy, NamespacedDeletingPolicy, CleanupPolicy,
// ClusterCleanupPolicy) runs by its schedule, and false for the other
// kinds. A host runs the policy (Cleanup on the objects it selects) when
// the time comes: upstream counts from the policy's last run, or from its
// creation before the first one.
func (p *Policy) NextRun(after time.Time) (time.Time, bool) {
	b, ok := p.body.(deletingBody)
	if !ok || b.deletionSpec().schedule == nil {
		return time.Time{}, false
	}
	return b.deletionSpec().schedule.Next(after), true
}

// DeletionPropagation returns the propagation policy of a deleting
// policy's deletions (spec.deletionPropagationPolicy: Foreground,
// Background or Orphan), "" when it leaves it to the API server or for
// other kinds.
func (p *Policy) DeletionPropagation() string {
	if b, ok := p.body.(deletingBody); ok {
		return b.deletionSpec().propagation
	}
	return ""
}

// CleanupTarget is a kind of objects a deleting policy selects, which a
// host lists to run it: by resource (Resource, from a DeletingPolicy's
// matchConstraints) or by kind (Kind, from a cleanup policy's match
// block, "*" for a kind named without its group or version, as
// "Deployment"); "*" stands for any group, version or kind. A namespaced
// policy's objects are in its namespace (Policy.Namespace).
type CleanupTarget struct {
	Group, Version, Resource, Kind string
}

// CleanupTargets returns the kinds of objects a deleting policy selects
// (nil for other kinds).
func (p *Policy) CleanupTargets() []CleanupTarget {
	if b, ok := p.body.(deletingBody); ok {
		return b.targets()
	}
	return nil
}

// Cleanup evaluates the deleting policies of the set (DeletingPolicy,
// NamespacedDeletingPolicy, CleanupPolicy, ClusterCleanupPolicy) on an
// existing object (req.Object, else req.OldObject; the operation is
// ignored), as upstream's
// cleanup and deleting controllers decide what they delete when a policy
// runs, and as its CLI reports it. Each deleting policy has a
// PolicyResult; a policy that considered the object has one rule result
// of type Deletion named after the policy: pass ("resource matched") when
// the policy deletes the object now, fail ("resource did not match") when
// its conditions keep it (or a CEL PolicyException of a DeletingPolicy,
// named in Exceptions), error when it could not decide. A DeletingPolicy
// whose matchConstraints do not select the object has no result, a
// cleanup policy a fail, as upstream's CLI reports them.
//
// A host runs a policy when NextRun says so: it lists the objects of its
// CleanupTargets, calls Cleanup on each with a set of that policy, and
// deletes those that pass with the DeletionPropagation.
func (s *PolicySet) Cleanup(ctx context.Context, req *Request) (*Response, error) {
	if req == nil || (req.Object == nil && req.OldObject == nil) {
		return nil, ErrNoObject
	}
	cr := *req
	if cr.Object == nil {
		cr.Object = req.OldObject
	}
	cr.Operation, cr.OldObject, cr.Background = api.Create, nil, true
	object, _, _, err := cr.check()
	if err != nil {
		return nil, err
	}
	needsImages := false
	for _, p := range s.policies {
		if b, ok := p.body.(*cleanupPolicy); ok && b.needsImages {
			needsImages = true
		}
	}
	rs := s.eng.newReqStateFrom(ctx, &cr, needsImages, object, nil)
	resp := &Response{Resource: rs.obj}
	for _, p := range s.policies {
		b, ok := p.body.(deletingBody)
		if !ok {
			continue
		}
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		resp.Policies = s.eng.runBody(rs, p, resp.Policies, func(out []PolicyResult) []PolicyResult {
			pr := PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
			start := len(rs.results)
			b.cleanup(rs, p)
			if n := len(rs.results); n > start {
				pr.Rules = rs.results[start:n:n]
			}
			return append(out, pr)
		})
	}
	return resp, ctx.Err()
}
