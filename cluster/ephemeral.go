package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/report"
)

// The resources of the ephemeral reports, upstream's reports.kyverno.io/v1
// EphemeralReport and ClusterEphemeralReport: the admission results of one
// resource, written by a webhook replica, merged into the policy reports
// and deleted by the leader's Reporter.
var (
	EphemeralReports        = schema.GroupVersionResource{Group: "reports.kyverno.io", Version: "v1", Resource: "ephemeralreports"}
	ClusterEphemeralReports = schema.GroupVersionResource{Group: "reports.kyverno.io", Version: "v1", Resource: "clusterephemeralreports"}
)

// Labels and annotations of the ephemeral reports.
const (
	// labelResourceUID holds the UID of the resource an ephemeral report
	// is about (upstream's label).
	labelResourceUID = "audit.kyverno.io/resource.uid"
	// labelReportSource is "admission" on the ephemeral reports of
	// admission requests.
	labelReportSource = "audit.kyverno.io/source"
	// annotationAdmittedAt holds the time the webhook answered the
	// request (RFC 3339 with nanoseconds): the leader keeps, per
	// resource, the results of the latest admission.
	annotationAdmittedAt = "reports.gavel.io/admitted-at"
	// annotationRequest holds the UID of the admission request: the
	// reports of one request's webhooks (one per failure policy) merge.
	annotationRequest = "reports.gavel.io/request"
)

// AdmissionReportsOptions configure AdmissionReports.
type AdmissionReportsOptions struct {
	// QueueSize bounds the admissions waiting to be written (default
	// 1024). When the queue is full, Record drops the admission's results
	// and counts it (Dropped) rather than wait.
	QueueSize int
	// Workers write ephemeral reports concurrently (default 2).
	Workers int
	// Report gives the entries' clock, source and AuditWarn (the format
	// of the policy reports is the leader's).
	Report report.Options
}

// AdmissionReports records the results of admitted requests for the
// policy reports, as upstream's webhook does: each admission of a resource
// becomes an EphemeralReport (ClusterEphemeralReport for a cluster-scoped
// resource) named after the request, which the leader's Reporter merges
// into the PolicyReports and then deletes. Record only queues: the
// reports are written by Run, in the background, so that admission
// latency does not grow; a full queue drops and counts. Webhook replicas
// keep no state of their own: an ephemeral report not merged yet is
// merged by the next leader. It is safe for concurrent use.
type AdmissionReports struct {
	h       *Host
	opts    report.Options
	workers int
	queue   chan admitted

	dropped atomic.Uint64
	written atomic.Uint64
	logMu   sync.Mutex
	lastLog time.Time
}

// admitted is one admission waiting to be written.
type admitted struct {
	at        time.Time
	requestID string
	part      string
	operation api.AdmissionOperation
	owner     map[string]any // apiVersion, kind, name, namespace, uid
	policies  []engine.PolicyResult
}

// NewAdmissionReports returns the recorder of admission results of a
// webhook replica; call Run to write them.
func NewAdmissionReports(h *Host, opts AdmissionReportsOptions) *AdmissionReports {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	return &AdmissionReports{h: h, opts: withClock(opts.Report), workers: opts.Workers, queue: make(chan admitted, opts.QueueSize)}
}

// withClock returns the report options with the clock defaulted to
// time.Now (the ephemeral reports read it).
func withClock(o report.Options) report.Options {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// Record queues the validate results of an admitted request (resp is
// req's engine.Response from PolicySet.Validate) and reports whether it
// did. Only the results of admission-only policies (background: false)
// are recorded: the leader evaluates every created or changed resource
// that background policies match as soon as its informers see it, so
// their admission results would be replaced at once (upstream writes
// them too, and its background scan replaces them later). Nothing is
// recorded for dry-run requests, deletions, subresources, objects without
// a UID (the API server gives one before validating admission), denied
// requests (resp.Blocked), and requests without results of admission-only
// policies. It never blocks: when the queue is full the results are
// dropped, counted and logged (at most once a second, with the count).
//
// part names the webhook that answered (its failure policy, "fail" or
// "ignore", or "" for one that serves every policy): the ephemeral report
// is named after the request and the part, and the leader merges the
// parts of one request.
func (a *AdmissionReports) Record(req *engine.Request, resp *engine.Response, part string) bool {
	if req == nil || resp == nil || req.DryRun || req.Operation == api.Delete || req.SubResource != "" || req.Object == nil {
		return false
	}
	u := unstructured.Unstructured{Object: req.Object}
	if u.GetUID() == "" || resp.Blocked() {
		return false
	}
	var policies []engine.PolicyResult
	for i := range resp.Policies {
		if p := resp.Policies[i].Policy; p != nil && !p.Background() && len(resp.Policies[i].Rules) > 0 {
			policies = append(policies, resp.Policies[i])
		}
	}
	if len(policies) == 0 {
		return false
	}
	item := admitted{
		at:        a.opts.Clock(),
		requestID: req.UID,
		part:      part,
		operation: req.Operation,
		owner: map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "name": u.GetName(),
			"namespace": u.GetNamespace(), "uid": string(u.GetUID()),
		},
		policies: policies,
	}
	select {
	case a.queue <- item:
		return true
	default:
	}
	n := a.dropped.Add(1)
	a.logMu.Lock()
	now := time.Now()
	if now.Sub(a.lastLog) >= time.Second {
		a.lastLog = now
		a.logMu.Unlock()
		a.h.log.Warn("admission reports: queue full, results dropped", "queue", cap(a.queue),
			"kind", u.GetKind(), "namespace", u.GetNamespace(), "name", u.GetName(), "dropped", n)
		return false
	}
	a.logMu.Unlock()
	return false
}

