package engine

import (
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/patterns"
)

// validateRule is the handler of validate rules.
func (e *Engine) validateRule(rs *reqState, p *Policy, r *rule, sc *scope, excs []*polex.Exception) []RuleResult {
	if r.verify != nil {
		return e.validateImagesRule(rs, p, r, sc, excs)
	}
	v := r.validate
	if v.unsupported != "" {
		return rs.single(r.result(StatusError, v.unsupported))
	}
	if v.cel != nil {
		return e.validateCEL(rs, p, r)
	}
	if v.podSecurity != nil {
		return e.validatePodSecurity(rs, r, excs)
	}
	if v.manifests != nil {
		return e.validateManifests(rs, r)
	}
	o, ok := e.validateBody(rs, r, sc, v.body, 0)
	if !ok {
		return nil
	}
	if o.status == StatusFail && e.existingViolation(rs, p, r) {
		o = outcome{status: StatusSkip, msg: "skipping the rule evaluation as pre-existing violations are allowed"}
	}
	res := rs.singleResult(r, o.status, o.msg)
	res.Err = o.err
	res.EmitWarning = p.emitWarning
	return rs.last()
}

// outcome is what a validate body decides: the status, message and error
// cause of the rule's result. The evaluation of a body passes it up
// through every level (foreach, nested foreach, patterns) instead of the
// much larger RuleResult, which validateRule makes once.
type outcome struct {
	status Status
	msg    string
	err    error
}

func decided(status Status, msg string) outcome { return outcome{status: status, msg: msg} }

// failedTo is errorResult's outcome: "<msg>: <err>", with err as the cause.
func failedTo(msg string, err error) outcome {
	if err != nil {
		msg = msg + ": " + err.Error()
	}
	return outcome{status: StatusError, msg: msg, err: resultErr(err)}
}

// existingViolation implements allowExistingViolations (default true) for
// Enforce rules on UPDATE: when the old object already failed the rule, the
// failure of the new one is allowed. As upstream, the old object is
// evaluated as if it were created, with the rule's own failure action (not
// overrides) deciding whether the check applies, and matched as a request
// of no real user (oldObjectUser): the user updating the object may not be
// the one who made it, so a rule whose match names users, groups or roles
// never matches the old object, and its failure counts.
func (e *Engine) existingViolation(rs *reqState, p *Policy, r *rule) bool {
	if rs.op != api.Update || rs.req.OldObject == nil || !r.allowExisting {
		return false
	}
	action := p.failureAction
	if r.failureAction != nil {
		action = *r.failureAction
	}
	if !action.IsEnforce() {
		return false
	}
	old := *rs.req
	old.Operation = api.Create
	old.Object = rs.req.OldObject
	old.OldObject = nil
	if _, ok := old.Variables["request.operation"]; ok {
		vars := make(map[string]any, len(old.Variables))
		for k, v := range old.Variables {
			if k != "request.operation" {
				vars[k] = v
			}
		}
		old.Variables = vars
	}
	ors := e.newReqStateImages(rs.ctx, &old, rs.needsImages)
	ok, _, err := r.match.Matches(ors.matchRes, oldObjectUser(ors.matchReq))
	if err != nil || !ok {
		return false
	}
	sc := ors.newScope()
	e.ruleValues(sc, p, r)
	if err := sc.loadContext(r.context); err != nil {
		return false
	}
	if passed, _, err := sc.checkConditions(r.preconditions); err != nil || !passed {
		return false
	}
	prior, ok := e.validateBody(ors, r, sc, r.validate.body, 0)
	return ok && prior.status == StatusFail
}

// oldObjectUser is req with upstream's stand-in for the user of the old
// object's match: a user, groups and roles no binding names (upstream's
// kyverno:kyverno-invalid-controller, kyverno:invalidgroup,
// kyverno:invalidrole), so that user criteria never match and exclude
// blocks naming users never exclude.
func oldObjectUser(req match.Request) match.Request {
	req.Username = "kyverno:kyverno-invalid-controller"
	req.Groups = []string{"kyverno:invalidgroup"}
	req.Roles = []string{"kyverno:invalidrole"}
	req.ClusterRoles = []string{"kyverno:invalidrole"}
	return req
}

