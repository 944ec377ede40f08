package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	eventsclient "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// EventComponent is the reporting controller of the events gavel records
// about its policies themselves (a policy that does not compile).
const EventComponent = "gavel"

// The reporting controllers (events.k8s.io/v1 reportingController) of
// gavel's events: upstream's, so that what selects Kyverno's events
// (alerts, dashboards, upstream's own tests) selects gavel's, as the
// reports keep upstream's source "kyverno". The reporting instance is the
// controller followed by "-" and the host name, as upstream's.
const (
	EventSourceAdmission = "kyverno-admission"
	EventSourceScan      = "kyverno-scan"
	EventSourceGenerate  = "kyverno-generate"
	EventSourceMutate    = "kyverno-mutate"
	EventSourceCleanup   = "kyverno-cleanup"
)

// The reasons of gavel's events, upstream's (EventReasonPolicyError is
// declared with the policies).
const (
	EventReasonPolicyViolation = "PolicyViolation"
	EventReasonPolicyApplied   = "PolicyApplied"
	EventReasonPolicySkipped   = "PolicySkipped"
)

// The actions of gavel's events, upstream's.
const (
	EventActionBlocked   = "Resource Blocked"
	EventActionPassed    = "Resource Passed"
	EventActionGenerated = "Resource Generated"
	EventActionMutated   = "Resource Mutated"
	EventActionCleanedUp = "Resource Cleaned Up"
	EventActionNone      = "None"
)

// EventOptions configure the events the host records (upstream's
// --omitEvents, --maxQueuedEvents, --eventsRateLimitQPS and
// --eventsRateLimitBurst).
type EventOptions struct {
	// Omit are the reasons of the events not recorded (PolicyViolation,
	// PolicyApplied, PolicyError, PolicySkipped), but for the events of
	// the cleanup and deleting policies (upstream's cleanup controller has
	// no omitEvents). Nil: DefaultOmitEvents, upstream's chart default;
	// an empty, non-nil slice omits none. PolicyApplied events also need
	// the ConfigMap's generateSuccessEvents (Config.GenerateSuccessEvents),
	// as upstream's, the cleanup's too.
	Omit []string
	// MaxQueued bounds the events waiting to be written: beyond, new ones
	// are dropped (and logged), so that recording never waits. Zero:
	// 1000, upstream's default.
	MaxQueued int
	// QPS and Burst limit the writes of events (a token bucket of the
	// writers, apart from the host's other requests). Zero: 1000 and
	// 2000, upstream's defaults.
	QPS   float32
	Burst int
}

// DefaultOmitEvents are the reasons EventOptions.Omit leaves out when nil,
// as upstream's chart (omitEvents: "PolicyApplied,PolicySkipped").
var DefaultOmitEvents = []string{EventReasonPolicyApplied, EventReasonPolicySkipped}

// The defaults of EventOptions, upstream's.
const (
	defaultMaxQueuedEvents = 1000
	defaultEventsQPS       = 1000
	defaultEventsBurst     = 2000
	eventWorkers           = 3 // upstream's
	eventRetries           = 3 // writes retried after the first, upstream's
	maxEventNote           = 1024
)

// eventInfo is one event to record, as upstream's event.Info.
type eventInfo struct {
	regarding corev1.ObjectReference
	related   *corev1.ObjectReference
	reason    string
	action    string
	note      string
	source    string // reporting controller
	typ       string // empty: Normal for PolicyApplied and PolicySkipped, Warning otherwise
}

// eventRecorder writes events.k8s.io/v1 Events as upstream's event
// generator does: add filters them (omitted reasons, success events
// without generateSuccessEvents, objects without a name) and queues them
// without waiting (a full queue drops them); eventWorkers workers make
// each Event and create it, at most QPS a second (Burst at once),
// retrying a failed write eventRetries times with backoff. The queue also
// takes admissions' results, whose events a worker builds and queues
// (Host.RecordAdmissionEvents). Events are not aggregated: every add is
// an Event of its own, named after its object and the time, as
// upstream's.
type eventRecorder struct {
	client   eventsclient.EventsV1Interface
	log      *slog.Logger
	omit     map[string]bool
	max      int
	hostname string
	config   func() *Config
	now      func() time.Time
	// exceptionUID gives the UID of a PolicyException (nil: unknown)
	exceptionUID func(key string) types.UID
	seq          atomic.Int64

	queue   workqueue.TypedRateLimitingInterface[*queuedEvent]
	limiter flowcontrol.RateLimiter // of the writes
	warn    sync.Once               // generateSuccessEvents with PolicyApplied omitted
	dropped atomic.Int64

	mu      sync.Mutex
	started bool
	wg      sync.WaitGroup
}

