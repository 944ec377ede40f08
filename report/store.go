package report

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Labels of the in-cluster reports.
const (
	// LabelManagedBy is set to ManagedByKyverno on every report Store renders.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByKyverno is the value of LabelManagedBy.
	ManagedByKyverno = "kyverno"
)

// ErrNoUID is returned by Store.Update for an empty resource UID.
var ErrNoUID = errors.New("report: resource UID is required")

// Store keeps the current report entries of each resource and renders the
// in-cluster policy reports from them, as upstream's reports controller
// lays them out: one report per resource, a PolicyReport in the
// resource's namespace (a ClusterPolicyReport for a cluster-scoped
// resource) named after the resource's UID, owned by the resource
// (metadata.ownerReferences) and naming it in its scope, with the entries
// of every policy for that resource (ClusterPolicies, Policies and the
// CEL kinds, each with its source). It is safe for concurrent use.
//
// Each resource has two sets of entries, the last admission results and
// the last background scan results (upstream's admission and background
// scan reports); a report shows, per source, policy and rule, the entry of the
// latest update. Only validate and verifyImages results are kept, and
// the results of the CEL mutating kinds (MutatingPolicy,
// MutatingAdmissionPolicy: in a background scan, a fail for a resource
// the policy would change):
//
//   - from admission (Update with background false, or SetAdmission with
//     the entries of AdmissionEntries): the results of every policy
//     applied at admission, so the pass results of Enforce policies too.
//     When the results show that the request was denied
//     (engine.Response.Blocked), the resource was not admitted and
//     nothing is recorded;
//   - from a background scan: the results of policies with background
//     enabled, whatever their failure action. A scan replaces the
//     admission entries of the policies it evaluated; the admission
//     entries of policies with background: false stay.
//
// Skip results (preconditions not met, PolicyExceptions) and errors
// (substitution failures) are kept like passes and failures. A resource
// without entries has no report.
//
// The Store tracks which reports changed since the last TakeChanged
// (entries that differ only in their timestamps are no change), so that a
// writer renders and writes only those (Render).
type Store struct {
	opts Options
	mu   sync.RWMutex
	seq  uint64
	// res holds the entries of each resource with entries, by UID (the
	// name of its report).
	res     map[string]*resourceEntries
	changed map[ReportKey]struct{}
	// processProps are the shared properties of entries with only a
	// process, by process (read-only: renders copy them).
	processProps map[string]map[string]string
}

// ReportKey names an in-cluster report: its namespace ("" for a cluster
// report) and name, the UID of the resource it is about.
type ReportKey struct{ Namespace, Name string }

// keyOfScope returns the key of the report of a resource: its namespace and
// UID.
func keyOfScope(resource api.ObjectReference) ReportKey {
	return ReportKey{Namespace: resource.Namespace, Name: resource.UID}
}

type resourceEntries struct {
	// scope is the resource (apiVersion, kind, namespace, name, uid),
	// from the entries recorded last
	scope      api.ObjectReference
	admission  []storedEntry
	background []storedEntry
	// admittedAt orders admission sets recorded with SetAdmission;
	// admittedReq is the request they came from (MergeAdmission).
	admittedAt  int64
	admittedReq string
	// merged are the entries the report shows, sorted by policy and rule.
	merged []*storedEntry
}

// key is the key of the resource's report.
func (e *resourceEntries) key() ReportKey { return keyOfScope(e.scope) }

type storedEntry struct {
	seq    uint64
	result api.PolicyReportResult
	// message keeps result.Message's canonical copy alive: the messages
	// of many resources are the same text.
	message unique.Handle[string]
}

// intern shares what the entries of many resources have alike: messages
// (unique handles) and the properties that hold only the process.
func (s *Store) intern(entries []storedEntry) {
	for i := range entries {
		r := &entries[i].result
		entries[i].message = unique.Make(r.Message)
		r.Message = entries[i].message.Value()
		if len(r.Properties) == 1 {
			if p := r.Properties[propertyProcess]; p == processBackground || p == processAdmission {
				shared := s.processProps[p]
				if shared == nil {
					shared = map[string]string{propertyProcess: p}
					s.processProps[p] = shared
				}
				r.Properties = shared
			}
		}
	}
}