// validateBody follows upstream's validator: context, preconditions, then
// deny, pattern/anyPattern or foreach.
func (e *Engine) validateBody(rs *reqState, r *rule, sc *scope, b *validateBody, nesting int) (outcome, bool) {
	if err := sc.loadContext(b.context); err != nil {
		return failedTo("failed to load context", err), true
	}
	ok, _, err := sc.checkConditions(b.preconditions)
	if err != nil {
		return failedTo("failed to evaluate preconditions", err), true
	}
	if !ok {
		return decided(StatusSkip, "preconditions not met"), true
	}
	switch {
	case b.deny != nil:
		return e.validateDeny(r, sc, b.deny)
	case b.pattern != nil || b.anyPattern != nil:
		return e.validatePatterns(rs, r, sc, b)
	case b.foreach != nil:
		return e.validateForeach(rs, r, sc, b.foreach, nesting)
	}
	return outcome{}, false
}

func (e *Engine) validateDeny(r *rule, sc *scope, deny *condSet) (outcome, bool) {
	denied, held, err := sc.checkConditionsMessages(deny)
	if err != nil {
		return failedTo("failed to check deny conditions", err), true
	}
	if !denied {
		return decided(StatusPass, r.passMessage), true
	}
	var msg *template
	if r.validate.rawMessage != "" {
		msg = r.validate.message
	}
	text, ok := sc.denyMessage(msg, held)
	if !ok {
		text = fmt.Sprintf("validation error: rule %s failed", r.name)
	}
	return decided(StatusFail, text), true
}

func (e *Engine) validatePatterns(rs *reqState, r *rule, sc *scope, b *validateBody) (outcome, bool) {
	var target any
	switch {
	case sc.element != nil:
		target = sc.element
	case sc.deleteRequest:
		return outcome{}, false
	default:
		target = rs.obj
	}
	if b.pattern != nil {
		pat, err := b.pattern.get(sc)
		if err != nil {
			return failedTo("variable substitution failed", err), true
		}
		if err := pat.Match(target); err != nil {
			if pe, ok := asPatternError(err); ok {
				if pe.Skip {
					return decided(StatusSkip, pe.Error()), true
				}
				if pe.Path == "" {
					return decided(StatusError, e.patternMessage(r, sc, err, "")), true
				}
				return decided(StatusFail, e.patternMessage(r, sc, err, pe.Path)), true
			}
			return decided(StatusError, e.patternMessage(r, sc, err, "")), true
		}
		return decided(StatusPass, r.passMessage), true
	}
	// what each pattern said, rendered once into the rule's message
	var buf [4]patternMiss
	misses := buf[:0]
	failed, skipped := 0, 0
	for i, ps := range b.anyPattern {
		pat, err := ps.get(sc)
		if err != nil {
			return failedTo("variable substitution failed", err), true
		}
		err = pat.Match(target)
		if err == nil {
			return decided(StatusPass, "validation rule '"+r.name+"' anyPattern["+strconv.Itoa(i)+"] passed."), true
		}
		if pe, ok := asPatternError(err); ok {
			m := patternMiss{index: i, skip: pe.Skip, path: pe.Path}
			if pe.Skip || pe.Path == "" {
				m.err = err.Error()
			}
			if m.skip {
				skipped++
			} else {
				failed++
			}
			misses = append(misses, m)
		}
	}
	if skipped > 0 && failed == 0 {
		return decided(StatusSkip, anyPatternMessage(r.name, "", misses, true)), true
	}
	if failed > 0 {
		if r.validate.rawMessage == "" {
			return decided(StatusFail, anyPatternMessage(r.name, "", misses, false)), true
		}
		msg, err := sc.renderString(r.validate.message)
		if err != nil {
			return decided(StatusFail, "validation error: variables substitution error in rule "+r.name+" execution error: "+
				strings.TrimPrefix(anyPatternMessage(r.name, "", misses, false), "validation error: ")), true
		}
		return decided(StatusFail, anyPatternMessage(r.name, msg, misses, false)), true
	}
	return decided(StatusPass, r.validate.rawMessage), true
}

// patternMiss is what one pattern of an anyPattern said when it did not
// match: a skip or a failure, with the failure's path or the error's text.
type patternMiss struct {
	index int
	skip  bool
	path  string
	err   string // the error's text for a skip or a failure without a path
}

// anyPatternMessage renders the misses of an anyPattern rule (its skips
// when skipped is set, its failures otherwise) as upstream does: "rule
// <name>[<i>] skipped: <error>" or "rule <name>[<i>] failed at path <path>"
// ("failed: <error>" without a path), separated by spaces; failures come
// after "validation error: " and the rule's message.
func anyPatternMessage(name, msg string, misses []patternMiss, skipped bool) string {
	// written on the stack (messages are short), then copied once into
	// the message
	var buf [1024]byte
	b := buf[:0]
	if !skipped {
		b = append(b, "validation error: "...)
		switch {
		case msg == "":
		case strings.HasSuffix(msg, "."):
			b = append(append(b, msg...), ' ')
		default:
			b = append(append(b, msg...), ". "...)
		}
	}
	first := true
	for _, m := range misses {
		if m.skip != skipped {
			continue
		}
		if !first {
			b = append(b, ' ')
		}
		first = false
		b = append(append(append(b, "rule "...), name...), '[')
		b = strconv.AppendInt(b, int64(m.index), 10)
		switch {
		case m.skip:
			b = append(append(b, "] skipped: "...), m.err...)
		case m.path == "":
			b = append(append(b, "] failed: "...), m.err...)
		default:
			b = append(append(b, "] failed at path "...), m.path...)
		}
	}
	return string(b)
}