func newEventRecorder(client eventsclient.EventsV1Interface, opts EventOptions, config func() *Config, log *slog.Logger) *eventRecorder {
	omit := opts.Omit
	if omit == nil {
		omit = DefaultOmitEvents
	}
	r := &eventRecorder{client: client, log: log, omit: map[string]bool{}, max: opts.MaxQueued, config: config, now: time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*queuedEvent](),
			workqueue.TypedRateLimitingQueueConfig[*queuedEvent]{Name: "events"})}
	for _, o := range omit {
		if o = strings.TrimSpace(o); o != "" {
			r.omit[o] = true
		}
	}
	if r.max <= 0 {
		r.max = defaultMaxQueuedEvents
	}
	qps, burst := opts.QPS, opts.Burst
	if qps <= 0 {
		qps = defaultEventsQPS
	}
	if burst <= 0 {
		burst = defaultEventsBurst
	}
	r.limiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	r.hostname, _ = os.Hostname()
	return r
}

// start starts the workers; they stop when ctx is done.
func (r *eventRecorder) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	r.wg.Go(func() {
		<-ctx.Done()
		r.queue.ShutDown()
	})
	for range eventWorkers {
		r.wg.Go(func() {
			for r.processNext(ctx) {
			}
		})
	}
}

// shutdown waits for the workers (once start's context is done) and
// stops the queue.
func (r *eventRecorder) shutdown() {
	r.queue.ShutDown()
	r.wg.Wait()
}

// add records events; it never waits for the API server.
func (r *eventRecorder) add(infos ...eventInfo) {
	for i := range infos {
		info := &infos[i]
		if info.regarding.Name == "" {
			// upstream: a resource with generateName has no name yet
			continue
		}
		if !r.wanted(info) {
			continue
		}
		if r.full() {
			r.drop(info.reason, info.regarding)
			continue
		}
		r.queue.Add(&queuedEvent{info: *info, at: r.now()})
	}
}

// queuedEvent is an event waiting to be written, whose Event the writer
// makes (eventRecorder.event), off the caller's path; or the results of
// an admission (resp set), whose events a writer builds and queues.
type queuedEvent struct {
	info eventInfo
	at   time.Time
	ev   *eventsv1.Event // made on the first attempt

	resp    *engine.Response
	blocked bool
}

// full reports whether the queue holds MaxQueued events.
func (r *eventRecorder) full() bool { return r.queue.Len() >= r.max }

// drop counts an event dropped for a full queue, and logs the first and
// every thousandth.
func (r *eventRecorder) drop(reason string, regarding corev1.ObjectReference) {
	if n := r.dropped.Add(1); n == 1 || n%1000 == 0 {
		r.log.Warn("events: the queue is full, event dropped", "maxQueued", r.max, "dropped", n,
			"reason", reason, "kind", regarding.Kind, "namespace", regarding.Namespace, "name", regarding.Name)
	}
}

// wanted applies the omitted reasons and, to PolicyApplied events, the
// configuration's generateSuccessEvents and successEventActions.
func (r *eventRecorder) wanted(info *eventInfo) bool {
	var cfg *Config
	if r.config != nil {
		cfg = r.config()
	}
	if cfg == nil {
		cfg = &Config{}
	}
	// upstream's cleanup controller has no omitEvents
	if r.omit[info.reason] && info.source != EventSourceCleanup {
		if info.reason == EventReasonPolicyApplied && cfg.GenerateSuccessEvents {
			r.warn.Do(func() {
				r.log.Warn("events: generateSuccessEvents is set but PolicyApplied is omitted: no success events are recorded")
			})
		}
		return false
	}
	if info.reason == EventReasonPolicyApplied {
		if !cfg.GenerateSuccessEvents {
			return false
		}
		if len(cfg.SuccessEventActions) > 0 && !slices.Contains(cfg.SuccessEventActions, info.action) {
			return false
		}
	}
	return true
}

// event makes the Event of info, named and placed as upstream's (and
// client-go's) recorders do: in the namespace of the object it regards
// (default for a cluster-scoped one), named after it and the time.
func (r *eventRecorder) event(info *eventInfo, t time.Time) *eventsv1.Event {
	typ := info.typ
	if typ == "" {
		typ = corev1.EventTypeWarning
		if info.reason == EventReasonPolicyApplied || info.reason == EventReasonPolicySkipped {
			typ = corev1.EventTypeNormal
		}
	}
	ns := info.regarding.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	note := info.note
	if len(note) > maxEventNote {
		note = note[:maxEventNote-3] + "..."
	}
	var related *corev1.ObjectReference
	if info.related != nil {
		rel := *info.related
		related = &rel
	}
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			// the sequence keeps two events of one object in one clock
			// tick apart
			Name:      fmt.Sprintf("%s.%x", eventName(info.regarding.Name), t.UnixNano()+r.seq.Add(1)),
			Namespace: ns,
		},
		EventTime:           metav1.NewMicroTime(t),
		ReportingController: info.source,
		ReportingInstance:   info.source + "-" + r.hostname,
		Action:              info.action,
		Reason:              info.reason,
		Regarding:           info.regarding,
		Related:             related,
		Note:                note,
		Type:                typ,
	}
}

