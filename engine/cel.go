package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
)

// Authorizer answers the authorization checks CEL expressions make through
// the authorizer variable (authorizer.group(”).resource('pods')
// .check('create').allowed(), ...). Without one (WithAuthorizer), an
// expression that uses the authorizer is an evaluation error.
type Authorizer interface {
	Authorize(ctx context.Context, check AuthorizationCheck) (allowed bool, reason string, err error)
}

// AuthorizationCheck is one question of a CEL expression to the
// Authorizer: the requesting user, a verb, and a resource or a path.
type AuthorizationCheck = cel.Check

// WithAuthorizer sets the Authorizer of CEL expressions.
func WithAuthorizer(a Authorizer) Option {
	return func(c *config) error { c.authorizer = a; return nil }
}

// NamespacedKinds is an optional interface of a Client: it tells whether
// objects of a kind live in namespaces, for the parameter objects of CEL
// rules (paramKind). Without it, the engine knows the built-in
// cluster-scoped kinds and takes every other kind as namespaced.
type NamespacedKinds interface {
	IsNamespaced(apiVersion, kind string) (bool, error)
}

// celEnv returns the engine's CEL environment, built on first use.
func (e *Engine) celEnv() (*cel.Env, error) {
	e.celOnce.Do(func() { e.celEnvV, e.celErr = cel.NewEnv() })
	return e.celEnvV, e.celErr
}

// celRule is a compiled validate.cel body with the rule's celPreconditions.
type celRule struct {
	compiler    *cel.Compiler
	pre         []*cel.Program
	validations []celValidation
	audits      []*cel.Program
	paramKind   *api.ParamKind
	paramRef    *api.ParamRef
	// needsNamespace and needsRequest are set when an expression reads
	// namespaceObject or request (cel.Program.Reads).
	needsNamespace, needsRequest bool
	// passMessage is upstream's message of a passed CEL rule.
	passMessage string
}

type celValidation struct {
	prog    *cel.Program
	message string
	msgExpr *cel.Program
}

// celConds are the compiled celPreconditions of a rule that is not a
// validate.cel rule.
type celConds struct {
	compiler                     *cel.Compiler
	pre                          []*cel.Program
	needsNamespace, needsRequest bool
}

// compileCEL compiles the CEL parts of a rule: a validate.cel body (with
// the celPreconditions, which see its params and variables) into
// cr.validate.cel, or the celPreconditions of any other rule into
// cr.celPre. Every expression is type-checked; a problem is reported at
// its field.
func (e *Engine) compileCEL(cr *rule, r *api.Rule, path *field.Path, errs field.ErrorList) field.ErrorList {
	var c *api.CEL
	if r.Validation != nil {
		c = r.Validation.CEL
	}
	if c == nil && len(r.CELPreconditions) == 0 {
		return errs
	}
	env, err := e.celEnv()
	if err != nil {
		return append(errs, field.InternalError(path, err))
	}
	// what the expressions read, through the variables they read too
	readsNamespace, readsRequest := false, false
	note := func(p *cel.Program) {
		readsNamespace = readsNamespace || p.Reads(cel.NamespaceVar)
		readsRequest = readsRequest || p.Reads(cel.RequestVar)
	}
	bad := func(p *field.Path, expr string, err error) {
		errs = append(errs, field.Invalid(p, expr, fmt.Sprintf("rule %q: %v", r.Name, err)))
	}
	hasParams := c != nil && c.ParamKind != nil
	comp := env.NewCompiler(hasParams)
	// the rule keeps comp for its evaluations only
	defer comp.Release()
	var cr2 *celRule
	if c != nil {
		vp := path.Child("validate", "cel")
		errs = checkParams(c, vp, errs)
		cr2 = &celRule{compiler: comp, paramKind: c.ParamKind, paramRef: c.ParamRef,
			passMessage: fmt.Sprintf("Validation rule '%s' passed.", r.Name)}
		for i, v := range c.Variables {
			if _, err := comp.AddVariable(v.Name, v.Expression); err != nil {
				bad(vp.Child("variables").Index(i).Child("expression"), v.Expression, err)
			}
		}
		if len(c.Expressions) == 0 {
			errs = append(errs, field.Required(vp.Child("expressions"), "at least one expression is required"))
		}
		for i, x := range c.Expressions {
			xp := vp.Child("expressions").Index(i)
			cv := celValidation{message: x.Message}
			if cv.message == "" {
				cv.message = r.Validation.Message
			}
			if x.Expression == "" {
				errs = append(errs, field.Required(xp.Child("expression"), "expression is required"))
			} else if p, err := comp.Compile(x.Expression, cel.Validation); err != nil {
				bad(xp.Child("expression"), x.Expression, err)
			} else {
				cv.prog = p
				note(p)
			}
			if x.MessageExpression != "" {
				if p, err := comp.Compile(x.MessageExpression, cel.MessageExpression); err != nil {
					bad(xp.Child("messageExpression"), x.MessageExpression, err)
				} else {
					cv.msgExpr = p
					note(p)
				}
			}
			cr2.validations = append(cr2.validations, cv)
		}
		for i, a := range c.AuditAnnotations {
			ap := vp.Child("auditAnnotations").Index(i)
			if a.Key == "" {
				errs = append(errs, field.Required(ap.Child("key"), "key is required"))
			}
			if p, err := comp.Compile(a.ValueExpression, cel.AuditAnnotation); err != nil {
				bad(ap.Child("valueExpression"), a.ValueExpression, err)
			} else {
				cr2.audits = append(cr2.audits, p)
				note(p)
			}
		}
	}
	var pre []*cel.Program
	for i, m := range r.CELPreconditions {
		mp := path.Child("celPreconditions").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(mp.Child("name"), "name is required"))
		}
		if p, err := comp.Compile(m.Expression, cel.MatchCondition); err != nil {
			bad(mp.Child("expression"), m.Expression, err)
		} else {
			pre = append(pre, p)
			note(p)
		}
	}
	if cr2 != nil {
		cr2.pre, cr2.needsNamespace, cr2.needsRequest = pre, readsNamespace, readsRequest
		if cr.validate != nil {
			cr.validate.cel = cr2
		}
		return errs
	}
	cr.celPre = &celConds{compiler: comp, pre: pre, needsNamespace: readsNamespace, needsRequest: readsRequest}
	return errs
}

