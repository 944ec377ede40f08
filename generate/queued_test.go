package generate_test

import (
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/generate"
)

// With WithQueue, the handlers of object events enqueue their requests,
// Pending, and change nothing until the requests are processed.
func TestWithQueueDefersObjectEvents(t *testing.T) {
	tests := []struct {
		name  string
		clone bool
		// event changes the cluster and calls the handler
		event func(t *testing.T, e *syncEnv, ctrl *generate.Controller) ([]*api.UpdateRequest, error)
		// before and after are the downstream's data before and after the
		// queued requests are processed (nil: absent)
		before, after map[string]any
	}{
		{
			name: "modified downstream",
			event: func(t *testing.T, e *syncEnv, ctrl *generate.Controller) ([]*api.UpdateRequest, error) {
				ds := e.downstream()
				mod := withData(ds, tamperedData)
				e.update(mod)
				return ctrl.OnDownstreamChange(e.ctx, ds, mod)
			},
			before: tamperedData, after: origData,
		},
		{
			name: "deleted downstream",
			event: func(t *testing.T, e *syncEnv, ctrl *generate.Controller) ([]*api.UpdateRequest, error) {
				ds := e.downstream()
				e.delete(ds)
				return ctrl.OnDownstreamChange(e.ctx, ds, nil)
			},
			before: nil, after: origData,
		},
		{
			name: "modified clone source", clone: true,
			event: func(t *testing.T, e *syncEnv, ctrl *generate.Controller) ([]*api.UpdateRequest, error) {
				old := e.get("v1", "Secret", "default", "regcred")
				cur := withData(old, newSecret)
				e.update(cur)
				return ctrl.OnSourceChange(e.ctx, old, cur)
			},
			before: origSecret, after: newSecret,
		},
		{
			name: "deleted clone source", clone: true,
			event: func(t *testing.T, e *syncEnv, ctrl *generate.Controller) ([]*api.UpdateRequest, error) {
				old := e.get("v1", "Secret", "default", "regcred")
				e.delete(old)
				return ctrl.OnSourceChange(e.ctx, old, nil)
			},
			before: origSecret, after: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSyncEnv(t, tt.clone, true, false)
			q := generate.NewMemoryQueue(8)
			queued := generate.NewController(e.ctrl.Policies(), e.cluster, generate.WithQueue(q))
			urs, err := tt.event(t, e, queued)
			if err != nil {
				t.Fatal(err)
			}
			if len(urs) != 1 || q.Len() != 1 {
				t.Fatalf("%d requests returned, %d queued; want 1 and 1", len(urs), q.Len())
			}
			if urs[0].Status.State != api.URPending {
				t.Errorf("returned request is %s, want Pending", urs[0].Status.State)
			}
			if got := dataOf(e.downstream()); !reflect.DeepEqual(got, tt.before) {
				t.Errorf("before processing: downstream data %v, want %v", got, tt.before)
			}
			ur, err := q.Next(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.ctrl.Process(e.ctx, ur); err != nil || ur.Status.State != api.URCompleted {
				t.Fatalf("process: %v, %s %s", err, ur.Status.State, ur.Status.Message)
			}
			if got := dataOf(e.downstream()); !reflect.DeepEqual(got, tt.after) {
				t.Errorf("after processing: downstream data %v, want %v", got, tt.after)
			}
		})
	}
}

// A full queue makes the handler fail with the queue's error; nothing is
// processed behind its back.
func TestWithQueueReportsEnqueueErrors(t *testing.T) {
	e := newSyncEnv(t, false, true, false)
	q := generate.NewMemoryQueue(1)
	q.Close()
	queued := generate.NewController(e.ctrl.Policies(), e.cluster, generate.WithQueue(q))
	ds := e.downstream()
	e.delete(ds)
	urs, err := queued.OnDownstreamChange(e.ctx, ds, nil)
	if err == nil {
		t.Fatal("no error from a closed queue")
	}
	// the refused request is returned Failed with the queue's error
	if len(urs) != 1 || urs[0].Status.State != api.URFailed || urs[0].Status.Message != generate.ErrQueueClosed.Error() {
		t.Fatalf("requests %+v, want one Failed with %q", urs, generate.ErrQueueClosed)
	}
	if e.downstream() != nil {
		t.Error("the downstream was recreated although the request could not be queued")
	}
}
