package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/gavelpolicy/gavel/engine"
)

// AuthorizerOptions configure an Authorizer. The defaults are those of
// the API server's delegating authorizer (k8s.io/apiserver's
// DelegatingAuthorizationOptions), the SubjectAccessReview client of
// aggregated API servers, which ask the same question on behalf of
// another component's users.
type AuthorizerOptions struct {
	// AllowTTL and DenyTTL are how long an allowing and a refusing
	// decision are remembered (default 10s each; negative: not at all).
	// Errors are never remembered.
	AllowTTL, DenyTTL time.Duration
	// Timeout bounds each SubjectAccessReview (default 10s), within the
	// caller's deadline.
	Timeout time.Duration
	// CacheSize bounds the remembered decisions (default 8192, least
	// recently used dropped first).
	CacheSize int
	// Clock is the cache's clock (default time.Now).
	Clock func() time.Time
}

// Authorizer is the engine.Authorizer of CEL expressions (the authorizer
// variable: authorizer.group('apps').resource('deployments')
// .namespace('ns').check('create'), authorizer.path('/healthz')
// .check('get'), authorizer.requestResource...) on the API server's
// SubjectAccessReviews (authorization.k8s.io/v1), as the API server's
// webhook and delegating authorizers build them: the requesting user
// with its UID, groups and extra; the resource attributes of a resource
// check (verb, group, the version the library asks, "*", resource,
// subresource, namespace, name, field and label selectors as
// requirements) or the path and verb of a non-resource check. A review
// that allows answers allowed; one that denies or has no opinion answers
// not allowed, with the authorizer's reason; a review that both allows
// and denies, or one that cannot be made, is an error (the expression's
// decision errored(), not allowed()).
//
// Decisions are remembered briefly, keyed by the whole review, as the
// delegating authorizer does (the API server's own ValidatingAdmission
// Policies remember them for one admission request). A check without a
// user or groups (a background scan's) is an error: the API server
// rejects such a review. An Authorizer is safe for concurrent use.
type Authorizer struct {
	sar   authorizationclient.SubjectAccessReviewInterface
	opts  AuthorizerOptions
	cache *utilcache.LRUExpireCache
}

var _ engine.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns an Authorizer on sar (a clientset's
// AuthorizationV1().SubjectAccessReviews()).
func NewAuthorizer(sar authorizationclient.SubjectAccessReviewInterface, opts AuthorizerOptions) *Authorizer {
	if opts.AllowTTL == 0 {
		opts.AllowTTL = 10 * time.Second
	}
	if opts.DenyTTL == 0 {
		opts.DenyTTL = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 8192
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Authorizer{sar: sar, opts: opts, cache: utilcache.NewLRUExpireCacheWithClock(opts.CacheSize, clockFunc(opts.Clock))}
}

type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// maxCachedAttrs bounds the size of the attributes of a review that is
// remembered (the webhook authorizer's bound): an expression may build
// them from the request, and large ones would crowd the cache.
const maxCachedAttrs = 10000

// Authorize implements engine.Authorizer with a SubjectAccessReview.
func (a *Authorizer) Authorize(ctx context.Context, c engine.AuthorizationCheck) (bool, string, error) {
	if c.User.Username == "" && len(c.User.Groups) == 0 {
		return false, "", errors.New("cluster: authorizer: no user to check (the request has no user info)")
	}
	spec := reviewSpec(c)
	key, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("cluster: authorizer: %w", err)
	}
	if v, ok := a.cache.Get(string(key)); ok {
		st := v.(authorizationv1.SubjectAccessReviewStatus)
		return st.Allowed, st.Reason, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	out, err := a.sar.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("cluster: subject access review: %w", err)
	}
	st := out.Status
	if st.Allowed && st.Denied {
		return false, st.Reason, errors.New("cluster: subject access review returned both allow and deny response")
	}
	if cacheable(c) {
		if st.Allowed && a.opts.AllowTTL > 0 {
			a.cache.Add(string(key), st, a.opts.AllowTTL)
		} else if !st.Allowed && a.opts.DenyTTL > 0 {
			a.cache.Add(string(key), st, a.opts.DenyTTL)
		}
	}
	return st.Allowed, st.Reason, nil
}

// reviewSpec is the review of a check, as the API server's webhook
// authorizer writes it from authorization attributes.
func reviewSpec(c engine.AuthorizationCheck) authorizationv1.SubjectAccessReviewSpec {
	spec := authorizationv1.SubjectAccessReviewSpec{User: c.User.Username, UID: c.User.UID, Groups: c.User.Groups}
	if len(c.User.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(c.User.Extra))
		for k, v := range c.User.Extra {
			spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	if c.ResourceRequest {
		ra := &authorizationv1.ResourceAttributes{
			Namespace: c.Namespace, Verb: c.Verb, Group: c.APIGroup, Version: c.APIVersion,
			Resource: c.Resource, Subresource: c.Subresource, Name: c.Name,
		}
		if r := fieldRequirements(c.FieldSelector); len(r) > 0 {
			ra.FieldSelector = &authorizationv1.FieldSelectorAttributes{Requirements: r}
		}
		if r := labelRequirements(c.LabelSelector); len(r) > 0 {
			ra.LabelSelector = &authorizationv1.LabelSelectorAttributes{Requirements: r}
		}
		spec.ResourceAttributes = ra
	} else {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: c.Path, Verb: c.Verb}
	}
	return spec
}

// fieldRequirements are a check's field selector as the webhook
// authorizer sends it: equality as In, inequality as NotIn. Selectors
// only narrow a check, so one that does not parse is left out (the
// broader check is asked).
func fieldRequirements(sel string) []metav1.FieldSelectorRequirement {
	if sel == "" {
		return nil
	}
	s, err := fields.ParseSelector(sel)
	if err != nil {
		return nil
	}
	var out []metav1.FieldSelectorRequirement
	for _, r := range s.Requirements() {
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.In:
			out = append(out, metav1.FieldSelectorRequirement{Key: r.Field, Operator: metav1.FieldSelectorOpIn, Values: []string{r.Value}})
		case selection.NotEquals, selection.NotIn:
			out = append(out, metav1.FieldSelectorRequirement{Key: r.Field, Operator: metav1.FieldSelectorOpNotIn, Values: []string{r.Value}})
		}
	}
	return out
}

// labelRequirements are a check's label selector as the webhook
// authorizer sends it.
func labelRequirements(sel string) []metav1.LabelSelectorRequirement {
	if sel == "" {
		return nil
	}
	reqs, err := labels.ParseToRequirements(sel)
	if err != nil {
		return nil
	}
	var out []metav1.LabelSelectorRequirement
	for _, r := range reqs {
		lr := metav1.LabelSelectorRequirement{Key: r.Key()}
		if v := r.ValuesUnsorted(); len(v) > 0 {
			lr.Values = v
		}
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			lr.Operator = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			lr.Operator = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			lr.Operator = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			lr.Operator = metav1.LabelSelectorOpDoesNotExist
		default:
			continue
		}
		out = append(out, lr)
	}
	return out
}

func cacheable(c engine.AuthorizationCheck) bool {
	n := len(c.Namespace) + len(c.Verb) + len(c.APIGroup) + len(c.APIVersion) +
		len(c.Resource) + len(c.Subresource) + len(c.Name) + len(c.Path) +
		len(c.FieldSelector) + len(c.LabelSelector)
	return n < maxCachedAttrs
}
