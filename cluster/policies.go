package cluster

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Condition reasons written to a policy's Ready condition.
const (
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
	// EventReasonPolicyError is the reason of the Warning event recorded
	// for a policy that does not compile.
	EventReasonPolicyError = "PolicyError"
)

// PolicyChange tells a PolicySource's subscribers about one policy: Old is
// the compiled policy that was serving (nil for a new policy), New the one
// serving now (nil when the policy was deleted), Set the policy set now
// serving.
type PolicyChange struct {
	Old, New *engine.Policy
	Set      *engine.PolicySet
}

// PolicySource keeps a PolicySet compiled from the cluster's ClusterPolicy
// and Policy objects, and those of the other kinds the cluster serves
// among GeneratingPolicy, NamespacedGeneratingPolicy, DeletingPolicy,
// NamespacedDeletingPolicy, ClusterCleanupPolicy and CleanupPolicy
// (servedKinds). A policy is compiled when it changes and the set is
// swapped atomically, so that a request is answered by one set from start
// to end. A policy that does not compile is reported (its Ready condition
// set to False with the reason, and a Warning event) and the version that
// was serving before keeps serving. It is safe for concurrent use.
type PolicySource struct {
	h   *Host
	eng *engine.Engine

	cur atomic.Pointer[engine.PolicySet]

	mu        sync.Mutex
	good      map[string]*engine.Policy
	errs      map[string]error
	listeners []func(PolicyChange)
	failed    map[string]*unstructured.Unstructured  // the versions in errs
	gvrs      map[string]schema.GroupVersionResource // their resources
	writeStat bool
	regs      []cache.ResourceEventHandlerRegistration
}

// PolicySourceOptions configure NewPolicySource.
type PolicySourceOptions struct {
	// ReportStatus makes the source write the Ready condition of the
	// policies and the events of those that fail to compile. Set it in one
	// process (the controller's leader, or the single webhook), not in
	// every replica.
	ReportStatus bool
}

// NewPolicySource returns a source of policies that compiles with the
// host's engine. Call it before Host.Start: its informers start with the
// host's.
func NewPolicySource(h *Host, opts PolicySourceOptions) (*PolicySource, error) {
	eng, err := h.Engine()
	if err != nil {
		return nil, err
	}
	s := &PolicySource{h: h, eng: eng, good: map[string]*engine.Policy{}, errs: map[string]error{},
		failed: map[string]*unstructured.Unstructured{}, gvrs: map[string]schema.GroupVersionResource{}, writeStat: opts.ReportStatus}
	s.cur.Store(eng.NewPolicySet())
	for _, gvr := range append([]schema.GroupVersionResource{ClusterPolicies, Policies}, servedKinds(h)...) {
		inf := h.dynFactory.ForResource(gvr).Informer()
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { s.changed(gvr, o, false) },
			UpdateFunc: func(old, o any) { s.updated(gvr, old, o) },
			DeleteFunc: func(o any) { s.changed(gvr, o, true) },
		})
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		s.regs = append(s.regs, reg)
	}
	return s, nil
}

// WaitForSync waits until the policies that existed when the host started
// have all been compiled (or ctx is done, then it returns false).
func (s *PolicySource) WaitForSync(ctx context.Context) bool {
	fns := make([]cache.InformerSynced, len(s.regs))
	for i, r := range s.regs {
		fns[i] = r.HasSynced
	}
	return cache.WaitForCacheSync(ctx.Done(), fns...)
}

// Set returns the policy set serving now.
func (s *PolicySource) Set() *engine.PolicySet { return s.cur.Load() }

// Errors returns the compile error of each policy that failed to compile
// in its latest version, by policy key (prefixed by the kind for the
// kinds other than ClusterPolicy and Policy, see policyID).
func (s *PolicySource) Errors() map[string]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]error, len(s.errs))
	for k, v := range s.errs {
		out[k] = v
	}
	return out
}

// SetReportStatus turns the writing of the policies' status and events on
// or off (PolicySourceOptions.ReportStatus); turned on, it reports the
// policies that fail to compile now. A Controller turns it on while it
// leads.
func (s *PolicySource) SetReportStatus(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writeStat = on
	if !on {
		return
	}
	for key, u := range s.failed {
		go s.report(s.gvrs[key], u.DeepCopy(), s.errs[key])
	}
}

