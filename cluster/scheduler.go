package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// Now is the clock (default time.Now).
	Now func() time.Time
	// MaxWait bounds the wait between two looks at the policies, so that a
	// policy created or changed since is seen (default 10s).
	MaxWait time.Duration
	// PageSize is the number of objects a list asks at a time (default
	// 500).
	PageSize int64
}

// Scheduler runs the deleting policies of a PolicySource (DeletingPolicy,
// NamespacedDeletingPolicy, ClusterCleanupPolicy, CleanupPolicy) on their
// schedules, as upstream's cleanup controller: a policy runs at the first
// time its schedule names after its last run (status.lastExecutionTime,
// else its creation); it lists the objects of its targets (in its
// namespace for a namespaced kind), deletes those engine.PolicySet.Cleanup
// passes, with the policy's propagation policy, records an event per
// deletion (in the policy's namespace, default for the cluster-wide
// kinds, related to the object) and writes the time of the run into its status, so that the
// next leader goes on from there. Run it on the leader only (Controller.Run
// does). Objects managed by gavel (the UpdateRequests, its reports) are
// never deleted.
type Scheduler struct {
	h    *Host
	src  *PolicySource
	opts SchedulerOptions

	mu sync.Mutex
	// last is the last run of each policy (by policyID), as the scheduler
	// knows it; loaded from the policy's status when first seen
	last map[string]time.Time
}

// NewScheduler returns the scheduler of the deleting policies of src.
func NewScheduler(h *Host, src *PolicySource, opts SchedulerOptions) *Scheduler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = 10 * time.Second
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 500
	}
	return &Scheduler{h: h, src: src, opts: opts, last: map[string]time.Time{}}
}

