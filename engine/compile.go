package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/autogen"
	"github.com/gavelpolicy/gavel/internal/match"
)

// Policy is a compiled policy of any kind: immutable and safe for
// concurrent use.
type Policy struct {
	src           api.PolicyObject
	kind          string
	key           string
	annotations   map[string]string
	background    bool
	admission     bool
	applyOne      bool
	failureAction api.ValidationFailureAction
	overrides     []override
	// action and actionOverrides are what failureActionFor starts from:
	// the first validate rule's action and overrides, else the policy's
	action          api.ValidationFailureAction
	actionOverrides []override
	emitWarning     bool
	// skipBackground: the admission requests of the background controller
	// (Request.ControllerWrite) are not evaluated (MutatingPolicy and
	// GeneratingPolicy spec.evaluation...skipBackgroundRequests)
	skipBackground bool
	rules          []*rule
	kinds          []match.KindSelector // union of rule kinds, for the index
	// types holds one bit per rule type present (see typeBit)
	types uint8
	// failurePolicy is how a webhook treats the policy's errors
	failurePolicy api.FailurePolicyType
	// timeout is the webhook timeout in seconds (0: not set)
	timeout int32
	// body evaluates a policy of a CEL kind (kinds.go); nil for
	// ClusterPolicy and Policy, whose rules are evaluated
	body kindBody
	// variants are a CEL kind and its Pod controller variants (Variants)
	variants []Variant
}

// Source returns the policy as it was given to Compile.
func (p *Policy) Source() api.PolicyObject { return p.src }

// Key returns "name", or "namespace/name" for a namespaced kind.
func (p *Policy) Key() string { return p.key }

// Background reports whether the policy applies in background scans.
func (p *Policy) Background() bool { return p.background }

// Admission reports whether the policy applies to admission requests.
func (p *Policy) Admission() bool { return p.admission }

// FailurePolicy returns how a webhook treats errors of this policy:
// api.Fail (the default) or api.Ignore, from
// spec.webhookConfiguration.failurePolicy or the deprecated
// spec.failurePolicy, or the spec.failurePolicy of a CEL kind (see
// Response.Blocked).
func (p *Policy) FailurePolicy() api.FailurePolicyType { return p.failurePolicy }

// TimeoutSeconds returns the policy's webhook timeout
// (spec.webhookConfiguration.timeoutSeconds, or the deprecated
// spec.webhookTimeoutSeconds of a ClusterPolicy or Policy) and whether it
// is set. The engine does not enforce it; an admission host does.
func (p *Policy) TimeoutSeconds() (int32, bool) { return p.timeout, p.timeout != 0 }

// classicFailurePolicy is FailurePolicy of a ClusterPolicy or Policy.
func classicFailurePolicy(spec *api.Spec) api.FailurePolicyType {
	if wc := spec.WebhookConfiguration; wc != nil && wc.FailurePolicy != nil {
		return *wc.FailurePolicy
	}
	if spec.FailurePolicy != nil {
		return *spec.FailurePolicy
	}
	return api.Fail
}

// classicTimeout is TimeoutSeconds of a ClusterPolicy or Policy.
func classicTimeout(spec *api.Spec) int32 {
	if wc := spec.WebhookConfiguration; wc != nil && wc.TimeoutSeconds != nil {
		return *wc.TimeoutSeconds
	}
	if spec.WebhookTimeoutSeconds != nil {
		return *spec.WebhookTimeoutSeconds
	}
	return 0
}

func webhookFailurePolicy(spec *api.Spec) *api.FailurePolicyType {
	if spec.WebhookConfiguration == nil {
		return nil
	}
	return spec.WebhookConfiguration.FailurePolicy
}

// Rules returns the compiled policy's rules (autogen rules included) as
// api.Rule values; callers must not modify them.
func (p *Policy) Rules() []*api.Rule {
	out := make([]*api.Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = r.src
	}
	return out
}