// Subscribe registers f to be called, in order and never concurrently,
// after every change of the serving set.
func (s *PolicySource) Subscribe(f func(PolicyChange)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, f)
}

func (s *PolicySource) updated(gvr schema.GroupVersionResource, old, o any) {
	ou, ok1 := old.(*unstructured.Unstructured)
	nu, ok2 := o.(*unstructured.Unstructured)
	if ok1 && ok2 && ou.GetGeneration() == nu.GetGeneration() && ou.GetGeneration() != 0 &&
		maps.Equal(ou.GetAnnotations(), nu.GetAnnotations()) {
		// a status write or a resync: the spec is unchanged (annotations,
		// which give report categories and severities, do not bump the
		// generation)
		return
	}
	s.changed(gvr, o, false)
}

func (s *PolicySource) changed(gvr schema.GroupVersionResource, o any, deleted bool) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := u.GetName()
	if u.GetNamespace() != "" {
		key = u.GetNamespace() + "/" + u.GetName()
	}
	key = policyID(u.GetKind(), key)
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.good[key]
	var cur *engine.Policy
	if deleted {
		delete(s.good, key)
		delete(s.errs, key)
		delete(s.failed, key)
		delete(s.gvrs, key)
	} else {
		p, err := s.compile(u)
		if err != nil {
			s.errs[key] = err
			s.failed[key] = u
			s.gvrs[key] = gvr
			s.h.logf("policy %s does not compile, the previous version keeps serving: %v", key, err)
			if s.writeStat {
				go s.report(gvr, u.DeepCopy(), err)
			}
			return
		}
		_, failed := s.errs[key]
		delete(s.errs, key)
		delete(s.failed, key)
		delete(s.gvrs, key)
		s.good[key] = p
		cur = p
		if s.writeStat && (failed || !ready(u)) {
			go s.report(gvr, u.DeepCopy(), nil)
		}
	}
	set := s.build()
	s.cur.Store(set)
	for _, f := range s.listeners {
		f(PolicyChange{Old: old, New: cur, Set: set})
	}
}

func (s *PolicySource) compile(u *unstructured.Unstructured) (*engine.Policy, error) {
	po, err := api.DecodePolicy(document(u))
	if err != nil {
		return nil, err
	}
	return s.eng.CompilePolicy(po)
}

// build returns the set of the good policies, in key order.
func (s *PolicySource) build() *engine.PolicySet {
	keys := make([]string, 0, len(s.good))
	for k := range s.good {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	ps := make([]*engine.Policy, len(keys))
	for i, k := range keys {
		ps[i] = s.good[k]
	}
	return s.eng.NewPolicySet(ps...)
}

// ready reports whether the object's Ready condition is True.
func ready(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			return m["status"] == string(metav1.ConditionTrue)
		}
	}
	return false
}

// report writes the policy's Ready condition and, for an error, a Warning
// event.
func (s *PolicySource) report(gvr schema.GroupVersionResource, u *unstructured.Unstructured, cerr error) {
	ctx, cancel := context.WithTimeout(s.h.ctx, 30*time.Second)
	defer cancel()
	ri := s.h.dyn.Resource(gvr).Namespace(u.GetNamespace())
	cond := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonSucceeded, Message: "Ready", ObservedGeneration: u.GetGeneration()}
	if cerr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonFailed, cerr.Error()
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		var st api.PolicyStatus
		if m, ok := cur.Object["status"].(map[string]any); ok {
			_ = fromObject(m, &st)
		}
		meta.SetStatusCondition(&st.Conditions, cond)
		r := cerr == nil
		st.Ready = &r
		obj, err := toObject(st)
		if err != nil {
			return err
		}
		cur.Object["status"] = obj
		_, err = ri.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.h.logf("policy %s: writing status: %v", u.GetName(), err)
	}
	if cerr == nil {
		return
	}
	ns := u.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: u.GetName() + ".", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), Namespace: u.GetNamespace(),
			UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
		},
		Reason: EventReasonPolicyError, Message: truncate(cerr.Error(), 1024), Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "gavel"}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "gavel", ReportingInstance: "gavel",
	}
	if _, err := s.h.kube.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.h.logf("policy %s: writing event: %v", u.GetName(), err)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
