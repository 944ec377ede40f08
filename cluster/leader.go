package cluster

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderOptions configure RunLeader. The durations default to client-go's
// usual 15s, 10s and 2s.
type LeaderOptions struct {
	// Name of the coordination.k8s.io Lease in the host's namespace.
	// Required.
	Name string
	// Identity of this candidate, unique among the replicas (the Pod's
	// name). Required.
	Identity      string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// OnNewLeader is called with the identity of each new leader.
	OnNewLeader func(identity string)
}

// RunLeader campaigns for the Lease until ctx is done and calls run with a
// context that ends when the leadership is lost (or ctx is done). A
// replica that loses the lease waits for run to return, then campaigns
// again. Only one replica runs run at a time, as long as run honours its
// context (a leader that stops renewing stops within RenewDeadline). The
// lease is released when ctx ends, so that another replica takes over at
// once.
func (h *Host) RunLeader(ctx context.Context, opts LeaderOptions, run func(ctx context.Context)) error {
	if opts.Name == "" || opts.Identity == "" {
		return errors.New("cluster: LeaderOptions.Name and Identity are required")
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.RenewDeadline <= 0 {
		opts.RenewDeadline = 10 * time.Second
	}
	if opts.RetryPeriod <= 0 {
		opts.RetryPeriod = 2 * time.Second
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: h.opts.Namespace, Name: opts.Name},
		Client:     h.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: opts.Identity},
	}
	// client-go starts OnStartedLeading in a goroutine of its own and
	// does not wait for it: the callback only hands the leader's context
	// over, and run runs here, so that it is over before RunLeader
	// campaigns again or returns
	for ctx.Err() == nil {
		started := make(chan context.Context)
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   opts.LeaseDuration,
			RenewDeadline:   opts.RenewDeadline,
			RetryPeriod:     opts.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            opts.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					select {
					case started <- lctx:
					case <-lctx.Done():
					}
				},
				OnStoppedLeading: func() {},
				OnNewLeader: func(id string) {
					if opts.OnNewLeader != nil {
						opts.OnNewLeader(id)
					}
				},
			},
		})
		if err != nil {
			return err
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			le.Run(ctx)
		}()
		select {
		case lctx := <-started:
			h.log.Info("leading", "lease", opts.Name, "identity", opts.Identity)
			run(lctx)
			<-done
		case <-done:
		}
	}
	return ctx.Err()
}
