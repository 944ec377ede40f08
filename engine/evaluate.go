package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/exceptions"
	jpcore "github.com/gavelpolicy/gavel/internal/jmespath"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/mutate"
)

// ErrNoObject is returned for a request without an object.
var ErrNoObject = errors.New("request has no object")

// ruleHandler evaluates a rule's body after match, exceptions, context and
// preconditions. It may return no result (the rule did not apply). The
// slice may be the last of the request's results (reqState.single): the
// caller adopts it (runPolicy) or copies it and truncates them.
type ruleHandler func(rs *reqState, p *Policy, r *rule, sc *scope, excs []*polex.Exception) []RuleResult

// Validate evaluates the validate rules of every policy in the set.
func (s *PolicySet) Validate(ctx context.Context, req *Request) (*Response, error) {
	if req == nil || (req.Object == nil && req.OldObject == nil) {
		return nil, ErrNoObject
	}
	object, oldObject, _, err := req.check()
	if err != nil {
		return nil, err
	}
	if s.eng.filtered(req, object, oldObject) {
		return filteredResponse(object, oldObject), nil
	}
	rs := s.reqState(ctx, req, object, oldObject)
	resp := &Response{Resource: rs.obj, Policies: make([]PolicyResult, 0, s.validatePolicies)}
	rs.results = make([]RuleResult, 0, s.resultsHint(s.validatePolicies))
	cands := s.candidates(&rs.matchRes)
	for i, p := range s.policies {
		if !p.HasRuleType(Validation) && !p.HasRuleType(ImageVerify) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		if p.body != nil {
			resp.Policies = s.eng.runBody(rs, p, resp.Policies, func(out []PolicyResult) []PolicyResult {
				return p.body.validate(rs, p, out)
			})
			continue
		}
		resp.Policies = append(resp.Policies, s.eng.runPolicy(rs, p, Validation, s.eng.validateRule, cands.policy(i)))
	}
	s.finishImagePolicies(rs, resp)
	s.noteResults(rs, resp)
	s.putReqState(rs)
	// a cancellation during the last policy leaves rules unevaluated
	if err := ctx.Err(); err != nil {
		return resp, err
	}
	return resp, nil
}

// ValidatePayload evaluates the policies of the set that evaluate JSON
// payloads (ValidatingPolicies and ImageValidatingPolicies in JSON
// evaluation mode) on a payload that
// need not be a Kubernetes object, as upstream's CLI does with --json:
// their matchConditions select the payloads, object is the payload and
// the other variables are null. The set's other policies are not
// evaluated. The response has a PolicyResult for each such policy.
func (s *PolicySet) ValidatePayload(ctx context.Context, payload map[string]any) (*Response, error) {
	if payload == nil {
		return nil, ErrNoObject
	}
	if !mutate.CanonicalTree(payload) {
		n, err := jpcore.Canonical(payload)
		if err != nil {
			return nil, fmt.Errorf("%w: payload: %v", ErrInvalidObject, err)
		}
		payload, _ = n.(map[string]any)
	}
	rs := s.reqState(ctx, &Request{Object: payload}, payload, nil)
	resp := &Response{Resource: payload}
	rs.results = make([]RuleResult, 0, 4)
	for _, p := range s.policies {
		pb, ok := p.body.(payloadBody)
		if !ok || !p.body.jsonMode() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return resp, err
		}
		resp.Policies = s.eng.runBody(rs, p, resp.Policies, func(out []PolicyResult) []PolicyResult {
			return pb.validatePayload(rs, p, out)
		})
	}
	s.finishImagePolicies(rs, resp)
	s.noteResults(rs, resp)
	s.putReqState(rs)
	return resp, ctx.Err()
}

// payloadBody is a body that evaluates JSON payloads (in JSON mode).
type payloadBody interface {
	validatePayload(rs *reqState, p *Policy, out []PolicyResult) []PolicyResult
}

// runBody evaluates a policy of a CEL kind (kinds.go) and appends its
// results to out. A panic becomes an error result of the policy.
func (e *Engine) runBody(rs *reqState, p *Policy, out []PolicyResult, validate func([]PolicyResult) []PolicyResult) (res []PolicyResult) {
	n, start := len(out), len(rs.results)
	defer func() {
		if v := recover(); v != nil {
			// the results stay in the request's array (see noteResults)
			rs.results = rs.results[:start]
			rr := rs.celKindResult("", StatusError, "policy evaluation panicked", fmt.Errorf("%v\n%s", v, firstFrames(debug.Stack())), nil)
			if p.HasRuleType(Mutation) {
				rr.Type = Mutation
			}
			res = append(out[:n], PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction,
				Rules: rs.results[start : start+1 : start+1]})
		}
	}()
	return validate(out)
}

