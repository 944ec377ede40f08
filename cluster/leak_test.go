package cluster

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
)

// Every goroutine that a host and what runs on it start is over once its
// context is done and Shutdown returned: informers, the policy source's
// workers, the leader's controllers (policy changes, downstream and clone
// source watchers, the UpdateRequest queue, the reports), the webhook
// controller, the admission reports' writers, the event writers.
func TestNoGoroutineLeftAfterShutdown(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	kube, dyn := fakeClients(provisioner(), clonePolicy(), nsObject("a"))
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = served()
	r := newReplicaOn(t, kube, dyn, ControllerOptions{ScanInterval: 50 * time.Millisecond})
	wc := NewWebhookController(r.h, r.src, webhookOptions(), time.Second)
	reports := NewAdmissionReports(r.h, AdmissionReportsOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = r.h.RunLeader(ctx, LeaderOptions{Name: "gavel", Identity: "one"}, func(lctx context.Context) {
			var lwg sync.WaitGroup
			lwg.Go(func() { r.ctrl.Run(lctx) })
			lwg.Go(func() { wc.Run(lctx) })
			lwg.Wait()
		})
	})
	wg.Go(func() { reports.Run(ctx) })
	r.admit(t, "a")
	r.h.events.add(eventInfo{regarding: corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "a"},
		reason: EventReasonPolicyViolation, action: EventActionPassed, note: "n", source: EventSourceScan})
	eventually(t, "the downstream", func() bool { return owner(t, dyn, "a") == "gavel" })
	cancel()
	wg.Wait()
	r.stop()
}