// checkParams checks the shape of paramKind and paramRef.
func checkParams(c *api.CEL, vp *field.Path, errs field.ErrorList) field.ErrorList {
	if c.ParamKind != nil && (c.ParamKind.APIVersion == "" || c.ParamKind.Kind == "") {
		errs = append(errs, field.Required(vp.Child("paramKind"), "apiVersion and kind are required"))
	}
	if c.ParamRef != nil {
		if c.ParamKind == nil {
			errs = append(errs, field.Required(vp.Child("paramKind"), "paramRef needs a paramKind"))
		}
		if (c.ParamRef.Name == "") == (c.ParamRef.Selector == nil) {
			errs = append(errs, field.Invalid(vp.Child("paramRef"), "", "exactly one of name and selector must be set"))
		}
		if a := c.ParamRef.ParameterNotFoundAction; a != nil && *a != "Allow" && *a != "Deny" {
			errs = append(errs, field.NotSupported(vp.Child("paramRef", "parameterNotFoundAction"), *a, []string{"Allow", "Deny"}))
		}
	}
	if c.ParamKind != nil && c.ParamRef == nil {
		errs = append(errs, field.Required(vp.Child("paramRef"), "paramKind needs a paramRef"))
	}
	return errs
}

// celInput is a request's data for CEL, built once per request and again
// after a mutation changed the object (gen).
type celInput struct {
	gen               int
	object, oldObject map[string]any
	request           map[string]any
	reqDone           bool
	nsDone            bool
	namespace         map[string]any
	nsErr             error
	// scope is the cel.Scope of every CEL rule and CEL policy of the
	// request (until the object changes): their Evaluations convert the
	// objects once and share the values of variables.
	scope cel.Scope
}

// celScope returns the request's cel.Scope.
func (rs *reqState) celScope() *cel.Scope { return &rs.celData().scope }

