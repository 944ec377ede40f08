package cluster

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
)

// sarReactor answers SubjectAccessReviews: alice may create pods in
// "team-a" and read /healthz; bob is denied; carol gets both answers;
// "broken" makes the review fail; anyone else gets no opinion. It
// records the reviews.
type sarReactor struct {
	mu      sync.Mutex
	reviews []authorizationv1.SubjectAccessReviewSpec
}

func (r *sarReactor) react(a k8stesting.Action) (bool, runtime.Object, error) {
	sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
	r.mu.Lock()
	r.reviews = append(r.reviews, sar.Spec)
	r.mu.Unlock()
	out := sar.DeepCopy()
	s := sar.Spec
	switch {
	case s.User == "broken":
		return true, nil, errors.New("the authorizer is down")
	case s.User == "alice" && s.ResourceAttributes != nil && s.ResourceAttributes.Resource == "pods" &&
		s.ResourceAttributes.Verb == "create" && s.ResourceAttributes.Namespace == "team-a":
		out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed by RoleBinding"}
	case s.User == "alice" && s.NonResourceAttributes != nil && s.NonResourceAttributes.Path == "/healthz":
		out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	case s.User == "bob":
		out.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "bob is denied"}
	case s.User == "carol":
		out.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}
	}
	return true, out, nil
}

func (r *sarReactor) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reviews)
}

func fakeAuthorizer(opts AuthorizerOptions) (*Authorizer, *sarReactor) {
	kube := kubefake.NewClientset()
	r := &sarReactor{}
	kube.PrependReactor("create", "subjectaccessreviews", r.react)
	return NewAuthorizer(kube.AuthorizationV1().SubjectAccessReviews(), opts), r
}