// NewStore returns an empty Store.
func NewStore(opts Options) *Store {
	return &Store{opts: opts, res: map[string]*resourceEntries{}, changed: map[ReportKey]struct{}{},
		processProps: map[string]map[string]string{}}
}

// scopeOf is the reference a report's scope and owner are made of: the
// resource's apiVersion, kind, namespace, name and UID.
func scopeOf(ref api.ObjectReference, uid string) api.ObjectReference {
	return api.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: uid}
}

// kept reports the results a Store keeps: validate and verifyImages
// results, and those of the CEL mutating kinds (MutatingPolicy,
// MutatingAdmissionPolicy), which upstream's controllers report.
func kept(p *engine.Policy, t engine.RuleType) bool {
	switch t {
	case engine.Validation, engine.ImageVerify:
		return true
	case engine.Mutation:
		switch api.KindOf(p.Source()) {
		case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy, api.KindMutatingAdmissionPolicy:
			return true
		}
	}
	return false
}

// AdmissionEntries returns the report entries an admission request's
// validate results make, as Store.Update(uid, res, false) would record
// them: none when the request was denied. resourceUID fills the entries'
// resource UID when the results' resource has none. It is what an
// admission webhook hands to the Store of another process (SetAdmission).
func AdmissionEntries(res []engine.PolicyResult, resourceUID string, opts Options) ([]api.PolicyReportResult, error) {
	if err := checkResults(res); err != nil {
		return nil, err
	}
	entries := entriesOf(res, resourceUID, false, opts)
	if len(entries) == 0 {
		return nil, nil
	}
	out := make([]api.PolicyReportResult, len(entries))
	for i := range entries {
		out[i] = entries[i].result
	}
	return out, nil
}