// Variant is a policy of a CEL kind, or one of the Pod controller
// variants the engine generates for it (upstream's
// status.autogen.configs): what a host that registers webhooks for the
// policy, or lists and watches its resources, needs of it.
type Variant struct {
	// Config names a Pod controller variant, as upstream does ("defaults",
	// "cronjobs"); it is empty for the policy itself.
	Config string
	// Kinds are the Pod controllers a variant applies to, sorted; nil for
	// the policy itself.
	Kinds []schema.GroupVersionKind
	// MatchConstraints and MatchConditions select the requests the
	// variant applies to (a variant's name the controllers and read
	// their Pod template).
	MatchConstraints *admissionregistrationv1.MatchResources
	MatchConditions  []admissionregistrationv1.MatchCondition
}

// Variants returns a policy of a CEL kind (ValidatingPolicy,
// ImageValidatingPolicy, MutatingPolicy, GeneratingPolicy,
// DeletingPolicy, their namespaced kinds, and the admission policies)
// followed by its Pod controller variants (a ValidatingPolicy's, an
// ImageValidatingPolicy's, a MutatingPolicy's). It is nil for a policy in
// JSON evaluation mode, a binding, and the kinds of rules (Rules gives
// their match blocks). Callers must not modify them.
func (p *Policy) Variants() []Variant {
	return p.variants
}

// ownVariant is the Variant of a policy itself.
func ownVariant(m *admissionregistrationv1.MatchResources, conds []admissionregistrationv1.MatchCondition) []Variant {
	return []Variant{{MatchConstraints: m, MatchConditions: conds}}
}

// autogenVariant is the Variant of a Pod controller variant.
func autogenVariant(config string, targets []autogen.Target, m *admissionregistrationv1.MatchResources, conds []admissionregistrationv1.MatchCondition) Variant {
	kinds := make([]schema.GroupVersionKind, len(targets))
	for i, t := range targets {
		kinds[i] = schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind}
	}
	return Variant{Config: config, Kinds: kinds, MatchConstraints: m, MatchConditions: conds}
}

// HasRuleType reports whether the policy has a rule of the given type.
func (p *Policy) HasRuleType(t RuleType) bool {
	return p.types&typeBit(t) != 0
}

// typeBit is the bit of a rule type in Policy.types.
func typeBit(t RuleType) uint8 {
	switch t {
	case Validation:
		return 1
	case Mutation:
		return 2
	case Generation:
		return 4
	case ImageVerify:
		return 8
	case Deletion:
		return 16
	}
	return 0
}

type override struct {
	action     api.ValidationFailureAction
	namespaces []string
	selector   *labelSelector
}

// CompileError lists the problems of one policy.
type CompileError struct {
	Policy string
	Errs   field.ErrorList
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("policy %s: %s", e.Policy, e.Errs.ToAggregate().Error())
}

// CompilePolicy validates and compiles one policy of any kind gavel
// evaluates: ClusterPolicy, Policy, ValidatingPolicy,
// NamespacedValidatingPolicy, ImageValidatingPolicy,
// NamespacedImageValidatingPolicy, MutatingPolicy, NamespacedMutatingPolicy,
// GeneratingPolicy, NamespacedGeneratingPolicy, DeletingPolicy,
// NamespacedDeletingPolicy, CleanupPolicy, ClusterCleanupPolicy,
// ValidatingAdmissionPolicy and MutatingAdmissionPolicy with their bindings
// (a binding compiled on its own binds the policy of its kind and name
// when both are in a PolicySet). Invalid policies are a *CompileError.
func (e *Engine) CompilePolicy(p api.PolicyObject) (*Policy, error) {
	if p == nil || isNil(p) {
		return nil, &CompileError{Errs: field.ErrorList{field.Required(nil, "no policy")}}
	}
	if cp, ok := p.(api.ClassicPolicy); ok {
		return e.compileClassic(cp)
	}
	return e.compileKind(p)
}

