package cluster

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
)

// DownstreamAdmissionOptions configure DownstreamAdmission.
type DownstreamAdmissionOptions struct {
	// ControllerUsername is the user the controller writes as (its
	// ServiceAccount, "system:serviceaccount:<namespace>:<name>"). Its own
	// updates and deletions of downstream resources are not handled, as
	// upstream ignores its background controller's; empty: every user's
	// are.
	ControllerUsername string
}

// DownstreamAdmission is the webhook side of synchronize: an UPDATE or a
// DELETE of a resource that carries the generate tracking labels (a
// downstream resource, or a clone source) becomes, at admission, the
// UpdateRequests the Controller's informers would make of the event
// (generate.Controller's OnDownstreamChange and OnSourceChange with
// generate.WithQueue), written Pending to the durable Queue. A downstream
// resource deleted or edited while no controller runs is then restored
// when one starts: a deleted object cannot be listed by the next leader's
// informers, but its UpdateRequest waits in the cluster.
//
// The requests are only written, never processed here; equal ones
// coalesce (Queue.Enqueue). Handle never decides admission. It is safe for
// concurrent use and keeps no state but its counters.
type DownstreamAdmission struct {
	h    *Host
	opts DownstreamAdmissionOptions

	enqueued atomic.Uint64
	failed   atomic.Uint64
}

// NewDownstreamAdmission returns the downstream handler of a webhook
// replica on h.
func NewDownstreamAdmission(h *Host, opts DownstreamAdmissionOptions) *DownstreamAdmission {
	return &DownstreamAdmission{h: h, opts: opts}
}

// Handle writes the UpdateRequests of an admission request with the
// policies of set (the set serving the request) and returns them, Pending.
// It ignores CREATE and CONNECT, dry-run requests, subresources, the
// controller's own requests (ControllerUsername) and objects without the
// tracking labels: it returns nil, nil for them. An error means that some
// request could not be written (counted in Failed, and a PolicyError
// event on its policy, as upstream's webhook records); the caller logs it
// and admits the request all the same.
func (d *DownstreamAdmission) Handle(ctx context.Context, set *engine.PolicySet, req *engine.Request) ([]*api.UpdateRequest, error) {
	if req == nil || set == nil {
		return nil, nil
	}
	if req.DryRun || req.SubResource != "" || (req.Operation != api.Update && req.Operation != api.Delete) {
		return nil, nil
	}
	if d.opts.ControllerUsername != "" && req.UserInfo.Username == d.opts.ControllerUsername {
		return nil, nil
	}
	old, cur := req.OldObject, req.Object
	if old == nil {
		return nil, nil
	}
	if req.Operation == api.Delete {
		cur = nil
	}
	var handle func(*generate.Controller) ([]*api.UpdateRequest, error)
	labels := labelsOf(old)
	_, source := labels[generate.LabelCloneSource]
	switch {
	case labels[generate.LabelManagedBy] == generate.ManagedByKyverno && labels[generate.LabelPolicyName] != "":
		handle = func(g *generate.Controller) ([]*api.UpdateRequest, error) { return g.OnDownstreamChange(ctx, old, cur) }
	case source:
		handle = func(g *generate.Controller) ([]*api.UpdateRequest, error) { return g.OnSourceChange(ctx, old, cur) }
	default:
		return nil, nil
	}
	// a controller per request on the request's set: no policy state to
	// keep in step with the PolicySource; it only builds and enqueues
	g := generate.NewController(set, d.h.client, generate.WithQueue(d.h.queue))
	urs, err := handle(g)
	if err != nil {
		d.failed.Add(1)
		resource := cur
		if resource == nil {
			resource = old
		}
		d.h.events.add(queueFailedEvents(urs, set.Policies(), resource, true)...)
		return urs, errors.Join(errors.New("cluster: downstream admission"), err)
	}
	d.enqueued.Add(uint64(len(urs)))
	return urs, nil
}

// Enqueued returns the number of UpdateRequests Handle wrote.
func (d *DownstreamAdmission) Enqueued() uint64 { return d.enqueued.Load() }

// Failed returns the number of admission requests whose UpdateRequests
// could not all be built or written.
func (d *DownstreamAdmission) Failed() uint64 { return d.failed.Load() }

// labelsOf returns an object's labels whose values are strings.
func labelsOf(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(l))
	for k, v := range l {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
