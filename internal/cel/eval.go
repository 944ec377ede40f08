package cel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/library"
)

// UserInfo is the requesting user, for the authorizer.
type UserInfo struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

// Check is one authorization question an expression asks through the
// authorizer variable.
type Check struct {
	User UserInfo
	// Verb is the API verb ("get", "create", ...).
	Verb string
	// ResourceRequest tells a resource check (APIGroup, Resource, ...)
	// from a non-resource one (Path).
	ResourceRequest bool
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	// FieldSelector and LabelSelector are the selectors of a resource
	// check (fieldSelector(), labelSelector()), in the syntax of a list
	// request's query parameters; a selector that does not parse is left
	// out (the check is then the broader one, as the API server's
	// authorizers take it).
	FieldSelector, LabelSelector string
	Path                         string
}

// Authorizer answers the checks of the authorizer variable.
type Authorizer interface {
	Authorize(ctx context.Context, c Check) (allowed bool, reason string, err error)
}

// RequestResource is the resource of the request, for
// authorizer.requestResource.
type RequestResource struct {
	Group, Version, Resource, Subresource string
	Namespace, Name                       string
}

// Input is what an Evaluation binds to the variables. Object, OldObject,
// Params and Namespace are JSON-like trees, nil for null; they are read,
// never modified, and handed to CEL as they are: integral numbers
// (float64, as encoding/json decodes them, or int64) within the int64
// range are CEL ints, as the API server reads JSON, other numbers
// doubles. Request has the fields of an AdmissionRequest (kind, resource,
// operation, userInfo, ...).
//
// An Input is plain data: NewEvaluation reads it and keeps nothing in it,
// so one Input may serve several Evaluations, concurrent ones included,
// and may be changed between them. What the Evaluations of a request
// share is in a Scope.
type Input struct {
	Object, OldObject map[string]any
	Params            map[string]any
	Request           map[string]any
	Namespace         map[string]any
	// Authorizer, when set, binds the authorizer variables for User and
	// Resource; an expression that uses them is an error otherwise.
	Authorizer Authorizer
	User       UserInfo
	Resource   RequestResource
	// Budget bounds the total cost of the Evaluation's expressions
	// (variables included); 0 means RuntimeCostBudget.
	Budget int64
	// Extra holds the values of the variables WithVariable (or the
	// options of WithEnvOptions) declare, by name: JSON-like trees, CEL
	// values or other Go values (converted by the environment's
	// adapter); a declared variable that is absent is null.
	Extra map[string]any
	// Libraries is the host side of Kyverno's CEL libraries
	// (WithLibraries) for the Evaluations of this Input; nil leaves
	// every host unconfigured, the clock time.Now and the randomness
	// crypto/rand.
	Libraries *Libraries
}

// Evaluation evaluates programs of one Compiler on one Input. It is not
// safe for concurrent use.
type Evaluation struct {
	ctx context.Context
	// scope is the request's Scope, nil when there is none; trees are
	// those bound to object and oldObject, which key the values of
	// shared variables in it.
	scope *Scope
	trees trees
	// conv is the converter of an Evaluation without a Scope.
	conv      converter
	act       activation
	remaining int64
	// varCost is the cost of variables evaluated since the last Eval.
	varCost int64
	// costErr is a cost limit hit by a variable.
	costErr error
	// vars is the variables object; varBuf holds the values of a few
	// variables without an allocation.
	vars   variables
	varBuf [4]ref.Val
}