// compileClassic compiles a ClusterPolicy or a Policy.
func (e *Engine) compileClassic(p api.ClassicPolicy) (*Policy, error) {
	spec := p.GetSpec()
	cp := &Policy{
		src:           p,
		kind:          api.KindOf(p),
		failurePolicy: classicFailurePolicy(spec),
		timeout:       classicTimeout(spec),
		key:           policykey.Key(p),
		annotations:   p.GetAnnotations(),
		background:    spec.BackgroundEnabled(),
		admission:     spec.AdmissionEnabled(),
		applyOne:      spec.GetApplyRules() == api.ApplyOne,
		failureAction: spec.ValidationFailureAction,
		emitWarning:   spec.EmitWarning != nil && *spec.EmitWarning,
	}
	specPath := field.NewPath("spec")
	var errs field.ErrorList
	if a := spec.ValidationFailureAction; a != "" && !validFailureAction(a) {
		errs = append(errs, field.NotSupported(specPath.Child("validationFailureAction"), a, []string{"Audit", "Enforce"}))
	}
	for _, fp := range []struct {
		v    *api.FailurePolicyType
		path *field.Path
	}{{spec.FailurePolicy, specPath.Child("failurePolicy")}, {webhookFailurePolicy(spec), specPath.Child("webhookConfiguration", "failurePolicy")}} {
		if fp.v != nil && *fp.v != api.Fail && *fp.v != api.Ignore {
			errs = append(errs, field.NotSupported(fp.path, *fp.v, []string{string(api.Fail), string(api.Ignore)}))
		}
	}
	if spec.ApplyRules != nil && *spec.ApplyRules != api.ApplyAll && *spec.ApplyRules != api.ApplyOne {
		errs = append(errs, field.NotSupported(specPath.Child("applyRules"), *spec.ApplyRules, []string{"All", "One"}))
	}
	if api.IsNamespaced(p) && len(spec.ValidationFailureActionOverrides) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("validationFailureActionOverrides"), "Use of validationFailureActionOverrides is supported only with ClusterPolicy"))
	}
	ovs, oerrs := compileOverrides(spec.ValidationFailureActionOverrides, specPath.Child("validationFailureActionOverrides"))
	cp.overrides = ovs
	errs = append(errs, oerrs...)
	if len(spec.Rules) == 0 {
		errs = append(errs, field.Required(specPath.Child("rules"), "a policy needs at least one rule"))
	}
	names := map[string]bool{}
	for i := range spec.Rules {
		r := &spec.Rules[i]
		path := specPath.Child("rules").Index(i)
		if names[r.Name] {
			errs = append(errs, field.Invalid(path.Child("name"), r.Name, fmt.Sprintf("Duplicate rule name: '%s'", r.Name)))
		}
		names[r.Name] = true
		errs = append(errs, validateRuleShape(r, path)...)
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	rules := autogen.Rules(p)
	failed := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		path := specPath.Child("rules").Index(originalIndex(spec, r.Name, i))
		cr, rerrs := e.compileRule(cp, r, path)
		if orig, ok := autogen.Original(r.Name); ok && failed[orig] {
			// the rule it was generated from already reported these
			// problems at the same path
			rerrs = nil
		}
		if len(rerrs) > 0 {
			failed[r.Name] = true
		}
		errs = append(errs, rerrs...)
		if cr != nil {
			cp.rules = append(cp.rules, cr)
		}
	}
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	for _, r := range cp.rules {
		cp.kinds = append(cp.kinds, r.match.Kinds()...)
		cp.types |= typeBit(r.typ)
	}
	cp.action, cp.actionOverrides = cp.baseFailureAction()
	return cp, nil
}

