package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// The controller's record of the policies it applied is one ConfigMap per
// policy in the host's namespace, labelled LabelControllerState, named
// after a hash of the policy's key (stateConfigMapName), which its
// annotation AnnotationStatePolicy holds. One object per policy keeps
// each record small (a ConfigMap holds 1 MiB) and the number of policies
// unbounded; a record outlives its policy's deletion, and writing it is
// no change of the policy for the replicas' informers.
const (
	LabelControllerState  = "gavel.io/controller-state"
	AnnotationStatePolicy = "gavel.io/policy"
	stateDataKey          = "record"
)

// DefaultStateConfigMap is the one ConfigMap where earlier versions kept
// every record (one data key per policy): a leader moves its records into
// per-policy ConfigMaps and deletes it.
const DefaultStateConfigMap = "gavel-controller-state"

// stateConfigMapName is the name of the ConfigMap of a policy's record.
func stateConfigMapName(policyKey string) string {
	sum := sha256.Sum256([]byte(policyKey))
	return "gavel-state-" + hex.EncodeToString(sum[:10])
}

// policyRecord is what the leader last applied of one policy: its UID and
// a hash of its spec (a policy deleted and created again has a new UID),
// its generation for the reader, and the policy itself when it has
// generate rules, so that a later leader can undo the rules deleted while
// no controller ran (OnPolicyUpdate and OnPolicyDelete need the old
// version to find the downstream resources of the deleted rules).
type policyRecord struct {
	UID        string          `json:"uid,omitempty"`
	Generation int64           `json:"generation,omitempty"`
	SpecHash   string          `json:"specHash"`
	Policy     json.RawMessage `json:"policy,omitempty"`
}

// needsRecord reports whether the controller has anything to do for the
// policy when it changes: generate rules, mutate-existing rules, or a
// MutatingPolicy with mutateExisting.
func needsRecord(p *engine.Policy) bool {
	if mp, ok := p.Source().(*api.MutatingPolicy); ok {
		return mp.Spec.MutateExistingEnabled()
	}
	for _, r := range p.Rules() {
		if r.Generation != nil || (r.Mutation != nil && len(r.Mutation.Targets) > 0) {
			return true
		}
	}
	return false
}

// recordOf returns the record of the applied policy p.
func recordOf(p *engine.Policy) (policyRecord, error) {
	src := p.Source()
	spec, err := specJSON(src)
	if err != nil {
		return policyRecord{}, err
	}
	sum := sha256.Sum256(spec)
	rec := policyRecord{SpecHash: hex.EncodeToString(sum[:])}
	if m, ok := src.(metav1.Object); ok {
		rec.UID, rec.Generation = string(m.GetUID()), m.GetGeneration()
	}
	for _, r := range p.Rules() {
		if r.Generation != nil {
			if rec.Policy, err = json.Marshal(src); err != nil {
				return policyRecord{}, err
			}
			break
		}
	}
	return rec, nil
}

// stateStore reads the records from an informer of the labelled
// ConfigMaps and writes them one by one.
type stateStore struct {
	c       *Controller
	factory informers.SharedInformerFactory
	lister  corelisters.ConfigMapLister
	inf     cache.SharedIndexInformer
}

func newStateStore(c *Controller) *stateStore {
	f := informers.NewSharedInformerFactoryWithOptions(c.h.kube, 0, informers.WithNamespace(c.h.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelControllerState }))
	cms := f.Core().V1().ConfigMaps()
	return &stateStore{c: c, factory: f, lister: cms.Lister(), inf: cms.Informer()}
}

// start starts the informer and waits for its list.
func (s *stateStore) start(ctx context.Context) bool {
	s.factory.Start(ctx.Done())
	for _, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return false
		}
	}
	return true
}

func (s *stateStore) shutdown() { s.factory.Shutdown() }

// get returns the record of a policy.
func (s *stateStore) get(key string) (policyRecord, bool) {
	cm, err := s.lister.ConfigMaps(s.c.h.opts.Namespace).Get(stateConfigMapName(key))
	if err != nil {
		return policyRecord{}, false
	}
	var rec policyRecord
	if err := json.Unmarshal([]byte(cm.Data[stateDataKey]), &rec); err != nil {
		s.c.log.Warn("controller state: unreadable record ignored", "policy", key, "err", err)
		return policyRecord{}, false
	}
	return rec, true
}

// keys returns the keys of the recorded policies.
func (s *stateStore) keys() []string {
	cms, _ := s.lister.ConfigMaps(s.c.h.opts.Namespace).List(labels.Everything())
	var out []string
	for _, cm := range cms {
		if k := cm.Annotations[AnnotationStatePolicy]; k != "" {
			out = append(out, k)
		}
	}
	return out
}