// runPolicy evaluates the rules of one type of a policy on the request.
// cands, when it has an index, tells the rules that may match the kind of
// the request's resource (see kindCands): the others are jumped over
// while the resource keeps that kind.
func (e *Engine) runPolicy(rs *reqState, p *Policy, typ RuleType, handler ruleHandler, cands policyCands) (pr PolicyResult) {
	pr = PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureActionFor(rs), perRule: true}
	if e.cfg.timing {
		start := time.Now()
		defer func() { pr.Duration = time.Since(start) }()
	}
	if rs.req.Background && !p.background {
		return pr
	}
	if !rs.req.Background && !p.admission {
		return pr
	}
	if api.IsNamespaced(p.src) && !match.NamespacedPolicyApplies(p.src.GetNamespace(), rs.matchRes) {
		return pr
	}
	// the results of the request's policies share one growing array;
	// each policy's slice is capped so that appending to it copies
	start := len(rs.results)
	// the kind can change only when a mutation changes the object (a new
	// generation of the request's base)
	gen, indexed := rs.gen, cands.next != nil
	for j := 0; j < len(p.rules); j++ {
		if indexed {
			if j = int(cands.next[j]); j >= len(p.rules) {
				break
			}
		}
		r := p.rules[j]
		// verifyImages rules are unsupported: Validate reports them as
		// errors rather than letting images through unverified.
		if r.typ != typ && !(typ == Validation && r.typ == ImageVerify) {
			continue
		}
		if rs.ctx.Err() != nil {
			break
		}
		if e.backgroundRule(rs, r) {
			continue
		}
		// while indexed, the index selected the rule for the current kind
		at := len(rs.results)
		results := e.runRule(rs, p, r, handler, indexed)
		rs.adopt(at, results)
		if !pr.enforcedFail && r.typ != Generation && hasStatus(results, StatusFail) {
			pr.enforcedFail = p.ruleEnforced(rs, r)
		}
		pr.PatchedResource = rs.obj
		if p.applyOne && applied(results) {
			break
		}
		if indexed && rs.gen != gen {
			// a mutation: the index stands while the kind is the same
			indexed = keyOf(&rs.matchRes) == cands.key
			gen = rs.gen
		}
	}
	if n := len(rs.results); n > start {
		pr.Rules = rs.results[start:n:n]
	}
	return pr
}

// hasStatus reports whether one of results has status st.
func hasStatus(results []RuleResult, st Status) bool {
	for i := range results {
		if results[i].Status == st {
			return true
		}
	}
	return false
}

func applied(results []RuleResult) bool {
	for _, r := range results {
		if r.Status == StatusPass || r.Status == StatusFail {
			return true
		}
	}
	return false
}

// runRule applies the upstream order: match/exclude, exceptions, context,
// preconditions, body. A panic in a rule becomes an error result.
// kindSelected tells that the kind index found one of the rule's kind
// selectors selecting the resource's current kind: a rule whose match
// depends on nothing else (match.Rule.KindsOnly) then matches without
// being evaluated.
func (e *Engine) runRule(rs *reqState, p *Policy, r *rule, handler ruleHandler, kindSelected bool) (results []RuleResult) {
	defer func() {
		if v := recover(); v != nil {
			results = []RuleResult{r.errorResult("rule evaluation panicked", fmt.Errorf("%v\n%s", v, firstFrames(debug.Stack())))}
		}
		// every error result has its Err: the message when no cause
		// was kept on the way
		for i := range results {
			if res := &results[i]; res.Status == StatusError && res.Err == nil {
				res.Err = errors.New(res.Message)
			}
		}
	}()
	if !kindSelected || !r.match.KindsOnly() {
		ok, _, err := r.match.Matches(rs.matchRes, rs.matchReq)
		if err != nil {
			return []RuleResult{r.errorResult("failed to match the resource", err)}
		}
		if !ok {
			return nil
		}
	}
	if r.unsupported != "" {
		return []RuleResult{r.result(StatusError, r.unsupported)}
	}
	excs, err := e.matchingExceptions(rs, p, r)
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate policy exceptions", err)}
	}
	if len(excs) > 0 && !(r.validate != nil && r.validate.podSecurity != nil && hasPodSecurityExemptions(excs)) {
		keys := make([]string, len(excs))
		for i, x := range excs {
			keys[i] = x.Key()
		}
		res := r.result(StatusSkip, polex.SkipMessage(keys...))
		res.Exceptions = keys
		return []RuleResult{res}
	}
	sc := rs.newScope()
	e.ruleValues(sc, p, r)
	if err := sc.loadContext(r.context); err != nil {
		return []RuleResult{r.errorResult("failed to load context", err)}
	}
	passed, msg, err := rs.rulePreconditions(sc, r)
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate preconditions", err)}
	}
	if !passed {
		text := "preconditions not met"
		if msg != "" {
			text += "; " + msg
		}
		return rs.single(r.result(StatusSkip, text))
	}
	if r.celPre != nil {
		if res := e.checkCELPreconditions(rs, r); res != nil {
			rs.releaseScope(sc)
			return res
		}
	}
	results = handler(rs, p, r, sc, excs)
	// handlers keep no reference to the scope
	rs.releaseScope(sc)
	return results
}