// isNil reports whether p is a nil pointer in an interface.
func isNil(p api.PolicyObject) bool {
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// originalIndex finds the position of a rule (or of the rule an autogen
// rule came from) in the policy, for error paths.
func originalIndex(spec *api.Spec, name string, fallback int) int {
	if orig, ok := autogen.Original(name); ok {
		name = orig
	}
	for i := range spec.Rules {
		if spec.Rules[i].Name == name {
			return i
		}
	}
	return fallback
}

// validateRuleShape checks what upstream checks on the structure of a rule
// before anything is compiled.
func validateRuleShape(r *api.Rule, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), "rule name is required"))
	} else if len(r.Name) > 63 {
		errs = append(errs, field.TooLong(path.Child("name"), r.Name, 63))
	}
	count := 0
	for _, has := range []bool{r.Validation != nil, r.Mutation != nil, r.Generation != nil, len(r.VerifyImages) > 0} {
		if has {
			count++
		}
	}
	switch {
	case count == 0:
		errs = append(errs, field.Invalid(path, r.Name, fmt.Sprintf("No operation defined in the rule '%s'.(supported operations: mutate,validate,generate,verifyImages)", r.Name)))
	case count > 1:
		errs = append(errs, field.Invalid(path, r.Name, fmt.Sprintf("Multiple operations defined in the rule '%s', only one operation (mutate,validate,generate,verifyImages) is allowed per rule", r.Name)))
	}
	if v := r.Validation; v != nil {
		vp := path.Child("validate")
		n := 0
		for _, has := range []bool{v.Pattern != nil, v.AnyPattern != nil, v.Deny != nil, len(v.ForEachValidation) > 0, v.PodSecurity != nil, v.CEL != nil, v.Manifests != nil, v.Assert != nil} {
			if has {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(vp, "", "exactly one of pattern, anyPattern, deny, foreach, podSecurity, cel, manifests or assert must be set"))
		}
		for _, a := range []*api.ValidationFailureAction{v.FailureAction, v.ValidationFailureAction} {
			if a != nil && !validFailureAction(*a) {
				errs = append(errs, field.NotSupported(vp.Child("failureAction"), *a, []string{"Audit", "Enforce"}))
			}
		}
	}
	if m := r.Mutation; m != nil {
		mp := path.Child("mutate")
		n := 0
		for _, has := range []bool{m.PatchStrategicMerge != nil, m.PatchesJSON6902 != "", len(m.ForEachMutation) > 0} {
			if has {
				n++
			}
		}
		if n != 1 {
			errs = append(errs, field.Invalid(mp, "", "exactly one of patchStrategicMerge, patchesJson6902 or foreach must be set"))
		}
	}
	for _, part := range []struct {
		name string
		m    *api.MatchResources
	}{{"match", &r.MatchResources}, {"exclude", r.ExcludeResources}} {
		if part.m == nil {
			continue
		}
		if raw, err := json.Marshal(part.m); err == nil && strings.Contains(string(raw), "{{") {
			errs = append(errs, field.Forbidden(path.Child(part.name), "variables are not allowed in match and exclude"))
		}
	}
	return errs
}

// PolicySet is a compiled, immutable set of policies, indexed by kind.
type PolicySet struct {
	eng      *Engine
	policies []*Policy
	// needsImages is set when a rule reads the images variable.
	needsImages bool
	// mergesObject is set when a mutate rule merges strategic merge
	// patches into the object (see Request.checkMemo).
	mergesObject bool
	// validatePolicies counts the policies with validate (or verifyImages)
	// rules, to size Response.Policies once.
	validatePolicies int
	// maxResults is the largest number of rule results a Validate call
	// of the set produced so far: the capacity the next one starts with.
	maxResults atomic.Int32
	// kinds caches which rules may match a kind (see candidates)
	kinds kindIndex
	// mutatingKinds is set when the set holds policies of CEL kinds that
	// mutate (see mutateKinds)
	mutatingKinds bool
}

// reqState returns a request state for a Validate or Mutate call, reusing
// one the engine's sets released when there is one (a state keeps nothing
// of a set); give it back with putReqState.
func (s *PolicySet) reqState(ctx context.Context, req *Request, object, oldObject map[string]any) *reqState {
	rs, _ := s.eng.states.Get().(*reqState)
	if rs == nil {
		rs = new(reqState)
	}
	return s.eng.initReqState(rs, ctx, req, s.needsImages, object, oldObject)
}

