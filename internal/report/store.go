package report

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Report naming and labels of the in-cluster reports.
const (
	// ClusterPolicyPrefix prefixes the report of a ClusterPolicy.
	ClusterPolicyPrefix = "cpol-"
	// PolicyPrefix prefixes the report of a (namespaced) Policy.
	PolicyPrefix = "pol-"
	// LabelManagedBy is set to ManagedByKyverno on every report Store renders.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByKyverno is the value of LabelManagedBy.
	ManagedByKyverno = "kyverno"
)

// ErrNoUID is returned by Store.Update for an empty resource UID.
var ErrNoUID = errors.New("report: resource UID is required")

// Store keeps the current report entries of each resource and renders the
// in-cluster policy reports from them. It is safe for concurrent use.
//
// Each resource has two sets of entries, the last admission results and
// the last background scan results (upstream's admission and background
// scan reports); a report shows, per policy and rule, the entry of the
// latest Update. Only validate and verifyImages results are kept:
//
//   - from admission (Update with background false): the results of
//     policies in Audit mode or with background enabled. When the results
//     show that the request was denied (engine.Response.Blocked),
//     the resource was not admitted and Update changes nothing;
//   - from a background scan: the results of policies with background
//     enabled, whatever their failure action.
//
// Skip results (preconditions not met, PolicyExceptions) and errors
// (substitution failures) are kept like passes and failures.
type Store struct {
	opts Options
	mu   sync.RWMutex
	seq  uint64
	res  map[string]*resourceEntries
}

type resourceEntries struct {
	admission  []storedEntry
	background []storedEntry
}

type storedEntry struct {
	// report is the report the entry goes to: cpol-<name> or pol-<name>.
	report string
	// namespace is the resource's namespace, "" for a cluster-scoped one.
	namespace string
	seq       uint64
	result    api.PolicyReportResult
}

// NewStore returns an empty Store.
func NewStore(opts Options) *Store {
	return &Store{opts: opts, res: map[string]*resourceEntries{}}
}