// celData returns the request's CEL data. As upstream: the object is null
// for DELETE, the old object null when there is none (and in background
// scans). The objects are handed to CEL as they are: an Evaluation reads
// their numbers as the API server does.
func (rs *reqState) celData() *celInput {
	if ci := rs.celIn; ci != nil && ci.gen == rs.gen {
		return ci
	}
	ci := &celInput{gen: rs.gen}
	switch {
	case rs.req.Background:
		ci.object = rs.obj
	case rs.op == api.Delete:
		// the object being deleted is the old one; a DELETE request that
		// carries only an object (as the CLI's values make) deletes it
		ci.oldObject = rs.oldObject
		if ci.oldObject == nil {
			ci.oldObject = rs.obj
		}
	default:
		ci.object, ci.oldObject = rs.obj, rs.oldObject
	}
	rs.celIn = ci
	return ci
}

// celRequest builds the request variable: an AdmissionRequest without its
// objects, empty optional fields left out as the API server leaves them.
func (rs *reqState) celRequest() map[string]any {
	req := rs.req
	gvk := map[string]any{"group": rs.gvk.Group, "version": rs.gvk.Version, "kind": rs.gvk.Kind}
	gvr := map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "resource": req.Resource.Resource}
	ui := map[string]any{}
	if u := req.UserInfo.Username; u != "" {
		ui["username"] = u
	}
	if u := req.UserInfo.UID; u != "" {
		ui["uid"] = u
	}
	if len(req.UserInfo.Groups) > 0 {
		ui["groups"] = stringsToAny(req.UserInfo.Groups)
	}
	if len(req.UserInfo.Extra) > 0 {
		extra := make(map[string]any, len(req.UserInfo.Extra))
		for k, v := range req.UserInfo.Extra {
			extra[k] = stringsToAny(v)
		}
		ui["extra"] = extra
	}
	op := string(rs.op)
	if req.Background {
		op = string(api.Create)
	}
	r := map[string]any{
		"kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
		"operation": op, "userInfo": ui, "dryRun": req.DryRun,
	}
	if rs.matchRes.Name != "" {
		r["name"] = rs.matchRes.Name
	}
	if rs.matchRes.Namespace != "" {
		r["namespace"] = rs.matchRes.Namespace
	}
	if req.SubResource != "" {
		r["subResource"] = req.SubResource
		r["requestSubResource"] = req.SubResource
	}
	if req.UID != "" {
		r["uid"] = req.UID
	}
	return r
}

// celNamespace returns namespaceObject: null for cluster-scoped objects
// and for Namespaces themselves; the Namespace read through the Client
// (its metadata, spec and status, as the API server exposes them) when
// there is one; otherwise, as the upstream CLI, an object with only its
// name.
func (rs *reqState) celNamespace() (map[string]any, error) {
	ci := rs.celData()
	if ci.nsDone {
		return ci.namespace, ci.nsErr
	}
	ci.nsDone = true
	ns := rs.matchRes.Namespace
	if rs.gvk.Kind == "Namespace" && rs.gvk.Group == "" && rs.gvk.Version == "v1" {
		ns = ""
	}
	if ns == "" {
		return nil, nil
	}
	ci.namespace = map[string]any{"metadata": map[string]any{"name": ns}}
	if c := rs.e.cfg.client; c != nil {
		ctx, done := rs.hostContext()
		obj, err := c.Get(ctx, "v1", "Namespace", "", ns)
		err = done(err)
		switch {
		case err == nil && obj != nil:
			out := map[string]any{}
			if md, ok := obj["metadata"].(map[string]any); ok {
				m := map[string]any{}
				for _, k := range []string{"name", "generateName", "namespace", "labels", "annotations", "uid", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp", "generation", "resourceVersion", "finalizers"} {
					if v, ok := md[k]; ok {
						m[k] = v
					}
				}
				out["metadata"] = m
			}
			for _, k := range []string{"spec", "status"} {
				if v, ok := obj[k]; ok {
					out[k] = v
				}
			}
			ci.namespace = out
		case err != nil && !errors.Is(err, ErrNotFound):
			ci.namespace, ci.nsErr = nil, fmt.Errorf("namespace %q: %w", ns, err)
		}
	}
	return ci.namespace, ci.nsErr
}

