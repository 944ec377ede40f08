package cluster

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Metrics are the Prometheus metrics of a Host and what runs on it, with
// upstream Kyverno's names and labels (its reference-metrics page):
//
//   - kyverno_admission_requests_total and
//     kyverno_admission_review_duration_seconds: each admission review
//     answered, by resource_kind, resource_namespace,
//     resource_request_operation, request_allowed and request_webhook
//     (ValidatingWebhookConfiguration or MutatingWebhookConfiguration);
//   - kyverno_policy_results_total: each rule result, by policy
//     (policy_validation_mode, policy_type, policy_background_mode,
//     policy_namespace, policy_name), resource (resource_kind,
//     resource_namespace, resource_request_operation), rule_name,
//     rule_result, rule_type, rule_execution_cause (admission_request or
//     background_scan) and dry_run;
//   - kyverno_policy_execution_duration_seconds: the time each policy's
//     rules took, with the same labels less rule_name (gavel times a
//     policy, upstream a rule: rule_name is the policy's first rule and
//     rule_result its worst);
//   - kyverno_policy_rule_info_total: 1 for each rule of each policy
//     serving, with status_ready;
//   - kyverno_policy_changes_total: policy creations, updates, deletions;
//   - kyverno_controller_reconcile_total, kyverno_controller_requeue_total
//     and kyverno_controller_drop_total, by controller_name;
//   - kyverno_http_requests_total and kyverno_http_requests_duration_seconds
//     of the webhook server, by http_method and http_url;
//   - the work queues' depth, adds, latency, work duration and retries,
//     by queue name (workqueue_depth, workqueue_adds_total, ...: the
//     names of client-go's queues in Kubernetes components).
//
// Histograms have upstream's default buckets (5 ms to 30 s). A nil
// *Metrics records nothing. Metrics are safe for concurrent use.
type Metrics struct {
	admissionRequests *prometheus.CounterVec
	admissionDuration *prometheus.HistogramVec
	policyResults     *prometheus.CounterVec
	policyDuration    *prometheus.HistogramVec
	policyChanges     *prometheus.CounterVec
	reconciles        *prometheus.CounterVec
	requeues          *prometheus.CounterVec
	drops             *prometheus.CounterVec
	httpRequests      *prometheus.CounterVec
	httpDuration      *prometheus.HistogramVec
	queues            queueMetrics
	ruleInfo          *ruleInfoCollector

	// the series of rule results already used, by their labels' inputs:
	// a map lookup instead of hashing thirteen label values per rule
	results   sync.Map // resultKey -> prometheus.Counter
	durations sync.Map // resultKey -> prometheus.Observer
}

// resultKey is what the labels of a rule result are made from.
type resultKey struct {
	policy, mode, kind, namespace, op, rule string
	status                                  engine.Status
	typ                                     engine.RuleType
	background, cause, dryRun               bool
}

// buckets are upstream's default histogram boundaries, in seconds.
var buckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 25, 30}

var (
	admissionLabels = []string{"resource_kind", "resource_namespace", "resource_request_operation", "request_allowed", "request_webhook"}
	resultLabels    = []string{"policy_validation_mode", "policy_type", "policy_background_mode", "policy_namespace", "policy_name",
		"resource_kind", "resource_namespace", "resource_request_operation", "rule_name", "rule_result", "rule_type", "rule_execution_cause", "dry_run"}
	policyLabels = []string{"policy_validation_mode", "policy_type", "policy_background_mode", "policy_namespace", "policy_name"}
)

