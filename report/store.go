package report

import (
	"github.com/gavelpolicy/gavel/engine"
	ireport "github.com/gavelpolicy/gavel/internal/report"
)

// ErrNoUID is returned by Store.Update for an empty resource UID.
var ErrNoUID = ireport.ErrNoUID

// Store keeps the current report entries of each resource and renders the
// in-cluster policy reports from them. It is safe for concurrent use.
//
// Each resource has two sets of entries, the last admission results and
// the last background scan results (upstream's admission and background
// scan reports); a report shows, per policy and rule, the entry of the
// latest Update. Only validate and verifyImages results are kept:
//
//   - from admission (Update with background false): the results of every
//     policy applied at admission, so the pass results of Enforce policies
//     too. When the results show that the request was denied
//     (engine.Response.Blocked), the resource was not admitted and Update
//     changes nothing;
//   - from a background scan: the results of policies with background
//     enabled, whatever their failure action. A scan replaces the
//     admission entries of the policies it evaluated; those of policies
//     with background: false stay.
//
// Skip results (preconditions not met, PolicyExceptions) and errors are
// kept like passes and failures.
type Store struct{ s *ireport.Store }

// NewStore returns an empty Store.
func NewStore(opts Options) *Store { return &Store{ireport.NewStore(opts.internal())} }

// Update records the results of one evaluation of the resource with the
// given UID: an admission request (background false) or a background scan
// (background true). The new entries replace the previous ones of the same
// kind for this resource; call Delete when the resource is deleted. It
// returns an error, and changes nothing, for an empty UID (ErrNoUID) or a
// result without a policy.
func (s *Store) Update(resourceUID string, results []engine.PolicyResult, background bool) error {
	return s.s.Update(resourceUID, results, background)
}

// Delete removes every entry of the resource with the given UID.
func (s *Store) Delete(resourceUID string) { s.s.Delete(resourceUID) }

// RemovePolicy removes the entries of a deleted policy, given by its key
// ("name" for a ClusterPolicy, "namespace/name" for a Policy), from every
// resource, as upstream drops the results of policies that no longer exist.
func (s *Store) RemovePolicy(policyKey string) { s.s.RemovePolicy(policyKey) }

// Len returns the number of resources with entries.
func (s *Store) Len() int { return s.s.Len() }

// Reports renders the current reports: per policy, a cluster report for
// the cluster-scoped resources and a namespaced report in each namespace
// with resources, named cpol-<policy> (ClusterPolicy) or pol-<policy>
// (Policy), labelled app.kubernetes.io/managed-by: kyverno, with a summary.
// Reports without entries are not rendered. Cluster reports come first,
// sorted by name, then namespaced reports sorted by namespace and name;
// entries are sorted as upstream sorts them (policy, rule, source,
// resource UID, timestamp). The values are new on every call.
func (s *Store) Reports() []Report { return fromObjects(s.s.Reports()) }