// Dropped returns the number of admissions dropped because the queue was
// full.
func (a *AdmissionReports) Dropped() uint64 { return a.dropped.Load() }

// Written returns the number of ephemeral reports written.
func (a *AdmissionReports) Written() uint64 { return a.written.Load() }

// Run writes the queued admissions until ctx is done; what is still
// queued then is lost (the next admission or scan of those resources
// reports them again).
func (a *AdmissionReports) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range a.workers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case item := <-a.queue:
					if err := a.write(ctx, &item); err != nil && ctx.Err() == nil {
						a.h.log.Warn("admission reports: writing an ephemeral report", "kind", item.owner["kind"],
							"namespace", item.owner["namespace"], "name", item.owner["name"], "err", err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// write creates the ephemeral report of one admission.
func (a *AdmissionReports) write(ctx context.Context, item *admitted) error {
	uid, _ := item.owner["uid"].(string)
	results, err := report.AdmissionEntries(item.policies, uid, a.opts)
	if err != nil || len(results) == 0 {
		return err
	}
	obj, err := ephemeralObject(item, results)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: obj}
	gvr := EphemeralReports
	if u.GetNamespace() == "" {
		gvr = ClusterEphemeralReports
	}
	_, err = a.h.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the same request answered twice (the API server retried)
	}
	if err != nil {
		return err
	}
	a.written.Add(1)
	return nil
}

// ephemeralSpec is the spec of an ephemeral report.
type ephemeralSpec struct {
	Owner   metav1.OwnerReference    `json:"owner"`
	Summary api.PolicyReportSummary  `json:"summary"`
	Results []api.PolicyReportResult `json:"results,omitempty"`
}

func ephemeralObject(item *admitted, results []api.PolicyReportResult) (map[string]any, error) {
	str := func(k string) string { s, _ := item.owner[k].(string); return s }
	owner := metav1.OwnerReference{APIVersion: str("apiVersion"), Kind: str("kind"), Name: str("name"), UID: types.UID(str("uid"))}
	spec := ephemeralSpec{Owner: owner, Results: results}
	for i := range results {
		switch results[i].Result {
		case api.ResultPass:
			spec.Summary.Pass++
		case api.ResultFail:
			spec.Summary.Fail++
		case api.ResultWarn:
			spec.Summary.Warn++
		case api.ResultError:
			spec.Summary.Error++
		case api.ResultSkip:
			spec.Summary.Skip++
		}
	}
	specObj, err := toObject(spec)
	if err != nil {
		return nil, err
	}
	kind := "EphemeralReport"
	if str("namespace") == "" {
		kind = "ClusterEphemeralReport"
	}
	md := map[string]any{
		"labels": map[string]any{
			report.LabelManagedBy: report.ManagedByKyverno,
			labelResourceUID:      str("uid"),
			labelReportSource:     "admission",
		},
		"annotations": map[string]any{annotationAdmittedAt: item.at.UTC().Format(time.RFC3339Nano), annotationRequest: item.requestID},
	}
	if item.requestID != "" {
		md["name"] = item.requestID
		if item.part != "" {
			md["name"] = item.requestID + "-" + item.part
		}
	} else {
		md["generateName"] = "admission-"
	}
	if ns := str("namespace"); ns != "" {
		md["namespace"] = ns
	}
	// the resource exists already unless it is being created (the owner
	// of a create may never be stored): the garbage collector then removes
	// a report the leader never merged along with its resource
	if item.operation != api.Create && item.operation != "" {
		ref, err := toObject(owner)
		if err != nil {
			return nil, err
		}
		md["ownerReferences"] = []any{ref}
	}
	return map[string]any{
		"apiVersion": EphemeralReports.GroupVersion().String(),
		"kind":       kind,
		"metadata":   md,
		"spec":       specObj,
	}, nil
}

// ephemeral is an ephemeral report read back by the leader.
type ephemeral struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	resourceUID     string
	request         string // the admission request's UID
	at              int64  // admission time in ns
	owner           metav1.OwnerReference
	results         []api.PolicyReportResult
}

// touches reports whether the ephemeral report's results go to one of the
// reports: the report of its resource.
func (e *ephemeral) touches(reports map[report.ReportKey]bool) bool {
	return len(e.results) > 0 && reports[report.ReportKey{Namespace: e.namespace, Name: e.resourceUID}]
}

// readEphemeral decodes an ephemeral report.
func readEphemeral(u *unstructured.Unstructured) (*ephemeral, error) {
	e := &ephemeral{gvr: EphemeralReports, namespace: u.GetNamespace(), name: u.GetName()}
	if e.namespace == "" {
		e.gvr = ClusterEphemeralReports
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	var s ephemeralSpec
	if err := fromObject(spec, &s); err != nil {
		return e, fmt.Errorf("ephemeral report %s/%s: %w", e.namespace, e.name, err)
	}
	e.owner, e.results = s.Owner, s.Results
	e.resourceUID = string(s.Owner.UID)
	if e.resourceUID == "" {
		e.resourceUID = u.GetLabels()[labelResourceUID]
	}
	if e.resourceUID == "" {
		return e, fmt.Errorf("ephemeral report %s/%s: no resource UID", e.namespace, e.name)
	}
	e.request = u.GetAnnotations()[annotationRequest]
	if t, err := time.Parse(time.RFC3339Nano, u.GetAnnotations()[annotationAdmittedAt]); err == nil {
		e.at = t.UnixNano()
	} else {
		e.at = u.GetCreationTimestamp().UnixNano()
	}
	return e, nil
}