func TestAuthorizerReviews(t *testing.T) {
	a, r := fakeAuthorizer(AuthorizerOptions{AllowTTL: -1, DenyTTL: -1})
	ctx := t.Context()
	alice := cel.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string][]string{"scopes": {"x", "y"}}}
	podCheck := engine.AuthorizationCheck{User: alice, Verb: "create", ResourceRequest: true,
		APIVersion: "*", Resource: "pods", Namespace: "team-a", Name: "web"}

	tests := []struct {
		name    string
		check   engine.AuthorizationCheck
		allowed bool
		reason  string
		err     bool
		spec    authorizationv1.SubjectAccessReviewSpec
	}{
		{name: "resource allowed", check: podCheck, allowed: true, reason: "RBAC: allowed by RoleBinding",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
				Extra: map[string]authorizationv1.ExtraValue{"scopes": {"x", "y"}},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "create",
					Version: "*", Resource: "pods", Name: "web"}}},
		{name: "path allowed", check: engine.AuthorizationCheck{User: alice, Verb: "get", Path: "/healthz"}, allowed: true,
			spec: authorizationv1.SubjectAccessReviewSpec{User: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
				Extra:                 map[string]authorizationv1.ExtraValue{"scopes": {"x", "y"}},
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}}},
		{name: "selectors", check: engine.AuthorizationCheck{User: user("dave"), Verb: "list", ResourceRequest: true, Resource: "pods",
			FieldSelector: "metadata.name!=x,spec.nodeName=n1", LabelSelector: "app in (a,b),!tmp,tier"},
			spec: authorizationv1.SubjectAccessReviewSpec{User: "dave", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
				FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
					{Key: "metadata.name", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"x"}},
					{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}}}},
				LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
					{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
					{Key: "tier", Operator: metav1.LabelSelectorOpExists},
					{Key: "tmp", Operator: metav1.LabelSelectorOpDoesNotExist}}}}}},
		{name: "selectors that do not parse", check: engine.AuthorizationCheck{User: user("dave"), Verb: "list", ResourceRequest: true, Resource: "pods",
			FieldSelector: "spec.nodeName in (x)", LabelSelector: "app in ("},
			spec: authorizationv1.SubjectAccessReviewSpec{User: "dave", ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}}},
		{name: "no user", check: engine.AuthorizationCheck{Verb: "get", ResourceRequest: true, Resource: "pods"}, err: true},
		{name: "groups only", check: engine.AuthorizationCheck{User: cel.UserInfo{Groups: []string{"ops"}}, Verb: "get", ResourceRequest: true, Resource: "pods"},
			spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"ops"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}}},
		{name: "denied", check: engine.AuthorizationCheck{User: user("bob"), Verb: "create", ResourceRequest: true, Resource: "pods"},
			reason: "bob is denied",
			spec: authorizationv1.SubjectAccessReviewSpec{User: "bob",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods"}}},
		{name: "no opinion", check: engine.AuthorizationCheck{User: user("dave"), Verb: "get", ResourceRequest: true,
			APIGroup: "apps", Resource: "deployments", Subresource: "scale"},
			spec: authorizationv1.SubjectAccessReviewSpec{User: "dave",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale"}}},
		{name: "allowed and denied", check: engine.AuthorizationCheck{User: user("carol"), Verb: "get", Path: "/"}, err: true,
			spec: authorizationv1.SubjectAccessReviewSpec{User: "carol", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}},
		{name: "review fails", check: engine.AuthorizationCheck{User: user("broken"), Verb: "get", Path: "/"}, err: true,
			spec: authorizationv1.SubjectAccessReviewSpec{User: "broken", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/", Verb: "get"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := r.count()
			ok, reason, err := a.Authorize(ctx, tt.check)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if ok != tt.allowed || (!tt.err && reason != tt.reason) {
				t.Errorf("= %v %q, want %v %q", ok, reason, tt.allowed, tt.reason)
			}
			if tt.spec.User == "" && tt.spec.Groups == nil {
				// no user: no review is made
				if r.count() != before {
					t.Errorf("a review was made for a check without a user")
				}
				return
			}
			if r.count() != before+1 {
				t.Fatalf("%d reviews made, want 1", r.count()-before)
			}
			if got := r.reviews[before]; !reflect.DeepEqual(got, tt.spec) {
				t.Errorf("review\n%+v\nwant\n%+v", got, tt.spec)
			}
		})
	}
}

func user(name string) cel.UserInfo { return cel.UserInfo{Username: name} }

func TestAuthorizerCachesDecisions(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	a, r := fakeAuthorizer(AuthorizerOptions{AllowTTL: 10 * time.Second, DenyTTL: 2 * time.Second, Clock: clock})
	ctx := t.Context()
	allowed := engine.AuthorizationCheck{User: user("alice"), Verb: "create", ResourceRequest: true, Resource: "pods", Namespace: "team-a"}
	denied := engine.AuthorizationCheck{User: user("bob"), Verb: "create", ResourceRequest: true, Resource: "pods"}
	broken := engine.AuthorizationCheck{User: user("broken"), Verb: "get", Path: "/"}
	ask := func(c engine.AuthorizationCheck, want bool) {
		t.Helper()
		ok, _, err := a.Authorize(ctx, c)
		if err != nil || ok != want {
			t.Fatalf("%s: %v, %v; want %v", c.User.Username, ok, err, want)
		}
	}
	ask(allowed, true)
	ask(denied, false)
	ask(allowed, true)
	ask(denied, false)
	if n := r.count(); n != 2 {
		t.Fatalf("%d reviews, want 2 (decisions remembered)", n)
	}
	// another user, group or attribute is another review
	other := allowed
	other.User.Groups = []string{"g"}
	ask(other, true)
	if n := r.count(); n != 3 {
		t.Fatalf("%d reviews, want 3", n)
	}
	advance(3 * time.Second) // the denial expired, not the allowance
	ask(allowed, true)
	ask(denied, false)
	if n := r.count(); n != 4 {
		t.Fatalf("%d reviews, want 4 (the denial asked again)", n)
	}
	advance(10 * time.Second)
	ask(allowed, true)
	if n := r.count(); n != 5 {
		t.Fatalf("%d reviews, want 5 (the allowance asked again)", n)
	}
	// errors are not remembered
	for range 2 {
		if _, _, err := a.Authorize(ctx, broken); err == nil {
			t.Fatal("no error")
		}
	}
	if n := r.count(); n != 7 {
		t.Fatalf("%d reviews, want 7 (errors asked again)", n)
	}
}

// slowReviews answers no review before its context ends.
type slowReviews struct {
	authorizationclient.SubjectAccessReviewInterface
}

func (slowReviews) Create(ctx context.Context, _ *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestAuthorizerDeadlines(t *testing.T) {
	check := engine.AuthorizationCheck{User: user("alice"), Verb: "get", Path: "/"}
	// the caller's deadline
	a := NewAuthorizer(slowReviews{}, AuthorizerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, _, err := a.Authorize(ctx, check); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	// the Authorizer's own timeout
	a = NewAuthorizer(slowReviews{}, AuthorizerOptions{Timeout: 20 * time.Millisecond})
	if _, _, err := a.Authorize(t.Context(), check); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %s", d)
	}
}