// celInputFor binds a rule's input into in, a zero Input; request and
// namespaceObject are built only for rules that read them.
func (rs *reqState) celInputFor(in *cel.Input, needsNamespace, needsRequest bool, params map[string]any) error {
	ci := rs.celData()
	if needsRequest && !ci.reqDone {
		ci.request, ci.reqDone = rs.celRequest(), true
	}
	in.Object, in.OldObject, in.Params = ci.object, ci.oldObject, params
	if needsRequest {
		in.Request = ci.request
	}
	if needsNamespace {
		ns, err := rs.celNamespace()
		if err != nil {
			return err
		}
		in.Namespace = ns
	}
	if a := rs.e.cfg.authorizer; a != nil {
		u := rs.req.UserInfo
		in.Authorizer = a
		in.User = cel.UserInfo{Username: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
		in.Resource = cel.RequestResource{Group: rs.req.Resource.Group, Version: rs.req.Resource.Version,
			Resource: rs.req.Resource.Resource, Subresource: rs.req.SubResource,
			Namespace: rs.matchRes.Namespace, Name: rs.matchRes.Name}
	}
	return nil
}

// celLimit marks an evaluation stopped by CEL's cost limits.
func celLimit(err error) error {
	if errors.Is(err, cel.ErrCostLimit) {
		return &LimitError{Limit: "CELCost", msg: err.Error(), err: err}
	}
	return err
}

// matchConditionsBudget is the API server's budget of match conditions.
const matchConditionsBudget = 2500000

// celPreconditions evaluates match conditions as the API server does: any
// false condition means no match; otherwise an error of any makes the
// result an error.
func celPreconditions(ctx context.Context, comp *cel.Compiler, in *cel.Input, s *cel.Scope, pre []*cel.Program) (bool, error) {
	if len(pre) == 0 {
		return true, nil
	}
	cin := *in
	cin.Budget = matchConditionsBudget
	ev := comp.NewEvaluation(ctx, &cin, s)
	var errs []error
	for _, p := range pre {
		v, err := ev.Eval(p)
		if err != nil {
			if errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil {
				return false, err
			}
			errs = append(errs, err)
			continue
		}
		if v == types.False {
			return false, nil
		}
		if v != types.True {
			errs = append(errs, fmt.Errorf("expression '%s' resulted in %v, not a bool", p.Expression(), v))
		}
	}
	if len(errs) > 0 {
		// the API server's text: the error, or "[e1, e2]" for several
		return false, utilerrors.NewAggregate(errs)
	}
	return true, nil
}

// checkCELPreconditions evaluates the celPreconditions of a rule that is
// not a validate.cel rule; it returns the rule's result when they stop it.
func (e *Engine) checkCELPreconditions(rs *reqState, r *rule) []RuleResult {
	var in cel.Input
	if err := rs.celInputFor(&in, r.celPre.needsNamespace, r.celPre.needsRequest, nil); err != nil {
		return []RuleResult{r.errorResult("failed to evaluate cel preconditions", err)}
	}
	ok, err := celPreconditions(rs.ctx, r.celPre.compiler, &in, rs.celScope(), r.celPre.pre)
	if err != nil {
		return []RuleResult{r.errorResult("failed to evaluate cel preconditions", celLimit(err))}
	}
	if !ok {
		return []RuleResult{r.result(StatusSkip, "cel preconditions not met")}
	}
	return nil
}

// validateCEL is the body of a validate.cel rule, upstream's CEL handler:
// for each parameter object (or once without paramKind), the
// preconditions, then every validation in order; the first that is not
// true fails the rule with its message (an evaluation error fails it with
// the error's text, as the API server denies on errors).
func (e *Engine) validateCEL(rs *reqState, p *Policy, r *rule) []RuleResult {
	c := r.validate.cel
	params := []map[string]any{nil}
	if c.paramKind != nil {
		var err error
		params, err = e.celParams(rs, c)
		if err != nil {
			return rs.single(r.errorResult("error in parameterized resource", err))
		}
	}
	for _, param := range params {
		var in cel.Input
		if err := rs.celInputFor(&in, c.needsNamespace, c.needsRequest, param); err != nil {
			return rs.single(r.errorResult("Error getting the resource's namespace", err))
		}
		o := e.celValidate(rs, r, c, &in)
		if o.status != StatusPass {
			res := rs.singleResult(r, o.status, o.msg)
			res.Err = o.err
			res.EmitWarning = p.emitWarning
			return rs.last()
		}
	}
	res := rs.singleResult(r, StatusPass, c.passMessage)
	res.EmitWarning = p.emitWarning
	return rs.last()
}

func (e *Engine) celValidate(rs *reqState, r *rule, c *celRule, in *cel.Input) outcome {
	s := rs.celScope()
	ok, err := celPreconditions(rs.ctx, c.compiler, in, s, c.pre)
	if err != nil {
		if errors.Is(err, cel.ErrCostLimit) || rs.ctx.Err() != nil {
			return failedTo("failed to evaluate cel preconditions", celLimit(err))
		}
		return decided(StatusFail, err.Error())
	}
	if !ok {
		return decided(StatusSkip, "cel preconditions not met")
	}
	ev := c.compiler.NewEvaluation(rs.ctx, in, s)
	// as the API server: every validation is evaluated, then the first
	// that does not hold decides
	var valsBuf [4]ref.Val
	var errsBuf [4]error
	vals, errs := valsBuf[:0], errsBuf[:0]
	if n := len(c.validations); n > len(valsBuf) {
		vals, errs = make([]ref.Val, 0, n), make([]error, 0, n)
	}
	vals, errs = vals[:len(c.validations)], errs[:len(c.validations)]
	for i, v := range c.validations {
		vals[i], errs[i] = ev.Eval(v.prog)
		if errs[i] != nil && (errors.Is(errs[i], cel.ErrCostLimit) || rs.ctx.Err() != nil) {
			return failedTo("failed to evaluate CEL expression", celLimit(errs[i]))
		}
	}
	for i, v := range c.validations {
		if errs[i] != nil {
			return decided(StatusFail, errs[i].Error())
		}
		if vals[i] == types.True {
			continue
		}
		msg := ""
		if v.msgExpr != nil {
			mv, err := ev.Eval(v.msgExpr)
			if err != nil && errors.Is(err, cel.ErrCostLimit) {
				return failedTo("failed messageExpression", celLimit(err))
			}
			if s, isStr := mv.(types.String); err == nil && isStr {
				msg = strings.TrimSpace(string(s))
				if len(msg) > cel.MaxMessageBytes || strings.Contains(msg, "\n") {
					msg = ""
				}
			}
		}
		if msg == "" {
			msg = strings.TrimSpace(v.message)
		}
		if msg == "" {
			msg = "failed expression: " + strings.TrimSpace(v.prog.Expression())
		}
		return decided(StatusFail, msg)
	}
	return decided(StatusPass, "")
}

// celParams reads the parameter objects of a rule as upstream does:
// paramRef.name names one object (an error when it does not exist), a
// selector lists them (none is an error only with
// parameterNotFoundAction Deny). A namespaced paramKind is read in
// paramRef.namespace, else in the resource's namespace.
func (e *Engine) celParams(rs *reqState, c *celRule) ([]map[string]any, error) {
	client := e.cfg.client
	if client == nil {
		return nil, fmt.Errorf("paramKind %s %s: no Client: %w", c.paramKind.APIVersion, c.paramKind.Kind, ErrNotConfigured)
	}
	av, kind, ref := c.paramKind.APIVersion, c.paramKind.Kind, c.paramRef
	namespaced := kindScope(kind) != scopeCluster // the Client may know better
	if nk, ok := client.(NamespacedKinds); ok {
		var err error
		if namespaced, err = nk.IsNamespaced(av, kind); err != nil {
			return nil, fmt.Errorf("failed to check if resource is namespaced or not (%w)", err)
		}
	}
	ns := ""
	if namespaced {
		ns = rs.matchRes.Namespace
		if rs.gvk.Kind == "Namespace" && rs.gvk.Group == "" {
			ns = ""
		}
		if ref.Namespace != "" {
			ns = ref.Namespace
		} else if ns == "" {
			return nil, errors.New("can't use namespaced paramRef to match cluster-scoped resources")
		}
	} else if ref.Namespace != "" {
		return nil, errors.New("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
	}
	ctx, done := rs.hostContext()
	var params []map[string]any
	if ref.Name != "" {
		obj, err := client.Get(ctx, av, kind, ns, ref.Name)
		if err = done(err); err != nil {
			return nil, err
		}
		return []map[string]any{obj}, nil
	}
	if ref.Selector != nil {
		list, err := client.List(ctx, av, kind, ns, ref.Selector)
		if err = done(err); err != nil {
			return nil, err
		}
		params = list
	} else {
		done(nil)
	}
	if len(params) == 0 && ref.ParameterNotFoundAction != nil && *ref.ParameterNotFoundAction == "Deny" {
		return nil, errors.New("no params found")
	}
	return params, nil
}