// Run runs the policies that are due until ctx is done.
func (s *Scheduler) Run(ctx context.Context) {
	s.mu.Lock()
	s.last = map[string]time.Time{} // a new leader reads the status again
	s.mu.Unlock()
	for ctx.Err() == nil {
		wait := s.runDue(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runDue runs every deleting policy that is due now and returns how long
// to wait until the next one is (at most MaxWait).
func (s *Scheduler) runDue(ctx context.Context) time.Duration {
	now := s.opts.Now()
	wait := s.opts.MaxWait
	for _, p := range s.src.Set().Policies() {
		if ctx.Err() != nil {
			return wait
		}
		if !p.HasRuleType(engine.Deletion) {
			continue
		}
		last, err := s.lastRun(ctx, p)
		if err != nil {
			s.h.log.Error("deleting policy", "policy", p.Key(), "err", err)
			continue
		}
		next, ok := p.NextRun(last)
		if !ok || next.IsZero() {
			continue
		}
		if now.Before(next) {
			wait = min(wait, next.Sub(now))
			continue
		}
		n, err := s.runPolicy(ctx, p)
		if err != nil {
			s.h.log.Error("deleting policy", "policy", p.Key(), "err", err)
		}
		if n > 0 {
			s.h.log.Info("deleting policy ran", "policy", p.Key(), "deleted", n)
		}
		if err := s.recordRun(ctx, p, now); err != nil {
			s.h.log.Error("deleting policy: writing the time of the run", "policy", p.Key(), "err", err)
		}
		if next, ok := p.NextRun(now); ok && !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
	}
	return max(wait, time.Second)
}

// lastRun returns the last run of a policy: the scheduler's record, else
// the policy's status.lastExecutionTime, else its creation.
func (s *Scheduler) lastRun(ctx context.Context, p *engine.Policy) (time.Time, error) {
	id := policyID(api.KindOf(p.Source()), p.Key())
	s.mu.Lock()
	t, ok := s.last[id]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	ri, err := s.policyResource(p)
	if err != nil {
		return time.Time{}, err
	}
	u, err := ri.Get(ctx, p.Source().GetName(), metav1.GetOptions{})
	if err != nil {
		return time.Time{}, err
	}
	t = u.GetCreationTimestamp().Time
	if v, _, _ := unstructured.NestedString(u.Object, "status", "lastExecutionTime"); v != "" {
		if lt, err := time.Parse(time.RFC3339, v); err == nil {
			t = lt
		}
	}
	s.mu.Lock()
	s.last[id] = t
	s.mu.Unlock()
	return t, nil
}

// policyResource is the dynamic client of a policy's resource.
func (s *Scheduler) policyResource(p *engine.Policy) (dynamicResource, error) {
	gvr, err := s.policyGVR(p)
	if err != nil {
		return nil, err
	}
	return s.h.dyn.Resource(gvr).Namespace(p.Source().GetNamespace()), nil
}

// policyGVR is the resource of a deleting policy's kind, in the version the
// cluster prefers.
func (s *Scheduler) policyGVR(p *engine.Policy) (schema.GroupVersionResource, error) {
	k := kindOfPolicy(api.KindOf(p.Source()))
	if k == nil {
		return schema.GroupVersionResource{}, fmt.Errorf("policy %s: kind %s is not watched", p.Key(), api.KindOf(p.Source()))
	}
	return k.resource(s.h.mapper)
}

// recordRun writes the time of a run into the policy's status (and the
// scheduler's record).
func (s *Scheduler) recordRun(ctx context.Context, p *engine.Policy, at time.Time) error {
	s.mu.Lock()
	s.last[policyID(api.KindOf(p.Source()), p.Key())] = at
	s.mu.Unlock()
	ri, err := s.policyResource(p)
	if err != nil {
		return err
	}
	u, err := ri.Get(ctx, p.Source().GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := unstructured.SetNestedField(u.Object, at.UTC().Format(time.RFC3339), "status", "lastExecutionTime"); err != nil {
		return err
	}
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

// runPolicy runs one deleting policy now: it deletes the objects of its
// targets that Cleanup passes and returns how many it deleted. Errors of
// single objects are joined; the run goes on.
func (s *Scheduler) runPolicy(ctx context.Context, p *engine.Policy) (int, error) {
	set := s.src.Set().Engine().NewPolicySet(p)
	var opts metav1.DeleteOptions
	if pp := p.DeletionPropagation(); pp != "" {
		prop := metav1.DeletionPropagation(pp)
		opts.PropagationPolicy = &prop
	}
	deleted := 0
	var errs []error
	for _, gvr := range s.resources(p) {
		ri := s.h.dyn.Resource(gvr).Namespace(p.Source().GetNamespace())
		err := s.list(ctx, ri, func(u *unstructured.Unstructured) {
			if managedByGavel(u) {
				return
			}
			resp, err := set.Cleanup(ctx, &engine.Request{Object: u.Object})
			if err != nil {
				errs = append(errs, err)
				return
			}
			if !passes(resp) {
				for _, r := range resp.Policies {
					for _, rr := range r.Rules {
						if rr.Status == engine.StatusError {
							errs = append(errs, fmt.Errorf("%s %s: %s", u.GetKind(), cache.MetaObjectToName(u).String(), rr.Message))
						}
					}
				}
				return
			}
			err = s.h.dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), opts)
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs = append(errs, fmt.Errorf("deleting %s %s: %w", u.GetKind(), cache.MetaObjectToName(u).String(), err))
				s.event(p, u, err)
			default:
				deleted++
				s.event(p, u, nil)
			}
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", gvr.Resource, err))
		}
	}
	return deleted, errors.Join(errs...)
}

// passes reports whether Cleanup decided to delete the object.
func passes(resp *engine.Response) bool {
	for i := range resp.Policies {
		for _, r := range resp.Policies[i].Rules {
			if r.Status == engine.StatusPass {
				return true
			}
		}
	}
	return false
}

// dynamicResource is the part of the dynamic client the scheduler uses on
// a policy.
type dynamicResource interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
	UpdateStatus(ctx context.Context, obj *unstructured.Unstructured, opts metav1.UpdateOptions) (*unstructured.Unstructured, error)
}

// list lists a resource page by page.
func (s *Scheduler) list(ctx context.Context, ri interface {
	List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error)
}, each func(*unstructured.Unstructured)) error {
	opts := metav1.ListOptions{Limit: s.opts.PageSize}
	for {
		l, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			each(&l.Items[i])
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

// resources resolves a policy's targets to the resources the cluster
// serves: a DeletingPolicy's by group, version and resource, a cleanup
// policy's by kind (every group serving the kind when it names none).
// Wildcards in a resource or a version are resolved through the resources
// the cluster serves of the group, skipping subresources.
func (s *Scheduler) resources(p *engine.Policy) []schema.GroupVersionResource {
	seen := map[schema.GroupVersionResource]bool{}
	var out []schema.GroupVersionResource
	add := func(gvr schema.GroupVersionResource) {
		if !seen[gvr] && !strings.Contains(gvr.Resource, "/") {
			seen[gvr] = true
			out = append(out, gvr)
		}
	}
	for _, t := range p.CleanupTargets() {
		var gvrs []schema.GroupVersionResource
		var err error
		if t.Resource != "" {
			gvrs, err = s.h.mapper.ResourcesFor(schema.GroupVersionResource{Group: any2empty(t.Group), Version: any2empty(t.Version), Resource: any2empty(t.Resource)})
		} else {
			plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Kind: t.Kind})
			var gvks []schema.GroupVersionKind
			gvks, err = s.h.mapper.KindsFor(schema.GroupVersionResource{Group: any2empty(t.Group), Version: any2empty(t.Version), Resource: plural.Resource})
			for _, gvk := range gvks {
				if m, merr := s.h.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); merr == nil && gvk.Kind == t.Kind {
					gvrs = append(gvrs, m.Resource)
				}
			}
		}
		if err != nil {
			s.h.log.Error("deleting policy: target", "policy", p.Key(), "target", fmt.Sprintf("%+v", t), "err", err)
			continue
		}
		if t.Version == "" || t.Version == "*" {
			// one version per group is enough: the objects are the same
			gvrs = preferred(gvrs)
		}
		for _, gvr := range gvrs {
			if p.Source().GetNamespace() != "" && !s.namespaced(gvr) {
				s.h.log.Warn("deleting policy: a namespaced policy cannot delete cluster-wide resources", "policy", p.Key(), "resource", gvr.Resource)
				continue
			}
			add(gvr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// preferred keeps the first version of each group and resource (the
// RESTMapper lists the preferred version first).
func preferred(gvrs []schema.GroupVersionResource) []schema.GroupVersionResource {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupVersionResource
	for _, g := range gvrs {
		if !seen[g.GroupResource()] {
			seen[g.GroupResource()] = true
			out = append(out, g)
		}
	}
	return out
}

func (s *Scheduler) namespaced(gvr schema.GroupVersionResource) bool {
	gvk, err := s.h.mapper.KindFor(gvr)
	if err != nil {
		return false
	}
	m, err := s.h.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && m.Scope != nil && m.Scope.Name() == meta.RESTScopeNameNamespace
}

// any2empty turns the wildcard "*" into "" (any, for a RESTMapper).
func any2empty(s string) string {
	if s == "*" {
		return ""
	}
	return s
}

// managedByGavel reports objects gavel keeps for itself (its
// UpdateRequests and reports), which a deleting policy never deletes.
func managedByGavel(u *unstructured.Unstructured) bool {
	return u.GetLabels()["app.kubernetes.io/managed-by"] == "gavel"
}

// event records the deletion of an object by a policy (or its failure),
// as upstream does: on the policy, related to the object (cleanupEvent).
func (s *Scheduler) event(p *engine.Policy, u *unstructured.Unstructured, err error) {
	s.h.events.add(cleanupEvent(p, u, err))
}