type activation struct {
	object, oldObject, params, request, namespace any
	authorizer, requestResource                   any
	variables                                     ref.Val
	extra                                         map[string]any
	conv                                          *converter
	// declared are the variables of WithVariable, null when absent
	declared []declaredVar
	// libs resolves the names of the libraries' variables; nil in
	// environments without libraries.
	libs *libBinding
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case ObjectVar:
		return a.object, true
	case OldObjectVar:
		return a.oldObject, true
	case ParamsVar:
		return a.params, true
	case RequestVar:
		return a.request, true
	case NamespaceVar:
		return a.namespace, true
	case AuthorizerVar:
		return a.authorizer, a.authorizer != nil
	case requestResourceVar:
		return a.requestResource, a.requestResource != nil
	case VariablesVar:
		return a.variables, true
	}
	if v, ok := a.extra[name]; ok {
		return a.conv.NativeToValue(v), true
	}
	for _, dv := range a.declared {
		if dv.name == name {
			return types.NullValue, true
		}
	}
	if a.libs != nil {
		return a.libs.resolve(name)
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// NewEvaluation binds in for the compiler's programs. ctx bounds every
// evaluation (cancellation is checked inside comprehensions). in's fields
// are read at once and in is not kept: setting a field of in afterwards
// does not change the Evaluation (the maps in holds are read as the
// expressions read them).
//
// s, when not nil, is the Scope of the request (see Scope): the
// Evaluation converts its trees through it, and shares with the other
// Evaluations of s the values of the variables that read nothing but
// object and oldObject (and the libraries' constants), in environments
// without WithEnvOptions (whose functions may not be pure): a variable
// whose expression another Evaluation of s already evaluated successfully
// on the same Object and OldObject trees is not evaluated again, its value
// and cost are taken over (as the same expression on the same data has
// the same value and cost). With a nil s the Evaluation shares nothing.
func (c *Compiler) NewEvaluation(ctx context.Context, in *Input, s *Scope) *Evaluation {
	ev := &Evaluation{ctx: ctx, remaining: in.Budget, scope: s}
	if ev.remaining <= 0 {
		ev.remaining = RuntimeCostBudget
	}
	conv := &ev.conv
	if s != nil {
		conv = &s.conv
		ev.trees = treesOf(in.Object, in.OldObject)
	}
	ev.act = activation{
		object:    conv.value(in.Object),
		oldObject: conv.value(in.OldObject),
		params:    conv.value(in.Params),
		request:   conv.value(in.Request),
		namespace: conv.value(in.Namespace),
		extra:     in.Extra,
		conv:      conv,
		declared:  c.env.cfg.vars,
	}
	if in.Authorizer != nil {
		u := &user.DefaultInfo{Name: in.User.Username, UID: in.User.UID, Groups: in.User.Groups, Extra: in.User.Extra}
		a := authorizerAdapter{a: in.Authorizer, ctx: ctx}
		ev.act.authorizer = library.NewAuthorizerVal(u, a)
		ev.act.requestResource = library.NewResourceAuthorizerVal(u, a, resourceAttrs(in.Resource))
	}
	if c.env.cfg.libs != 0 {
		ev.act.libs = &libBinding{ctx: ctx, libs: in.Libraries, namespace: c.namespace, objects: conv}
	}
	if n := len(c.variables); n > 0 {
		ev.vars = variables{ev: ev, progs: c.variables[:n:n], vals: ev.varBuf[:0]}
		if n > len(ev.varBuf) {
			ev.vars.vals = make([]ref.Val, n)
		}
		ev.vars.vals = ev.vars.vals[:n]
		ev.act.variables = &ev.vars
	} else {
		ev.act.variables = noVariables
	}
	return ev
}

// SetObject rebinds the object variable of the Evaluation to obj, the
// result of a mutation that the next one sees. The variables evaluated so
// far keep their values, as the API server keeps them for the mutations of
// one invocation of a mutating admission policy; those evaluated later see
// obj (and are shared, through the Scope, with the Evaluations on obj).
// obj is read, never modified.
func (ev *Evaluation) SetObject(obj map[string]any) {
	ev.act.object = ev.act.conv.value(obj)
	if ev.scope != nil {
		ev.trees = treesOf(obj, ev.trees.oldObjectMap)
	}
}

// variable evaluates the variable p, adding its cost to the next Eval's.
func (ev *Evaluation) variable(p *Program) ref.Val {
	share := p.shared && ev.scope != nil
	if share {
		if e := ev.scope.find(p, &ev.trees); e != nil {
			ev.varCost = addCost(ev.varCost, e.cost)
			return e.val
		}
	}
	v, details, err := ev.run(p)
	var cost uint64
	if details != nil {
		if c := details.ActualCost(); c != nil {
			cost = *c
			ev.varCost = addCost(ev.varCost, cost)
		}
	}
	if err == nil && share && details != nil {
		ev.scope.add(p, &ev.trees, v, cost)
	}
	if err != nil {
		if isCostErr(err) && ev.costErr == nil {
			ev.costErr = err
		}
		return types.NewErr("composited variable %q fails to evaluate: %v", p.name, err)
	}
	return v
}

func addCost(a int64, c uint64) int64 {
	if c > math.MaxInt64 || a > math.MaxInt64-int64(c) {
		return math.MaxInt64
	}
	return a + int64(c)
}

func isCostErr(err error) bool {
	var ce interpreter.EvalCancelledError
	return errors.As(err, &ce) && ce.Cause == interpreter.CostLimitExceeded
}

// costError is an evaluation stopped by a cost limit.
type costError struct{ msg string }

func (e *costError) Error() string        { return e.msg }
func (e *costError) Is(target error) bool { return target == ErrCostLimit }

// errBudget is the API server's text for an exhausted budget.
const errBudget = "validation failed due to running out of cost budget, no further validation rules will be run"

// Eval evaluates p, which must come from the Evaluation's Compiler. An
// error is an *EvalError, or matches ErrCostLimit when a cost limit
// stopped the evaluation (the Evaluation is then spent: later calls fail
// the same way), or the context's error.
func (ev *Evaluation) Eval(p *Program) (ref.Val, error) {
	if ev.remaining < 0 {
		return nil, &costError{msg: errBudget}
	}
	val, details, err := ev.run(p)
	cost := ev.varCost
	ev.varCost = 0
	if details != nil {
		if c := details.ActualCost(); c != nil {
			cost = addCost(cost, *c)
		}
	}
	if cost > ev.remaining {
		ev.remaining = -1
		return nil, &costError{msg: errBudget}
	}
	ev.remaining -= cost
	if err == nil && ev.costErr != nil {
		err = ev.costErr
	}
	if err != nil {
		if isCostErr(err) || ev.costErr != nil {
			ev.remaining = -1
			return nil, &costError{msg: fmt.Sprintf("expression '%v' resulted in error: %v", p.expr, err)}
		}
		var ce interpreter.EvalCancelledError
		if errors.As(err, &ce) && ev.ctx.Err() != nil {
			return nil, ev.ctx.Err()
		}
		return nil, &EvalError{Expression: p.expr, Err: err}
	}
	return val, nil
}

// run evaluates p; a context that can never be cancelled (no Done
// channel) needs none of ContextEval's interruption checks, which cost a
// cancellable context per evaluation.
func (ev *Evaluation) run(p *Program) (ref.Val, *cel.EvalDetails, error) {
	prog, err := p.program()
	if err != nil {
		return nil, nil, err
	}
	if ev.ctx.Done() == nil {
		return prog.Eval(&ev.act)
	}
	return prog.ContextEval(ev.ctx, &ev.act)
}

// authorizerAdapter puts an Authorizer behind the API server's interface.
// ctx is the Evaluation's: the API server's library asks its checks with
// context.TODO(), so the caller's deadline and cancellation reach the
// Authorizer only through the adapter.
type authorizerAdapter struct {
	a   Authorizer
	ctx context.Context
}

func (a authorizerAdapter) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.ctx != nil {
		ctx = a.ctx
	}
	c := Check{
		Verb:            attrs.GetVerb(),
		ResourceRequest: attrs.IsResourceRequest(),
		APIGroup:        attrs.GetAPIGroup(),
		APIVersion:      attrs.GetAPIVersion(),
		Resource:        attrs.GetResource(),
		Subresource:     attrs.GetSubresource(),
		Namespace:       attrs.GetNamespace(),
		Name:            attrs.GetName(),
		Path:            attrs.GetPath(),
	}
	if reqs, _ := attrs.GetFieldSelector(); len(reqs) > 0 {
		c.FieldSelector = fieldSelector(reqs)
	}
	if reqs, _ := attrs.GetLabelSelector(); len(reqs) > 0 {
		s := make([]string, len(reqs))
		for i := range reqs {
			s[i] = reqs[i].String()
		}
		c.LabelSelector = strings.Join(s, ",")
	}
	if u := attrs.GetUser(); u != nil {
		c.User = UserInfo{Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
	}
	ok, reason, err := a.a.Authorize(ctx, c)
	if err != nil {
		return authorizer.DecisionNoOpinion, reason, err
	}
	if ok {
		return authorizer.DecisionAllow, reason, nil
	}
	return authorizer.DecisionDeny, reason, nil
}

// fieldSelector writes field requirements back in selector syntax.
func fieldSelector(reqs fields.Requirements) string {
	var b strings.Builder
	for i, r := range reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		op := "="
		if r.Operator == selection.NotEquals {
			op = "!="
		}
		b.WriteString(r.Field + op + fields.EscapeValue(r.Value))
	}
	return b.String()
}

type resourceAttrs RequestResource

func (r resourceAttrs) GetName() string      { return r.Name }
func (r resourceAttrs) GetNamespace() string { return r.Namespace }
func (r resourceAttrs) GetResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}
func (r resourceAttrs) GetSubresource() string { return r.Subresource }