// eventName turns an object's name into the start of a DNS subdomain,
// as upstream does: lower case, characters other than letters, digits,
// "." and "-" replaced by "-", starting and ending with a letter or digit
// ("a" and "z" added).
func eventName(name string) string {
	b := []byte(name)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '.', c == '-':
		default:
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		return ""
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	if !alnum(b[0]) {
		b = append([]byte{'a'}, b...)
	}
	if !alnum(b[len(b)-1]) {
		b = append(b, 'z')
	}
	return string(b)
}

// processNext writes one queued Event: a failure other than the
// namespace's absence is retried with backoff, eventRetries times.
func (r *eventRecorder) processNext(ctx context.Context) bool {
	q, shutdown := r.queue.Get()
	if shutdown {
		return false
	}
	defer r.queue.Done(q)
	if q.resp != nil {
		r.add(r.admissionEvents(q.resp, q.blocked, r.exceptionUID)...)
		r.queue.Forget(q)
		return true
	}
	if err := r.limiter.Wait(ctx); err != nil {
		r.queue.Forget(q) // stopping
		return true
	}
	if q.ev == nil {
		q.ev = r.event(&q.info, q.at)
	}
	ev := q.ev
	_, err := r.client.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
		if r.queue.NumRequeues(q) < eventRetries {
			r.queue.AddRateLimited(q)
			return true
		}
		r.log.Error("events: dropping an event after its retries", "reason", ev.Reason, "kind", ev.Regarding.Kind,
			"namespace", ev.Regarding.Namespace, "name", ev.Regarding.Name, "err", err)
	}
	r.queue.Forget(q)
	return true
}

// RecordAdmissionEvents records the events of the results of an admission
// request, as upstream's webhooks do (see the README's "Events"):
// PolicyViolation events for failed and errored rules, on the policy
// ("(blocked)" when blocked, the request denied) and, when admitted, on
// the resource; PolicySkipped events for rules that PolicyExceptions
// skipped; PolicyApplied for policies that passed or mutated. Pass the
// response of Validate (blocked: whether the request is denied) or of
// Mutate. The response is queued (the recorder's writers build its
// events), never waited for: recording neither slows nor fails the
// admission; resp must not change afterwards. Omitted reasons
// (EventOptions.Omit) and, without the ConfigMap's generateSuccessEvents,
// PolicyApplied events are not even built. resp may be nil.
func (h *Host) RecordAdmissionEvents(resp *engine.Response, blocked bool) {
	if resp == nil || len(resp.Policies) == 0 {
		return
	}
	r := h.events
	if !r.hasAdmissionEvents(resp, blocked) {
		return
	}
	if r.full() {
		// not even built: a full queue would drop them
		r.drop("", corev1.ObjectReference{Kind: "admission"})
		return
	}
	// built by a writer, off the admission's path
	r.queue.Add(&queuedEvent{resp: resp, blocked: blocked})
}

// RecordGenerateEvents records the events of a Generate call at
// admission: a PolicyError on the policy of each UpdateRequest of resp
// that could not be written (status Failed), as upstream's generate and
// mutate-existing handlers record a failure to create one. Its rule
// results make no event here: the controller records them as it
// processes the requests. Queued, never waited for; resp may be nil.
func (h *Host) RecordGenerateEvents(resp *engine.Response) {
	if resp == nil || !slices.ContainsFunc(resp.UpdateRequests, failedRequest) {
		return
	}
	policies := make([]*engine.Policy, len(resp.Policies))
	for i := range resp.Policies {
		policies[i] = resp.Policies[i].Policy
	}
	h.events.add(queueFailedEvents(resp.UpdateRequests, policies, resp.Resource, false)...)
}

func failedRequest(ur *api.UpdateRequest) bool { return ur.Status.State == api.URFailed }

// exceptionUID returns the UID of a kyverno.io PolicyException from the
// informer's cache ("" when it is not there).
func (h *Host) exceptionUID(key string) types.UID {
	if h.excInf == nil {
		return ""
	}
	o, ok, _ := h.excInf.GetStore().GetByKey(key)
	if !ok {
		return ""
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetUID()
	}
	return ""
}

// policyError records a PolicyError event about a policy that does not
// compile (obj: the policy as the cluster holds it).
func (r *eventRecorder) policyError(obj *unstructured.Unstructured, err error) {
	r.add(eventInfo{regarding: corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Name: obj.GetName(),
		Namespace: obj.GetNamespace(), UID: obj.GetUID()}, reason: EventReasonPolicyError, action: EventActionNone,
		note: err.Error(), source: EventComponent})
}
