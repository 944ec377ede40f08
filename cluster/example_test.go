package cluster_test

import (
	"context"
	"log"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
)

// A replica that serves admission requests and, while it holds the Lease,
// runs the controller.
func Example() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := cluster.New(cfg, cluster.Options{Namespace: "gavel"})
	if err != nil {
		log.Fatal(err)
	}
	policies, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	ctrl := cluster.NewController(h, policies, cluster.ControllerOptions{})
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	go func() {
		_ = h.RunLeader(ctx, cluster.LeaderOptions{Name: "gavel-controller", Identity: os.Getenv("POD_NAME")}, ctrl.Run)
	}()

	// in the webhook's handler: one set for the whole request
	set := policies.Set()
	resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "default"},
	}})
	if err == nil && !resp.Blocked() {
		_, _ = set.Generate(ctx, &engine.Request{Operation: api.Create, Object: resp.Resource}) // writes UpdateRequests
	}
}

// A PolicySource reports each change of the serving set.
func ExamplePolicySource_Subscribe() {
	var h *cluster.Host // from cluster.New
	src, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{})
	if err != nil {
		return
	}
	src.Subscribe(func(c cluster.PolicyChange) {
		if c.New == nil {
			log.Printf("policy %s deleted, %d serving", c.Old.Key(), len(c.Set.Policies()))
			return
		}
		log.Printf("policy %s compiled, %d serving", c.New.Key(), len(c.Set.Policies()))
	})
}

// An Authorizer answers CEL's authorizer variable for an engine built
// without a Host; refusals are asked again each time.
func ExampleNewAuthorizer() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	authz := cluster.NewAuthorizer(kube.AuthorizationV1().SubjectAccessReviews(), cluster.AuthorizerOptions{DenyTTL: -1})
	if _, err := engine.New(engine.WithAuthorizer(authz)); err != nil {
		log.Fatal(err)
	}
}

// The webhook fills the roles bound to the requesting user, which match
// and exclude blocks (roles, clusterRoles) and request.clusterRoles read.
func ExampleRoleBindings() {
	var h *cluster.Host                 // from cluster.New
	roles := cluster.NewRoleBindings(h) // before h.Start
	if err := h.Start(context.Background()); err != nil {
		return
	}
	req := &engine.Request{Operation: api.Create, Namespace: "default",
		UserInfo: api.UserInfoData{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins"}}}
	var err error
	if req.Roles, req.ClusterRoles, err = roles.Of(req.Namespace, req.UserInfo); err != nil {
		log.Print(err)
	}
}

// A Controller runs its Scheduler on the leader; a host may run one on its
// own (on its leader only): it runs the deleting policies when they are
// due, until ctx ends.
func ExampleScheduler() {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		log.Fatal(err)
	}
	h, err := cluster.New(cfg, cluster.Options{Namespace: "gavel"})
	if err != nil {
		log.Fatal(err)
	}
	src, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{})
	if err != nil {
		log.Fatal(err)
	}
	sched := cluster.NewScheduler(h, src, cluster.SchedulerOptions{MaxWait: 30 * time.Second})
	if err := h.Start(ctx); err != nil || !src.WaitForSync(ctx) {
		log.Fatal(err)
	}
	_ = h.RunLeader(ctx, cluster.LeaderOptions{Name: "gavel-cleanup", Identity: os.Getenv("POD_NAME")}, sched.Run)
}
