package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// DefaultStateConfigMap is the ConfigMap, in the host's namespace, where a
// Controller records the policy versions it has applied
// (ControllerOptions.StateConfigMap).
const DefaultStateConfigMap = "gavel-controller-state"

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

// stateKey is a policy ID (policyID) as a ConfigMap data key: "ns_name"
// for a Policy, the name for a ClusterPolicy, "Kind.name" or
// "Kind.ns_name" for the other kinds (names and namespaces hold no "_").
func stateKey(policyID string) string { return strings.ReplaceAll(policyID, "/", "_") }

// needsRecord reports whether the controller has anything to do for the
// policy when it changes: generate rules, mutate-existing rules, or a
// GeneratingPolicy.
func needsRecord(p *engine.Policy) bool {
	if p.HasRuleType(engine.Generation) {
		return true
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
	if p.HasRuleType(engine.Generation) {
		if rec.Policy, err = json.Marshal(src); err != nil {
			return policyRecord{}, err
		}
	}
	return rec, nil
}

// policyState is the durable record of the applied policies, by stateKey.
type policyState map[string]policyRecord

// loadState reads the records; a missing ConfigMap is an empty state.
func (c *Controller) loadState(ctx context.Context) (policyState, error) {
	cm, err := c.h.kube.CoreV1().ConfigMaps(c.h.opts.Namespace).Get(ctx, c.opts.StateConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return policyState{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the controller's state: %w", err)
	}
	st := policyState{}
	for k, v := range cm.Data {
		var rec policyRecord
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			c.h.logf("controller state: record %s: %v (ignored)", k, err)
			continue
		}
		st[k] = rec
	}
	return st, nil
}

// saveState writes the records of the given keys (nil: removed) into the
// ConfigMap, creating it when needed.
func (c *Controller) saveState(ctx context.Context, changes map[string]*policyRecord) error {
	if len(changes) == 0 {
		return nil
	}
	cms := c.h.kube.CoreV1().ConfigMaps(c.h.opts.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, c.opts.StateConfigMap, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.opts.StateConfigMap, Namespace: c.h.opts.Namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "gavel"}}}
		case err != nil:
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		for k, rec := range changes {
			if rec == nil {
				delete(cm.Data, k)
				continue
			}
			data, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			cm.Data[k] = string(data)
		}
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
			}
			return err
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the controller's state: %w", err)
	}
	return nil
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

// replay brings the cluster in line with the policies serving now, from
// the state the last leader recorded: each policy created or changed since
// is applied (OnPolicyUpdate with the recorded version as the old one:
// generateExisting, synchronized data, deleted rules), each policy deleted
// since is removed (OnPolicyDelete), as if the controller had seen the
// events. Policies that do not compile now keep their record.
// c.polMu is held.
func (c *Controller) replay(ctx context.Context, set *engine.PolicySet, broken map[string]error) error {
	st, err := c.loadState(ctx)
	if err != nil {
		c.state = policyState{} // changes from now on are still applied
		return err
	}
	c.state = st
	changes := map[string]*policyRecord{}
	var errs []error
	present := map[string]bool{}
	for _, p := range set.Policies() {
		k := stateKey(policyID(p.Kind(), p.Key()))
		present[k] = true
		rec, had := st[k]
		urs, err := c.apply(ctx, p, nil, rec, had)
		c.handled("policy "+p.Key(), urs, err)
		if ctx.Err() != nil {
			break
		}
		if err := c.recordApplied(p, rec, had, changes); err != nil {
			errs = append(errs, err)
		}
	}
	for key := range broken {
		present[stateKey(key)] = true
	}
	for k, rec := range st {
		if present[k] || ctx.Err() != nil {
			continue
		}
		if old, err := c.recordedPolicy(rec); err != nil {
			errs = append(errs, fmt.Errorf("deleted policy %s: %w", k, err))
		} else if old != nil {
			urs, err := c.gen.OnPolicyDelete(ctx, old)
			c.handled("deleted policy "+old.Key(), urs, err)
		}
		changes[k] = nil
	}
	errs = append(errs, c.commit(ctx, changes))
	return errors.Join(errs...)
}

// commit saves changes and applies them to c.state; c.polMu is held.
func (c *Controller) commit(ctx context.Context, changes map[string]*policyRecord) error {
	if err := c.saveState(ctx, changes); err != nil {
		return err
	}
	for k, rec := range changes {
		if rec == nil {
			delete(c.state, k)
		} else {
			c.state[k] = *rec
		}
	}
	return nil
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

// recordApplied adds to changes the record of p, now applied, when it
// differs from the one kept.
func (c *Controller) recordApplied(p *engine.Policy, rec policyRecord, had bool, changes map[string]*policyRecord) error {
	k := stateKey(policyID(p.Kind(), p.Key()))
	if !needsRecord(p) {
		if had {
			changes[k] = nil
		}
		return nil
	}
	cur, err := recordOf(p)
	if err != nil {
		return err
	}
	if had && rec.UID == cur.UID && rec.SpecHash == cur.SpecHash {
		return nil
	}
	changes[k] = &cur
	return nil
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
