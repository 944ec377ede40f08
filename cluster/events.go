package cluster

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// EventComponent is the source component of gavel's events.
const EventComponent = "gavel"

// eventRecorder records Kubernetes events through client-go's recorder
// (events of one object and reason are aggregated, and their writes
// rate-limited, by the broadcaster), started with the host and shut down
// with it.
type eventRecorder struct {
	kube kubernetes.Interface
	log  *slog.Logger

	mu          sync.Mutex
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
}

func newEventRecorder(kube kubernetes.Interface, log *slog.Logger) *eventRecorder {
	return &eventRecorder{kube: kube, log: log}
}

func (r *eventRecorder) start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broadcaster != nil {
		return
	}
	r.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	r.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: r.kube.CoreV1().Events("")})
	r.recorder = r.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: EventComponent})
}

func (r *eventRecorder) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broadcaster != nil {
		r.broadcaster.Shutdown()
		r.broadcaster, r.recorder = nil, nil
	}
}

// warn records a Warning event about obj (an object with its apiVersion
// and kind, such as an unstructured policy).
func (r *eventRecorder) warn(obj runtime.Object, reason, message string) {
	r.mu.Lock()
	rec := r.recorder
	r.mu.Unlock()
	if rec == nil {
		r.log.Warn("event not recorded: the host is not started", "reason", reason, "message", message)
		return
	}
	rec.Event(obj, corev1.EventTypeWarning, reason, truncate(message, 1024))
}