// Update records the results of one evaluation of the resource with the
// given UID: an admission request (background false) or a background scan
// (background true). The new entries replace the previous ones of the same
// trigger for this resource; call Delete when the resource is deleted. It
// returns an error, and changes nothing, for an empty UID or a result
// without a policy.
func (s *Store) Update(resourceUID string, res []engine.PolicyResult, background bool) error {
	if resourceUID == "" {
		return ErrNoUID
	}
	for i := range res {
		if res[i].Policy == nil {
			return &InputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
	}
	if !background && (&engine.Response{Policies: res}).Blocked() {
		return nil
	}
	ts := s.opts.now()
	source := s.opts.source()
	var entries []storedEntry
	for i := range res {
		pr := &res[i]
		p := pr.Policy
		if background && !p.Background() {
			continue
		}
		if !background && pr.FailureAction.IsEnforce() && !p.Background() {
			continue
		}
		ref := resourceRef(pr.Resource)
		if ref.UID == "" {
			ref.UID = resourceUID
		}
		name := ClusterPolicyPrefix + p.Name()
		if p.Namespace() != "" {
			name = PolicyPrefix + p.Name()
		}
		for j := range pr.Rules {
			rr := &pr.Rules[j]
			if rr.Type != engine.Validation && rr.Type != engine.ImageVerify {
				continue
			}
			entries = append(entries, storedEntry{
				report:    name,
				namespace: ref.Namespace,
				result:    convert(pr, rr, source, ts, s.opts.AuditWarn, ref),
			})
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	for i := range entries {
		entries[i].seq = s.seq
	}
	e := s.res[resourceUID]
	if e == nil {
		if len(entries) == 0 {
			return nil
		}
		e = &resourceEntries{}
		s.res[resourceUID] = e
	}
	if background {
		e.background = entries
	} else {
		e.admission = entries
	}
	if len(e.admission) == 0 && len(e.background) == 0 {
		delete(s.res, resourceUID)
	}
	return nil
}

// Delete removes every entry of the resource with the given UID.
func (s *Store) Delete(resourceUID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.res, resourceUID)
}

// RemovePolicy removes the entries of a deleted policy, given by its key
// ("name" for a ClusterPolicy, "namespace/name" for a Policy), from every
// resource, as upstream drops the results of policies that no longer exist.
func (s *Store) RemovePolicy(policyKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, e := range s.res {
		e.admission = slices.DeleteFunc(e.admission, func(se storedEntry) bool { return se.result.Policy == policyKey })
		e.background = slices.DeleteFunc(e.background, func(se storedEntry) bool { return se.result.Policy == policyKey })
		if len(e.admission) == 0 && len(e.background) == 0 {
			delete(s.res, uid)
		}
	}
}

// Len returns the number of resources with entries.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.res)
}

// Reports renders the current reports: per policy, a ClusterPolicyReport
// for the cluster-scoped resources and a PolicyReport in each namespace
// with resources, named cpol-<policy> (ClusterPolicy) or pol-<policy>
// (Policy), labelled app.kubernetes.io/managed-by: kyverno, with a summary.
// Reports without entries are not rendered. Cluster reports come first,
// sorted by name, then namespaced reports sorted by namespace and name;
// entries are sorted as upstream sorts them (policy, rule, source,
// resource UID, timestamp). The values are new on every call.
func (s *Store) Reports() []any {
	type reportKey struct{ namespace, name string }
	groups := map[reportKey][]api.PolicyReportResult{}

	s.mu.RLock()
	for _, e := range s.res {
		for _, se := range mergeEntries(e) {
			k := reportKey{se.namespace, se.report}
			groups[k] = append(groups[k], copyResult(se.result))
		}
	}
	s.mu.RUnlock()

	keys := make([]reportKey, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b reportKey) int {
		// Cluster reports (namespace "") sort first.
		if c := cmp.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		results := groups[k]
		sortResults(results)
		labels := map[string]string{LabelManagedBy: ManagedByKyverno}
		out = append(out, newReport(s.opts.Format, k.namespace == "", k.name, k.namespace, labels, results))
	}
	return out
}

// mergeEntries returns the entries of a resource with, for each policy and
// rule, the one of the latest update. It keeps the order of the input sets.
func mergeEntries(e *resourceEntries) []*storedEntry {
	type ruleKey struct{ policy, rule string }
	best := make(map[ruleKey]int, len(e.admission)+len(e.background))
	out := make([]*storedEntry, 0, len(e.admission)+len(e.background))
	for _, set := range [][]storedEntry{e.admission, e.background} {
		for i := range set {
			se := &set[i]
			k := ruleKey{se.result.Policy, se.result.Rule}
			if j, ok := best[k]; ok {
				if se.seq >= out[j].seq {
					out[j] = se
				}
				continue
			}
			best[k] = len(out)
			out = append(out, se)
		}
	}
	return out
}

// sortResults orders entries as upstream's SortReportResults does.
func sortResults(results []api.PolicyReportResult) {
	slices.SortStableFunc(results, compareResults)
}

func compareResults(a, b api.PolicyReportResult) int {
	if c := cmp.Compare(a.Policy, b.Policy); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Rule, b.Rule); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Source, b.Source); c != 0 {
		return c
	}
	if c := cmp.Compare(len(a.Resources), len(b.Resources)); c != 0 {
		return c
	}
	for i := range a.Resources {
		if c := cmp.Compare(a.Resources[i].UID, b.Resources[i].UID); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(a.Timestamp.Seconds, b.Timestamp.Seconds); c != 0 {
		return c
	}
	return cmp.Compare(a.Timestamp.Nanos, b.Timestamp.Nanos)
}

// copyResult copies the slices and maps of a result so that callers cannot
// change the store through a rendered report.
func copyResult(r api.PolicyReportResult) api.PolicyReportResult {
	r.Resources = slices.Clone(r.Resources)
	if r.Properties != nil {
		props := make(map[string]string, len(r.Properties))
		for k, v := range r.Properties {
			props[k] = v
		}
		r.Properties = props
	}
	if r.ResourceSelector != nil {
		r.ResourceSelector = r.ResourceSelector.DeepCopy()
	}
	return r
}