func checkResults(res []engine.PolicyResult) error {
	for i := range res {
		if res[i].Policy == nil {
			return &inputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
	}
	return nil
}

// entriesOf converts the results the store keeps for a trigger.
func entriesOf(res []engine.PolicyResult, resourceUID string, background bool, opts Options) []storedEntry {
	if !background && (&engine.Response{Policies: res}).Blocked() {
		return nil
	}
	ts := opts.now()
	source := opts.source()
	n := 0 // exactly: a store keeps these slices
	for i := range res {
		if background && !res[i].Policy.Background() {
			continue
		}
		for j := range res[i].Rules {
			if kept(res[i].Policy, res[i].Rules[j].Type) {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	entries := make([]storedEntry, 0, n)
	var refs []api.ObjectReference
	for i := range res {
		pr := &res[i]
		p := pr.Policy
		if background && !p.Background() {
			continue
		}
		ref := resourceRef(pr.Resource)
		if ref.UID == "" {
			ref.UID = resourceUID
		}
		if len(refs) == 0 || refs[0] != ref {
			refs = []api.ObjectReference{ref} // shared by the entries of one resource
		}
		for j := range pr.Rules {
			rr := &pr.Rules[j]
			if !kept(p, rr.Type) {
				continue
			}
			e := storedEntry{result: convert(pr, rr, source, ts, opts.AuditWarn, ref)}
			e.result.Resources = refs
			entries = append(entries, e)
		}
	}
	return entries
}

// Update records the results of one evaluation of the resource with the
// given UID: an admission request (background false) or a background scan
// (background true). The new entries replace the previous ones of the same
// trigger for this resource; a scan also replaces the admission entries of
// the policies with background enabled. Call Delete when the resource is
// deleted. It returns an error, and changes nothing, for an empty UID or a
// result without a policy.
func (s *Store) Update(resourceUID string, res []engine.PolicyResult, background bool) error {
	if resourceUID == "" {
		return ErrNoUID
	}
	if err := checkResults(res); err != nil {
		return err
	}
	if !background && (&engine.Response{Policies: res}).Blocked() {
		return nil
	}
	entries := entriesOf(res, resourceUID, background, s.opts)
	scope := detach(entries, resourceUID)
	var scanned map[string]bool // policies the scan evaluated
	if background {
		scanned = map[string]bool{}
		for i := range res {
			if res[i].Policy.Background() {
				scanned[res[i].Policy.Key()] = true
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	for i := range entries {
		entries[i].seq = s.seq
	}
	s.intern(entries)
	s.change(resourceUID, func(e *resourceEntries) {
		if scope.UID != "" {
			e.scope = scope
		}
		if background {
			e.background = entries
			if len(scanned) > 0 {
				e.admission = filterEntries(e.admission, func(se *storedEntry) bool { return !scanned[se.result.Policy] })
			}
		} else {
			e.admission = entries
		}
	})
	return nil
}

// detach removes the resource reference from entries of one resource
// (the report's scope names it) and returns it as the scope, with the
// given UID; the zero reference when there are no entries.
func detach(entries []storedEntry, uid string) api.ObjectReference {
	var scope api.ObjectReference
	for i := range entries {
		r := &entries[i].result
		if len(r.Resources) > 0 && scope.UID == "" {
			scope = scopeOf(r.Resources[0], uid)
		}
		r.Resources = nil
	}
	if scope.UID == "" && len(entries) > 0 {
		scope.UID = uid
	}
	return scope
}

// SetAdmission records the admission entries of a resource made by
// AdmissionEntries (in another process: a webhook replica), as Update
// does for an admission. at orders admissions of one resource (the time
// of the request, in any unit that grows): entries older than the ones
// recorded are ignored, and SetAdmission returns false. The entries name
// their resource (Resources[0]) and their policy; an entry without a
// resource is ignored.
func (s *Store) SetAdmission(resourceUID string, at int64, results []api.PolicyReportResult) (bool, error) {
	return s.MergeAdmission(resourceUID, "", at, results)
}

// MergeAdmission is SetAdmission for a part of the results of one
// admission request (upstream's webhooks split a request's policies by
// failure policy; each answers and records its own): when the admission
// recorded last for the resource is the same request, the entries of the
// policies in results replace theirs and the others stay; an older
// request is ignored and a newer one replaces them all. request "" is
// SetAdmission.
func (s *Store) MergeAdmission(resourceUID, request string, at int64, results []api.PolicyReportResult) (bool, error) {
	if resourceUID == "" {
		return false, ErrNoUID
	}
	entries := make([]storedEntry, 0, len(results))
	policies := map[string]bool{}
	for i := range results {
		r := copyResult(results[i])
		if len(r.Resources) == 0 || r.Policy == "" {
			continue
		}
		policies[r.Policy] = true
		entries = append(entries, storedEntry{result: r})
	}
	scope := detach(entries, resourceUID)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.res[resourceUID]
	same := e != nil && request != "" && e.admittedReq == request
	if e != nil && !same && e.admittedAt > at {
		return false, nil
	}
	s.seq++
	for i := range entries {
		entries[i].seq = s.seq
	}
	s.intern(entries)
	s.change(resourceUID, func(e *resourceEntries) {
		if scope.UID != "" {
			e.scope = scope
		}
		if same {
			kept := filterEntries(e.admission, func(x *storedEntry) bool { return !policies[x.result.Policy] })
			entries = append(kept, entries...)
			at = max(at, e.admittedAt)
		}
		e.admission = entries
		e.admittedAt = at
		e.admittedReq = request
	})
	return true, nil
}

// filterEntries returns the entries keep keeps, in a new slice (merged
// views point into the old one).
func filterEntries(in []storedEntry, keep func(*storedEntry) bool) []storedEntry {
	var out []storedEntry
	for i := range in {
		if keep(&in[i]) {
			out = append(out, in[i])
		}
	}
	return out
}

// change applies fn to the entries of a resource (new ones when it has
// none), then updates the merged view and the set of changed reports. fn
// must replace the slices, not modify them. s.mu is held.
func (s *Store) change(uid string, fn func(e *resourceEntries)) {
	e := s.res[uid]
	var before []*storedEntry
	var beforeScope api.ObjectReference
	if e == nil {
		e = &resourceEntries{}
	} else {
		before, beforeScope = e.merged, e.scope
	}
	beforeKey := keyOfScope(beforeScope)
	fn(e)
	e.merged = mergeEntries(e)
	if len(e.merged) == 0 {
		delete(s.res, uid)
	} else {
		s.res[uid] = e
	}
	switch {
	case len(before) > 0 && len(e.merged) > 0 && beforeKey != e.key():
		// the resource moved (another namespace for one UID: never in a
		// cluster, but the input may say so)
		s.changed[beforeKey] = struct{}{}
		s.changed[e.key()] = struct{}{}
	case len(before) > 0 && len(e.merged) == 0:
		s.changed[beforeKey] = struct{}{}
	case beforeScope != e.scope || !sameEntries(before, e.merged):
		s.changed[e.key()] = struct{}{}
	}
}

// sameEntries reports whether two merged lists of one report say the
// same, timestamps aside (both come from mergeEntries, sorted by policy
// and rule).
func sameEntries(a, b []*storedEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !sameResult(&a[i].result, &b[i].result) {
			return false
		}
	}
	return true
}

func sameResult(a, b *api.PolicyReportResult) bool {
	if a.Source != b.Source || a.Policy != b.Policy || a.Rule != b.Rule || a.Category != b.Category ||
		a.Severity != b.Severity || a.Result != b.Result || a.Scored != b.Scored || a.Message != b.Message ||
		!slices.Equal(a.Resources, b.Resources) || !maps.Equal(a.Properties, b.Properties) {
		return false
	}
	if a.ResourceSelector == nil || b.ResourceSelector == nil {
		return a.ResourceSelector == b.ResourceSelector
	}
	return reflect.DeepEqual(a.ResourceSelector, b.ResourceSelector)
}

// Delete removes every entry of the resource with the given UID.
func (s *Store) Delete(resourceUID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.res[resourceUID] == nil {
		return
	}
	s.change(resourceUID, func(e *resourceEntries) { e.admission, e.background = nil, nil })
}

// RemoveAdmission removes the admission entries of a policy that changed,
// given by its key, from every resource: they were made by its previous
// version (a background scan makes the background entries again).
func (s *Store) RemoveAdmission(policyKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, e := range s.res {
		if !slices.ContainsFunc(e.admission, func(se storedEntry) bool { return se.result.Policy == policyKey }) {
			continue
		}
		s.change(uid, func(e *resourceEntries) {
			e.admission = filterEntries(e.admission, func(se *storedEntry) bool { return se.result.Policy != policyKey })
		})
	}
}

// Prune keeps the entries of the rules that still exist, as upstream's
// aggregation keeps only the results of current policies and rules: live
// tells whether a policy (by key: "name" for a ClusterPolicy,
// "namespace/name" for a Policy) has a rule of that name, and whether the
// policy runs in the background now. Other entries are removed (those of
// deleted policies and rules), and so are the background entries of
// policies that no longer run in the background.
func (s *Store) Prune(live func(policyKey, rule string) (exists, background bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uid, e := range s.res {
		drop := false
		check := func(se *storedEntry, bg bool) bool {
			ok, b := live(se.result.Policy, se.result.Rule)
			return ok && (!bg || b)
		}
		for i := range e.admission {
			drop = drop || !check(&e.admission[i], false)
		}
		for i := range e.background {
			drop = drop || !check(&e.background[i], true)
		}
		if !drop {
			continue
		}
		s.change(uid, func(e *resourceEntries) {
			e.admission = filterEntries(e.admission, func(se *storedEntry) bool { return check(se, false) })
			e.background = filterEntries(e.background, func(se *storedEntry) bool { return check(se, true) })
		})
	}
}

// UIDs returns the UIDs of the resources with entries, in no order.
func (s *Store) UIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.res))
	for uid := range s.res {
		out = append(out, uid)
	}
	return out
}

// Keys returns the reports with entries, in no order.
func (s *Store) Keys() []ReportKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ReportKey, 0, len(s.res))
	for _, e := range s.res {
		out = append(out, e.key())
	}
	return out
}

// HasAdmission reports whether the resource has admission entries.
func (s *Store) HasAdmission(resourceUID string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.res[resourceUID]
	return e != nil && len(e.admission) > 0
}

// TakeChanged returns the reports whose entries changed since the last
// call (new reports, and reports that have become empty, which Render
// does not render), sorted as Reports sorts them, and forgets them.
func (s *Store) TakeChanged() []ReportKey {
	s.mu.Lock()
	keys := make([]ReportKey, 0, len(s.changed))
	for k := range s.changed {
		keys = append(keys, k)
	}
	clear(s.changed)
	s.mu.Unlock()
	slices.SortFunc(keys, compareKeys)
	return keys
}

// MarkChanged marks reports as changed again (a writer that failed to
// write them).
func (s *Store) MarkChanged(keys ...ReportKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.changed[k] = struct{}{}
	}
}

// Render renders one report as Reports does, and false when it has no
// entries.
func (s *Store) Render(k ReportKey) (Report, bool) {
	s.mu.RLock()
	e := s.res[k.Name]
	if e == nil || e.key() != k {
		s.mu.RUnlock()
		return Report{}, false
	}
	scope, results := e.scope, resultsOf(e)
	s.mu.RUnlock()
	return s.render(scope, results), true
}

// render makes the report of a resource from a copy of its entries.
func (s *Store) render(scope api.ObjectReference, results []api.PolicyReportResult) Report {
	sortResults(results)
	return Report{Format: s.opts.Format, Name: scope.UID, Namespace: scope.Namespace,
		Labels: map[string]string{LabelManagedBy: ManagedByKyverno},
		Scope:  &scope,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: scope.APIVersion, Kind: scope.Kind,
			Name: scope.Name, UID: types.UID(scope.UID)}},
		Summary: summarize(results), Results: results}
}