// NewMetrics returns the metrics registered with reg (a
// prometheus.NewRegistry(), or prometheus.DefaultRegisterer). It fails
// when reg already holds metrics of the same names.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		admissionRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_admission_requests_total",
			Help: "Admission requests answered."}, admissionLabels),
		admissionDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kyverno_admission_review_duration_seconds",
			Help: "Time to answer an admission review.", Buckets: buckets}, admissionLabels),
		policyResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_policy_results_total",
			Help: "Rule results, at admission and in background scans."}, resultLabels),
		policyDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kyverno_policy_execution_duration_seconds",
			Help: "Time a policy's rules took on one resource.", Buckets: buckets}, resultLabels),
		policyChanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_policy_changes_total",
			Help: "Policies created, updated and deleted."}, append(append([]string(nil), policyLabels...), "policy_change_type")),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_controller_reconcile_total",
			Help: "Items a controller processed."}, []string{"controller_name"}),
		requeues: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_controller_requeue_total",
			Help: "Items a controller put back in its queue after an error."}, []string{"controller_name", "num_requeues"}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_controller_drop_total",
			Help: "Items a controller dropped."}, []string{"controller_name"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kyverno_http_requests_total",
			Help: "HTTP requests of the webhook server."}, []string{"http_method", "http_url"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kyverno_http_requests_duration_seconds",
			Help: "Time to answer an HTTP request of the webhook server.", Buckets: buckets}, []string{"http_method", "http_url"}),
		queues:   newQueueMetrics(),
		ruleInfo: newRuleInfoCollector(),
	}
	for _, c := range []prometheus.Collector{m.admissionRequests, m.admissionDuration, m.policyResults, m.policyDuration,
		m.policyChanges, m.reconciles, m.requeues, m.drops, m.httpRequests, m.httpDuration, m.ruleInfo} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, c := range m.queues.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Webhook types, the request_webhook label.
const (
	ValidatingWebhook = "ValidatingWebhookConfiguration"
	MutatingWebhook   = "MutatingWebhookConfiguration"
)

// Admission records an answered admission review of kind (its Kind),
// namespace and operation, which took d.
func (m *Metrics) Admission(webhook, kind, namespace string, op api.AdmissionOperation, allowed bool, d time.Duration) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"resource_kind": kind, "resource_namespace": namespace,
		"resource_request_operation": strings.ToLower(string(op)), "request_allowed": strconv.FormatBool(allowed), "request_webhook": webhook}
	m.admissionRequests.With(l).Inc()
	m.admissionDuration.With(l).Observe(d.Seconds())
}

// HTTP records one request of the webhook server.
func (m *Metrics) HTTP(method, url string, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(method, url).Inc()
	m.httpDuration.WithLabelValues(method, url).Observe(d.Seconds())
}

// Results records the rule results and policy durations of an engine
// response to req (background: a background scan).
func (m *Metrics) Results(req *engine.Request, resp *engine.Response, background bool) {
	if m == nil || resp == nil {
		return
	}
	cause := "admission_request"
	if background {
		cause = "background_scan"
	}
	op, dryRun := "", "false"
	if req != nil {
		op, dryRun = strings.ToLower(string(req.Operation)), strconv.FormatBool(req.DryRun)
	}
	if background {
		op = ""
	}
	kind, ns := resourceKindNamespace(resp.Resource)
	dry := dryRun == "true"
	for i := range resp.Policies {
		pr := &resp.Policies[i]
		if pr.Policy == nil || len(pr.Rules) == 0 {
			continue
		}
		k := resultKey{policy: idOf(pr.Policy), mode: validationMode(pr.Policy, pr.FailureAction), kind: kind, namespace: ns, op: op,
			background: pr.Policy.Background(), cause: background, dryRun: dry}
		worst := engine.StatusPass
		for j := range pr.Rules {
			r := &pr.Rules[j]
			k.rule, k.status, k.typ = r.Name, r.Status, r.Type
			m.resultCounter(k, pr.Policy, pr.FailureAction, cause, dryRun).Inc()
			worst = worse(worst, r.Status)
		}
		if pr.Duration > 0 {
			k.rule, k.status, k.typ = pr.Rules[0].Name, worst, pr.Rules[0].Type
			m.durationObserver(k, pr.Policy, pr.FailureAction, cause, dryRun).Observe(pr.Duration.Seconds())
		}
	}
}