// put writes the record of a policy (nil: deletes it).
func (s *stateStore) put(ctx context.Context, key string, rec *policyRecord) error {
	cms := s.c.h.kube.CoreV1().ConfigMaps(s.c.h.opts.Namespace)
	name := stateConfigMapName(key)
	cur, err := s.lister.ConfigMaps(s.c.h.opts.Namespace).Get(name)
	exists := err == nil
	if rec == nil {
		var opts metav1.DeleteOptions
		if exists {
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &cur.ResourceVersion}
		}
		// deleted even when the cache does not show it (yet)
		err := cms.Delete(ctx, name, opts)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.c.h.opts.Namespace,
			Labels:      map[string]string{LabelControllerState: "policy", "app.kubernetes.io/managed-by": "gavel"},
			Annotations: map[string]string{AnnotationStatePolicy: key}},
		Data: map[string]string{stateDataKey: string(data)},
	}
	if !exists {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	cm.ResourceVersion = cur.ResourceVersion
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// migrate moves the records of the single ConfigMap of earlier versions
// (DefaultStateConfigMap) into per-policy ConfigMaps, those a policy has
// not already, and deletes it. It returns the keys of the policies it
// found there (the informer may not show their new records yet).
func (s *stateStore) migrate(ctx context.Context) ([]string, error) {
	cms := s.c.h.kube.CoreV1().ConfigMaps(s.c.h.opts.Namespace)
	old, err := cms.Get(ctx, DefaultStateConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", DefaultStateConfigMap, err)
	}
	var errs []error
	var keys []string
	for k, v := range old.Data {
		// the old data keys are policy keys with "_" for "/" (names and
		// namespaces hold no "_")
		key := strings.Replace(k, "_", "/", 1)
		keys = append(keys, key)
		if _, ok := s.get(key); ok {
			continue
		}
		var rec policyRecord
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			s.c.log.Warn("controller state: unreadable record not migrated", "policy", key, "err", err)
			continue
		}
		if err := s.put(ctx, key, &rec); err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return keys, fmt.Errorf("migrating %s: %w", DefaultStateConfigMap, errors.Join(errs...))
	}
	s.c.log.Info("controller state migrated to one ConfigMap per policy", "records", len(old.Data))
	// the records are read from the informer: wait until it shows them
	_ = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		for _, k := range keys {
			if _, ok := s.get(k); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	err = cms.Delete(ctx, DefaultStateConfigMap, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &old.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) {
		return keys, err
	}
	return keys, nil
}

// recordedPolicy compiles the policy kept in a record, or returns nil when
// the record has none (the policy had no generate rules).
func (c *Controller) recordedPolicy(rec policyRecord) (*engine.Policy, error) {
	if len(rec.Policy) == 0 {
		return nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(rec.Policy, &obj); err != nil {
		return nil, err
	}
	po, err := api.DecodePolicy(api.Document{Object: obj, Source: "controller state"})
	if err != nil {
		return nil, err
	}
	return c.src.eng.CompilePolicy(po)
}

// syncPolicy brings the cluster in line with one policy, from the record
// of what was applied before: a policy created or changed since is
// applied (OnPolicyUpdate with the recorded version as the old one:
// generateExisting, synchronized data, deleted rules; prev, the version
// that served before when the change was seen live, stands in for a
// missing record), a policy deleted since is removed (OnPolicyDelete),
// as if the controller had seen the events; then the record is written.
// A policy whose latest version does not compile keeps its record.
func (c *Controller) syncPolicy(ctx context.Context, st *stateStore, key string, prev *engine.Policy) error {
	cur, broken := c.src.lookup(key)
	rec, had := st.get(key)
	if cur == nil {
		if broken {
			return nil
		}
		old := prev
		if had {
			recorded, err := c.recordedPolicy(rec)
			if err != nil {
				return fmt.Errorf("recorded version of deleted policy %s: %w", key, err)
			}
			old = recorded
		}
		if old != nil {
			urs, err := c.gen.OnPolicyDelete(ctx, old)
			c.handled("deleted policy "+key, urs, err)
			if err != nil {
				return err
			}
		}
		return st.put(ctx, key, nil)
	}
	urs, err := c.apply(ctx, cur, prev, rec, had)
	c.handled("policy "+key, urs, err)
	if err != nil {
		return err
	}
	if !needsRecord(cur) {
		if had {
			return st.put(ctx, key, nil)
		}
		return nil
	}
	want, err := recordOf(cur)
	if err != nil {
		return err
	}
	if had && rec.UID == want.UID && rec.SpecHash == want.SpecHash {
		return nil
	}
	return st.put(ctx, key, &want)
}

// apply runs the generate controller's policy handlers for p, given the
// record of what was applied before (had false: none; then prev, the
// version that served before if known, stands for the old one). It does
// nothing when the record matches p.
func (c *Controller) apply(ctx context.Context, p, prev *engine.Policy, rec policyRecord, had bool) ([]*api.UpdateRequest, error) {
	cur, err := recordOf(p)
	if err != nil {
		return nil, err
	}
	if had && rec.UID == cur.UID && rec.SpecHash == cur.SpecHash {
		return nil, nil
	}
	if !had && !needsRecord(p) && (prev == nil || !needsRecord(prev)) {
		return nil, nil
	}
	var urs []*api.UpdateRequest
	var errs []error
	old := prev
	if had {
		old = nil
		recorded, err := c.recordedPolicy(rec)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("recorded version of policy %s: %w", p.Key(), err))
		case recorded != nil && rec.UID != cur.UID:
			// deleted and created again: the old one's downstream goes
			u, err := c.gen.OnPolicyDelete(ctx, recorded)
			urs, errs = append(urs, u...), append(errs, err)
		default:
			old = recorded
		}
	}
	u, err := c.gen.OnPolicyUpdate(ctx, old, p)
	return append(urs, u...), errors.Join(append(errs, err)...)
}

// specJSON is the JSON of a policy's spec.
func specJSON(src api.PolicyObject) ([]byte, error) {
	if cp, ok := src.(api.ClassicPolicy); ok {
		return json.Marshal(cp.GetSpec())
	}
	raw, err := json.Marshal(src)
	if err != nil {
		return nil, err
	}
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	err = json.Unmarshal(raw, &obj)
	return obj.Spec, err
}