// putReqState releases rs, which nothing refers to any more, for reuse.
func (s *PolicySet) putReqState(rs *reqState) {
	rs.release()
	s.eng.states.Put(rs)
}

// resultsHint is the capacity of a request's result array: the most any
// request produced so far, else def.
func (s *PolicySet) resultsHint(def int) int {
	if n := int(s.maxResults.Load()); n > 0 {
		return n
	}
	return def
}

// noteResults records the number of results of a request and, when the
// result array is mostly unused, moves the results to an array of their
// size: responses are often kept (a CLI run keeps them all).
func (s *PolicySet) noteResults(rs *reqState, resp *Response) {
	n := len(rs.results)
	for {
		m := s.maxResults.Load()
		if int32(n) <= m || s.maxResults.CompareAndSwap(m, int32(n)) {
			break
		}
	}
	if n == 0 || cap(rs.results) <= n+n/4+1 {
		return
	}
	exact := make([]RuleResult, n)
	copy(exact, rs.results)
	off := 0
	for i := range resp.Policies {
		pr := &resp.Policies[i]
		if k := len(pr.Rules); k > 0 {
			pr.Rules = exact[off : off+k : off+k]
			off += k
		}
	}
	rs.results = exact
}

// newPolicySet groups compiled policies; the bindings among them are
// attached to the policies they bind (see attachBindings).
func newPolicySet(e *Engine, policies []*Policy) *PolicySet {
	policies = attachBindings(policies)
	s := &PolicySet{eng: e, policies: policies}
	for _, p := range policies {
		if p.HasRuleType(Validation) || p.HasRuleType(ImageVerify) {
			s.validatePolicies++
		}
		if _, ok := p.body.(mutator); ok {
			s.mutatingKinds = true
		}
		for _, r := range p.rules {
			if r.needsImages {
				s.needsImages = true
			}
			if r.mutate.strategic() {
				s.mergesObject = true
			}
		}
	}
	return s
}

// Compile validates and compiles policies into a PolicySet. A policy that
// fails validation makes Compile return a *CompileError (use
// CompilePolicy and NewPolicySet to keep the valid ones).
//
// Policies are compiled in parallel (up to GOMAXPROCS at a time); the
// error is the one of the first failing policy in the given order.
func (e *Engine) Compile(policies ...api.PolicyObject) (*PolicySet, error) {
	compiled := make([]*Policy, len(policies))
	errs := make([]error, len(policies))
	workers := min(runtime.GOMAXPROCS(0), len(policies))
	if workers < 2 || len(policies) < 4 {
		for i, p := range policies {
			if compiled[i], errs[i] = e.CompilePolicy(p); errs[i] != nil {
				return nil, errs[i]
			}
		}
		return newPolicySet(e, compiled), nil
	}
	panics := make([]any, len(policies))
	var wg sync.WaitGroup
	slots := make(chan struct{}, workers) // at most workers at a time
	for i, p := range policies {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			// a panic goes back to the caller's goroutine
			defer func() { panics[i] = recover() }()
			compiled[i], errs[i] = e.CompilePolicy(p)
		})
	}
	wg.Wait() // the errors are kept by policy, in order
	for i := range policies {
		if panics[i] != nil {
			panic(panics[i])
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
	}
	return newPolicySet(e, compiled), nil
}

// NewPolicySet groups already compiled policies.
func (e *Engine) NewPolicySet(policies ...*Policy) *PolicySet {
	return newPolicySet(e, append([]*Policy(nil), policies...))
}

// Policies returns the compiled policies in order.
func (s *PolicySet) Policies() []*Policy { return s.policies }

// Engine returns the engine the set was compiled with.
func (s *PolicySet) Engine() *Engine { return s.eng }

// name returns the policy name.
func (p *Policy) name() string { return p.src.GetName() }

// namespace returns the namespace of a namespaced kind (Policy,
// NamespacedValidatingPolicy, ...), "" for the others.
func (p *Policy) namespace() string {
	if api.IsNamespaced(p.src) {
		return p.src.GetNamespace()
	}
	return ""
}