func (m *Metrics) labelValues(k resultKey, p *engine.Policy, action api.ValidationFailureAction, cause, dryRun string) []string {
	return append(policyLabelValues(p, action), k.kind, k.namespace, k.op, k.rule, string(k.status), ruleType(k.typ), cause, dryRun)
}

func (m *Metrics) resultCounter(k resultKey, p *engine.Policy, action api.ValidationFailureAction, cause, dryRun string) prometheus.Counter {
	if c, ok := m.results.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c := m.policyResults.WithLabelValues(m.labelValues(k, p, action, cause, dryRun)...)
	m.results.Store(k, c)
	return c
}

func (m *Metrics) durationObserver(k resultKey, p *engine.Policy, action api.ValidationFailureAction, cause, dryRun string) prometheus.Observer {
	if o, ok := m.durations.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o := m.policyDuration.WithLabelValues(m.labelValues(k, p, action, cause, dryRun)...)
	m.durations.Store(k, o)
	return o
}

// worse orders results as a report summary would: error, fail, warn,
// pass, skip.
func worse(a, b engine.Status) engine.Status {
	rank := func(s engine.Status) int {
		switch s {
		case engine.StatusError:
			return 4
		case engine.StatusFail:
			return 3
		case engine.StatusWarn:
			return 2
		case engine.StatusPass:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func resourceKindNamespace(obj map[string]any) (string, string) {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	return kind, ns
}

// policyLabelValues are the values of policyLabels (a fresh slice with
// room for the result labels).
func policyLabelValues(p *engine.Policy, action api.ValidationFailureAction) []string {
	typ, ns := "cluster", "-"
	if p.Source().GetNamespace() != "" {
		typ, ns = "namespaced", p.Source().GetNamespace()
	}
	out := make([]string, 0, len(resultLabels))
	return append(out, validationMode(p, action), typ, strconv.FormatBool(p.Background()), ns, p.Source().GetName())
}

func validationMode(p *engine.Policy, action api.ValidationFailureAction) string {
	if action == "" && p != nil {
		if cp, ok := p.Source().(api.ClassicPolicy); ok {
			action = cp.GetSpec().ValidationFailureAction
		}
	}
	if action.IsEnforce() {
		return "enforce"
	}
	return "audit"
}

// ruleType is upstream's rule_type label.
func ruleType(t engine.RuleType) string {
	switch t {
	case engine.Validation:
		return "validate"
	case engine.Mutation:
		return "mutate"
	case engine.Generation:
		return "generate"
	case engine.ImageVerify:
		return "imageVerify"
	}
	return "-"
}

// policyChange records a policy's creation, update or deletion.
func (m *Metrics) policyChange(ch PolicyChange) {
	if m == nil {
		return
	}
	p, typ := ch.New, "update"
	switch {
	case ch.Old == nil:
		typ = "create"
	case ch.New == nil:
		p, typ = ch.Old, "delete"
	}
	if p == nil {
		return
	}
	m.policyChanges.WithLabelValues(append(policyLabelValues(p, ""), typ)...).Inc()
}

// setPolicies sets the policies kyverno_policy_rule_info_total shows,
// with whether each is ready (ready: a version of it serves; failed: the
// keys of the policies whose latest version does not compile).
func (m *Metrics) setPolicies(set *engine.PolicySet, failed map[string]error) {
	if m == nil {
		return
	}
	m.ruleInfo.set(set, failed)
}

func (m *Metrics) reconcile(controller string) {
	if m != nil {
		m.reconciles.WithLabelValues(controller).Inc()
	}
}

func (m *Metrics) requeue(controller string, n int) {
	if m != nil {
		m.requeues.WithLabelValues(controller, strconv.Itoa(n)).Inc()
	}
}

func (m *Metrics) drop(controller string) {
	if m != nil {
		m.drops.WithLabelValues(controller).Inc()
	}
}

// queueMetrics returns the provider of the work queues' metrics (none for
// a nil Metrics).
func (m *Metrics) queueMetrics() workqueue.MetricsProvider {
	if m == nil {
		return nil
	}
	return m.queues
}

// ruleInfoCollector collects kyverno_policy_rule_info_total from the
// policies serving when scraped.
type ruleInfoCollector struct {
	desc *prometheus.Desc
	cur  atomic.Pointer[ruleInfo]
}

type ruleInfo struct {
	set    *engine.PolicySet
	failed map[string]error
}

func newRuleInfoCollector() *ruleInfoCollector {
	return &ruleInfoCollector{desc: prometheus.NewDesc("kyverno_policy_rule_info_total",
		"1 for each rule of each policy serving.",
		append(append([]string(nil), policyLabels...), "rule_name", "rule_type", "status_ready"), nil)}
}

func (c *ruleInfoCollector) set(set *engine.PolicySet, failed map[string]error) {
	c.cur.Store(&ruleInfo{set: set, failed: failed})
}

func (c *ruleInfoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *ruleInfoCollector) Collect(ch chan<- prometheus.Metric) {
	info := c.cur.Load()
	if info == nil || info.set == nil {
		return
	}
	for _, p := range info.set.Policies() {
		ready := strconv.FormatBool(info.failed[idOf(p)] == nil)
		pl := policyLabelValues(p, "")
		for _, r := range p.Rules() {
			typ := "validate"
			switch {
			case r.Mutation != nil:
				typ = "mutate"
			case r.Generation != nil:
				typ = "generate"
			case len(r.VerifyImages) > 0:
				typ = "imageVerify"
			}
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, append(pl, r.Name, typ, ready)...)
		}
		if typ := celRuleType(api.KindOf(p.Source())); typ != "" {
			// a CEL kind has no rules: one series, named as its results
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, append(pl, "", typ, ready)...)
		}
	}
}

// celRuleType is the rule_type of the results of a CEL kind ("" for
// ClusterPolicy and Policy).
func celRuleType(kind string) string {
	switch kind {
	case api.KindValidatingPolicy, api.KindNamespacedValidatingPolicy, api.KindValidatingAdmissionPolicy:
		return "validate"
	case api.KindImageValidatingPolicy, api.KindNamespacedImageValidatingPolicy:
		return "imageVerify"
	case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy, api.KindMutatingAdmissionPolicy:
		return "mutate"
	}
	return ""
}

// queueMetrics implements workqueue.MetricsProvider with Prometheus
// vectors labelled by queue name.
type queueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func newQueueMetrics() queueMetrics {
	name := []string{"name"}
	secs := prometheus.ExponentialBuckets(10e-9, 10, 10)
	return queueMetrics{
		depth:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth", Help: "Current depth of a work queue."}, name),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_unfinished_work_seconds", Help: "Seconds of work in progress not yet observed by work_duration."}, name),
		longest:    prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds", Help: "Seconds the longest running processor of a queue has been running."}, name),
		adds:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total", Help: "Adds handled by a work queue."}, name),
		retries:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total", Help: "Retries handled by a work queue."}, name),
		latency:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_queue_duration_seconds", Help: "Seconds an item stays in a work queue before being requested.", Buckets: secs}, name),
		work:       prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_work_duration_seconds", Help: "Seconds processing an item from a work queue takes.", Buckets: secs}, name),
	}
}

func (q queueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{q.depth, q.unfinished, q.longest, q.adds, q.retries, q.latency, q.work}
}

func (q queueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return q.depth.WithLabelValues(name)
}
func (q queueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return q.adds.WithLabelValues(name)
}
func (q queueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return q.latency.WithLabelValues(name)
}
func (q queueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return q.work.WithLabelValues(name)
}
func (q queueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.unfinished.WithLabelValues(name)
}
func (q queueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return q.longest.WithLabelValues(name)
}
func (q queueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return q.retries.WithLabelValues(name)
}