// asPatternError is errors.As for the *patterns.Error Match returns,
// without a variable that escapes in the common case.
func asPatternError(err error) (*patterns.Error, bool) {
	if pe, ok := err.(*patterns.Error); ok {
		return pe, true
	}
	var pe *patterns.Error
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// patternMessage is upstream's buildErrorMessage.
func (e *Engine) patternMessage(r *rule, sc *scope, err error, path string) string {
	v := r.validate
	if v.rawMessage == "" {
		if path != "" {
			return "validation error: rule " + r.name + " failed at path " + path
		}
		return fmt.Sprintf("validation error: rule %s execution error: %s", r.name, err.Error())
	}
	msg, serr := sc.renderString(v.message)
	if serr != nil {
		return fmt.Sprintf("validation error: variables substitution error in rule %s execution error: %s", r.name, err.Error())
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	if path != "" {
		return "validation error: " + msg + " rule " + r.name + " failed at path " + path
	}
	return fmt.Sprintf("validation error: %s rule %s execution error: %s", msg, r.name, err.Error())
}

func (e *Engine) validateForeach(rs *reqState, r *rule, sc *scope, list []*foreachValidate, nesting int) (outcome, bool) {
	applyCount := 0
	for _, fe := range list {
		elements, err := fe.list.evaluate(sc)
		if err != nil {
			continue
		}
		if len(elements) > e.cfg.limits.MaxForeachElements {
			return failedTo("failed to process foreach", e.foreachLimit(strconv.Quote(fe.list.expr), len(elements))), true
		}
		res, _, count := e.validateElements(rs, r, sc, fe, elements, nesting)
		if res.status != StatusPass {
			return res, true
		}
		applyCount += count
	}
	if applyCount == 0 {
		return decided(StatusSkip, "rule skipped"), true
	}
	return decided(StatusPass, "rule passed"), true
}

func (e *Engine) validateElements(rs *reqState, r *rule, sc *scope, fe *foreachValidate, elements []any, nesting int) (outcome, bool, int) {
	if !fe.recycle {
		return e.eachElement(rs, r, sc, fe, elements, nesting, nil)
	}
	child := rs.recycledChild(sc)
	o, ok, n := e.eachElement(rs, r, sc, fe, elements, nesting, child)
	rs.releaseChild(child)
	return o, ok, n
}

// eachElement evaluates the body for each element. One scope serves the
// elements in turn (child, or a new child of sc when nil): nothing keeps
// an element's scope once its body is evaluated.
func (e *Engine) eachElement(rs *reqState, r *rule, sc *scope, fe *foreachValidate, elements []any, nesting int, child *scope) (outcome, bool, int) {
	applyCount := 0
	for index, el := range elements {
		if el == nil {
			continue
		}
		if rs.ctx.Err() != nil {
			return failedTo("failed to process foreach", rs.ctx.Err()), true, applyCount
		}
		if child == nil {
			child = sc.child()
		} else {
			sc.childInto(child)
			child.recycled = fe.recycle
		}
		child.addElement(el, index, nesting)
		m, isMap := el.(map[string]any)
		scoped := isMap
		if fe.elementScope != nil {
			if *fe.elementScope && !isMap {
				return failedTo("failed to process foreach", fmt.Errorf("cannot use elementScope=true foreach rules for elements that are not maps, expected type=map got type=%T", el)), true, applyCount
			}
			scoped = *fe.elementScope
		}
		if scoped {
			child.element = m
		}
		res, ok := e.validateBody(rs, r, child, fe.body, nesting+1)
		if !ok || res.status == StatusSkip {
			continue
		}
		if res.status != StatusPass {
			if res.status == StatusError && index < len(elements)-1 {
				continue
			}
			out := decided(res.status, "validation failure: "+res.msg)
			out.err = res.err // an element's error keeps its cause
			return out, true, applyCount
		}
		applyCount++
	}
	return decided(StatusPass, ""), true, applyCount
}