// resultsOf copies the entries of a resource; s.mu is held.
func resultsOf(e *resourceEntries) []api.PolicyReportResult {
	results := make([]api.PolicyReportResult, len(e.merged))
	for i, se := range e.merged {
		results[i] = copyResult(se.result)
	}
	return results
}

func compareKeys(a, b ReportKey) int {
	// Cluster reports (namespace "") sort first.
	if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// Reports renders the current reports, as upstream's reports controller
// lays them out: per resource with entries, a PolicyReport in its
// namespace or, for a cluster-scoped resource, a ClusterPolicyReport
// (Report and ClusterReport with OpenReports), named after the resource's
// UID, owned by the resource and naming it in its scope (apiVersion,
// kind, namespace, name, uid), labelled app.kubernetes.io/managed-by:
// kyverno, with a summary. Entries carry no resource (the scope names
// it). Cluster reports come first, sorted by name, then namespaced
// reports sorted by namespace and name; entries are sorted as upstream
// sorts them (policy, rule, source, timestamp). The values are new on
// every call.
func (s *Store) Reports() []Report {
	type item struct {
		scope   api.ObjectReference
		results []api.PolicyReportResult
	}
	s.mu.RLock()
	items := make([]item, 0, len(s.res))
	for _, e := range s.res {
		items = append(items, item{e.scope, resultsOf(e)})
	}
	s.mu.RUnlock()
	slices.SortFunc(items, func(a, b item) int { return compareKeys(keyOfScope(a.scope), keyOfScope(b.scope)) })
	out := make([]Report, len(items))
	for i := range items {
		out[i] = s.render(items[i].scope, items[i].results)
	}
	return out
}

// mergeEntries returns the entries of a resource with, for each source,
// policy and rule, the one of the latest update, sorted by policy and rule.
func mergeEntries(e *resourceEntries) []*storedEntry {
	type ruleKey struct{ source, policy, rule string }
	n := len(e.admission) + len(e.background)
	if n == 0 {
		return nil
	}
	best := make(map[ruleKey]int, n)
	flat := make([]*storedEntry, 0, n)
	for _, set := range [][]storedEntry{e.admission, e.background} {
		for i := range set {
			se := &set[i]
			k := ruleKey{se.result.Source, se.result.Policy, se.result.Rule}
			if j, ok := best[k]; ok {
				if se.seq >= flat[j].seq {
					flat[j] = se
				}
				continue
			}
			best[k] = len(flat)
			flat = append(flat, se)
		}
	}
	slices.SortFunc(flat, func(a, b *storedEntry) int {
		if c := cmp.Compare(a.result.Policy, b.result.Policy); c != 0 {
			return c
		}
		if c := cmp.Compare(a.result.Rule, b.result.Rule); c != 0 {
			return c
		}
		return cmp.Compare(a.result.Source, b.result.Source)
	})
	return slices.Clip(flat)
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