func firstFrames(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	if len(lines) > 12 {
		lines = lines[:12]
	}
	return strings.Join(lines, "\n")
}

func hasPodSecurityExemptions(excs []*polex.Exception) bool {
	for _, x := range excs {
		if len(x.PodSecurity()) > 0 {
			return true
		}
	}
	return false
}

// exceptions reads the host's exceptions once per request.
func (rs *reqState) exceptions() (*polex.Set, error) {
	if !rs.excDone {
		ctx, done := rs.hostContext()
		var set *exceptions.Set
		set, rs.excErr = rs.e.cfg.exceptions.Exceptions(ctx)
		rs.excSet = (*polex.Set)(set)
		rs.excErr = done(rs.excErr)
		rs.excDone = true
	}
	return rs.excSet, rs.excErr
}

// matchingExceptions returns the exceptions that apply to the rule and the
// resource, including their conditions.
func (e *Engine) matchingExceptions(rs *reqState, p *Policy, r *rule) ([]*polex.Exception, error) {
	if e.cfg.exceptions == nil {
		return nil, nil
	}
	set, err := rs.exceptions()
	if err != nil || set == nil {
		return nil, err
	}
	var out []*polex.Exception
	for _, x := range set.Candidates(p.key, r.name) {
		if rs.req.Background && !x.Background() {
			continue
		}
		ok, err := x.Matches(rs.matchRes, rs.matchReq)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if c := x.Conditions; c != nil {
			cs, err := e.exceptionConditions(x, c)
			if err != nil {
				return nil, err
			}
			sc := rs.newScope()
			ok, _, err := sc.checkConditions(cs)
			rs.releaseScope(sc)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// exceptionConditions compiles an exception's conditions once and caches
// them on the engine.
func (e *Engine) exceptionConditions(x *polex.Exception, c *api.AnyAllConditions) (*condSet, error) {
	if v, ok := e.excConds.Load(x); ok {
		return v.(*condSet), nil
	}
	cs := &condSet{exception: true}
	var errs field.ErrorList
	path := field.NewPath("spec", "conditions")
	for i, cd := range c.AnyConditions {
		cc, cerrs := e.compileCondition(cd, "any", i, path.Child("any").Index(i))
		errs = append(errs, cerrs...)
		cs.any = append(cs.any, cc)
	}
	for i, cd := range c.AllConditions {
		cc, cerrs := e.compileCondition(cd, "all", i, path.Child("all").Index(i))
		errs = append(errs, cerrs...)
		cs.all = append(cs.all, cc)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("policy exception %s: %w", x.Key(), errs.ToAggregate())
	}
	e.excConds.Store(x, cs)
	return cs, nil
}

func (r *rule) result(status Status, msg string) RuleResult {
	return RuleResult{Name: r.name, Type: r.typ, Status: status, Message: msg, Properties: r.properties}
}

// errorResult formats like upstream's RuleError: "<msg>: <err>".
func (r *rule) errorResult(msg string, err error) RuleResult {
	if err != nil {
		msg = msg + ": " + err.Error()
	}
	res := r.result(StatusError, msg)
	res.Err = resultErr(err)
	return res
}
