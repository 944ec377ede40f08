package celpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Semantics selects the rules a body is evaluated by.
type Semantics int

const (
	// Kyverno is upstream Kyverno's engine for ValidatingPolicy:
	// validations in order, the first that does not hold decides.
	Kyverno Semantics = iota
	// APIServer is the API server's for ValidatingAdmissionPolicy: every
	// validation is evaluated, then the first denial decides.
	APIServer
)

// ExceptionsVar is the variable of ValidatingPolicy expressions that holds
// what the matching CEL PolicyExceptions allow: allowedImages and
// allowedValues, lists of strings.
const ExceptionsVar = "exceptions"

// EnvOptions are the options of the environment of ValidatingPolicy
// expressions, on top of package cel's (the API server's libraries and
// variables): the request with its objects, the exceptions variable, no
// authorizer (package cel adds upstream's orValue on values that are
// not optionals to every environment).
// extra are further cel-go options (Kyverno's CEL libraries).
func EnvOptions(extra ...celgo.EnvOption) []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.WithRequestObjects(),
		cel.WithoutAuthorizer(),
		cel.WithVariable(ExceptionsVar, celgo.MapType(celgo.StringType, celgo.ListType(celgo.StringType))),
	}
	if len(extra) > 0 {
		opts = append(opts, cel.WithEnvOptions(extra...))
	}
	return opts
}

// Spec is what a body is compiled from: the fields a ValidatingPolicy and
// a ValidatingAdmissionPolicy share.
type Spec struct {
	MatchConditions  []admissionregistrationv1.MatchCondition
	Variables        []admissionregistrationv1.Variable
	Validations      []admissionregistrationv1.Validation
	AuditAnnotations []admissionregistrationv1.AuditAnnotation
	FailurePolicy    *admissionregistrationv1.FailurePolicyType
}

// Validating is a compiled body: immutable, safe for concurrent use.
type Validating struct {
	sem         Semantics
	comp        *cel.Compiler
	conds       *Conditions
	validations []validationProg
	audits      []auditProg
	// ignore is failurePolicy Ignore
	ignore bool
	reads  Reads
}

type validationProg struct {
	prog, msgExpr *cel.Program
	message       string
	reason        string
}

type auditProg struct {
	key  string
	prog *cel.Program
}

// Reads tells which variables a body's expressions read, directly or
// through the variables they read (cel.Program.Reads), so that the caller
// builds only those.
type Reads struct {
	Namespace, Request, Params bool
	// Resources is set when an expression may call the resource library
	// (objects of kinds known only at evaluation)
	Resources bool
}

// note adds what p reads; p is nil for an expression that did not
// compile.
func (r *Reads) note(p *cel.Program) {
	if p == nil {
		return
	}
	r.Namespace = r.Namespace || p.Reads(cel.NamespaceVar)
	r.Request = r.Request || p.Reads(cel.RequestVar)
	r.Params = r.Params || p.Reads(cel.ParamsVar)
	r.Resources = r.Resources || p.Reads("resource")
}

// Reads returns what the body's expressions read.
func (v *Validating) Reads() Reads { return v.reads }

// Options configure Compile.
type Options struct {
	// Params declares the params variable (a paramKind).
	Params bool
	// Lazy instantiates the body's programs on first use (see
	// cel.Compiler.Lazy): for bodies that may never run.
	Lazy bool
	// Namespace is the namespace of a namespaced policy: the libraries
	// that read the cluster (resource) keep to it (cel.InNamespace).
	Namespace string
}

// Compile compiles a body on env. path is the spec's path for errors.
func Compile(env *cel.Env, spec *Spec, sem Semantics, opts Options, path *field.Path) (*Validating, field.ErrorList) {
	var copts []cel.CompilerOption
	if opts.Namespace != "" {
		copts = append(copts, cel.InNamespace(opts.Namespace))
	}
	comp, condComp := env.NewCompiler(opts.Params, copts...), env.NewCompiler(opts.Params, copts...)
	if opts.Lazy {
		comp.Lazy()
		condComp.Lazy()
	}
	v := &Validating{sem: sem, comp: comp}
	var errs field.ErrorList
	if fp := spec.FailurePolicy; fp != nil {
		switch *fp {
		case admissionregistrationv1.Fail:
		case admissionregistrationv1.Ignore:
			v.ignore = true
		default:
			errs = append(errs, field.NotSupported(path.Child("failurePolicy"), *fp, []string{"Fail", "Ignore"}))
		}
	}
	var cerrs field.ErrorList
	v.conds, cerrs = CompileConditions(condComp, spec.MatchConditions, path.Child("matchConditions"))
	errs = append(errs, cerrs...)
	v.reads = v.conds.reads
	for i, vr := range spec.Variables {
		vp := path.Child("variables").Index(i)
		if vr.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "variable name is required"))
			continue
		}
		if _, err := v.comp.AddVariable(vr.Name, vr.Expression); err != nil {
			errs = append(errs, field.Invalid(vp.Child("expression"), vr.Expression, err.Error()))
		}
	}
	errs = append(errs, v.compileValidations(spec.Validations, path.Child("validations"))...)
	errs = append(errs, v.compileAudits(spec.AuditAnnotations, path.Child("auditAnnotations"))...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(path.Child("validations"), "validations and auditAnnotations may not both be empty"))
	}
	comp.Release()
	return v, errs
}

func (v *Validating) compileValidations(in []admissionregistrationv1.Validation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, x := range in {
		xp := path.Index(i)
		vp := validationProg{message: x.Message}
		if x.Reason != nil {
			vp.reason = string(*x.Reason)
		}
		if strings.TrimSpace(x.Expression) == "" {
			errs = append(errs, field.Required(xp.Child("expression"), "expression is required"))
		} else if p, err := v.comp.Compile(x.Expression, cel.Validation); err != nil {
			errs = append(errs, field.Invalid(xp.Child("expression"), x.Expression, err.Error()))
		} else {
			vp.prog = p
		}
		if x.MessageExpression != "" {
			if p, err := v.comp.Compile(x.MessageExpression, cel.MessageExpression); err != nil {
				errs = append(errs, field.Invalid(xp.Child("messageExpression"), x.MessageExpression, err.Error()))
			} else {
				vp.msgExpr = p
			}
		}
		v.reads.note(vp.prog)
		v.reads.note(vp.msgExpr)
		v.validations = append(v.validations, vp)
	}
	return errs
}

func (v *Validating) compileAudits(in []admissionregistrationv1.AuditAnnotation, path *field.Path) field.ErrorList {
	audits, reads, errs := compileAuditAnnotations(v.comp, in, path)
	v.audits = audits
	v.reads.merge(reads)
	return errs
}

// compileAuditAnnotations compiles audit annotations with comp: each needs
// a unique key.
func compileAuditAnnotations(comp *cel.Compiler, in []admissionregistrationv1.AuditAnnotation, path *field.Path) ([]auditProg, Reads, field.ErrorList) {
	var errs field.ErrorList
	var out []auditProg
	var reads Reads
	seen := map[string]bool{}
	for i, a := range in {
		ap := path.Index(i)
		switch {
		case a.Key == "":
			errs = append(errs, field.Required(ap.Child("key"), "key is required"))
		case seen[a.Key]:
			errs = append(errs, field.Duplicate(ap.Child("key"), a.Key))
		}
		seen[a.Key] = true
		p, err := comp.Compile(a.ValueExpression, cel.AuditAnnotation)
		if err != nil {
			errs = append(errs, field.Invalid(ap.Child("valueExpression"), a.ValueExpression, err.Error()))
			continue
		}
		reads.note(p)
		out = append(out, auditProg{key: a.Key, prog: p})
	}
	return out, reads, errs
}

// Conditions are compiled matchConditions (of a policy or of a CEL
// PolicyException).
type Conditions struct {
	comp  *cel.Compiler
	progs []*cel.Program
	reads Reads
}

// CompileConditions compiles matchConditions with comp: each needs a
// unique qualified name and a bool expression.
func CompileConditions(comp *cel.Compiler, in []admissionregistrationv1.MatchCondition, path *field.Path) (*Conditions, field.ErrorList) {
	return compileConditions(comp, in, path, true)
}

// compileConditions compiles matchConditions; checkNames checks their
// names (upstream Kyverno's MutatingPolicy does not).
func compileConditions(comp *cel.Compiler, in []admissionregistrationv1.MatchCondition, path *field.Path, checkNames bool) (*Conditions, field.ErrorList) {
	c := &Conditions{comp: comp}
	var errs field.ErrorList
	if len(in) > 64 {
		errs = append(errs, field.TooMany(path, len(in), 64))
	}
	names := map[string]bool{}
	for i, m := range in {
		mp := path.Index(i)
		switch {
		case !checkNames:
		case m.Name == "":
			errs = append(errs, field.Required(mp.Child("name"), ""))
		case names[m.Name]:
			errs = append(errs, field.Duplicate(mp.Child("name"), m.Name))
		default:
			for _, msg := range validation.IsQualifiedName(m.Name) {
				errs = append(errs, field.Invalid(mp.Child("name"), m.Name, msg))
			}
		}
		names[m.Name] = true
		if strings.TrimSpace(m.Expression) == "" {
			errs = append(errs, field.Required(mp.Child("expression"), ""))
			continue
		}
		p, err := comp.Compile(m.Expression, cel.MatchCondition)
		if err != nil {
			errs = append(errs, field.Invalid(mp.Child("expression"), m.Expression, err.Error()))
			continue
		}
		c.reads.note(p)
		c.progs = append(c.progs, p)
	}
	return c, errs
}

// Reads returns what the conditions read.
func (c *Conditions) Reads() Reads { return c.reads }

// Len is the number of conditions.
func (c *Conditions) Len() int { return len(c.progs) }

// Eval evaluates the conditions as the API server does: false when one is
// false; otherwise the errors of those that failed (joined with "; "),
// or true. s is the request's Scope (see cel.NewEvaluation), nil for
// none.
func (c *Conditions) Eval(ctx context.Context, in *cel.Input, s *cel.Scope) (bool, error) {
	if c == nil || len(c.progs) == 0 {
		return true, nil
	}
	return c.evalWith(ctx, c.comp.NewEvaluation(ctx, in, s))
}

// evalWith is Eval in an Evaluation of the conditions' compiler.
func (c *Conditions) evalWith(ctx context.Context, ev *cel.Evaluation) (bool, error) {
	if c == nil || len(c.progs) == 0 {
		return true, nil
	}
	var errs []error
	for _, p := range c.progs {
		v, err := ev.Eval(p)
		if err != nil {
			if errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil {
				return false, err
			}
			errs = append(errs, Cause(err))
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
		return false, joined(errs)
	}
	return true, nil
}

// joinedError is several errors in the "e1; e2" form of upstream's
// multierr.
type joinedError []error

func (e joinedError) Error() string {
	s := make([]string, len(e))
	for i, err := range e {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e joinedError) Unwrap() []error { return e }

func joined(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return joinedError(errs)
}

// Cause returns the error of an expression without the API server's
// "expression '...' resulted in error:" prefix, as cel-go reports it
// (upstream Kyverno's messages).
func Cause(err error) error {
	var ee *cel.EvalError
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// Status is the outcome of a body on a request.
type Status int

// Statuses.
const (
	// NoMatch: a matchCondition is false (or failed under failurePolicy
	// Ignore); the policy does not apply.
	NoMatch Status = iota
	Pass
	Fail
	// Error: a validation (or, API server semantics, anything) failed to
	// evaluate.
	Error
	// EvalError: upstream Kyverno's errors outside the validations (a
	// matchCondition under failurePolicy Fail, an audit annotation),
	// which it reports under the rule name "evaluation".
	EvalError
)

// Outcome is the result of a body on a request.
type Outcome struct {
	Status Status
	// Message is the failure message (Fail) or the error text.
	Message string
	// Reason is the failing validation's reason (API server semantics).
	Reason string
	// Index is the position of the validation that decided (Fail,
	// Error).
	Index int
	// Err is the cause of Error and EvalError outcomes.
	Err error
	// AuditAnnotations are the audit annotations (Kyverno semantics:
	// evaluated on Pass and Fail), nil when there are none.
	AuditAnnotations map[string]string
}

// Evaluate evaluates the body on one input, in the request's Scope s (see
// cel.NewEvaluation; nil for none). The context bounds the evaluation; a
// cost limit is an Error (or EvalError) whose Err matches
// cel.ErrCostLimit.
func (v *Validating) Evaluate(ctx context.Context, in *cel.Input, s *cel.Scope) Outcome {
	ok, err := v.conds.Eval(ctx, in, s)
	stopped := err != nil && (errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil)
	if err != nil && (!v.ignore || stopped) {
		if v.sem == APIServer {
			return Outcome{Status: Error, Message: err.Error(), Err: err}
		}
		return Outcome{Status: EvalError, Message: err.Error(), Err: err}
	}
	if !ok {
		return Outcome{Status: NoMatch}
	}
	ev := v.comp.NewEvaluation(ctx, in, s)
	if v.sem == APIServer {
		return v.evaluateAll(ctx, ev)
	}
	return v.evaluateInOrder(ev)
}

// evaluateInOrder is upstream Kyverno's: the first validation that is not
// true decides; audit annotations follow.
func (v *Validating) evaluateInOrder(ev *cel.Evaluation) Outcome {
	for i, x := range v.validations {
		val, err := ev.Eval(x.prog)
		if err != nil {
			err = Cause(err)
			return Outcome{Status: Error, Message: err.Error(), Index: i, Err: err}
		}
		b, isBool := val.(types.Bool)
		if !isBool {
			err := fmt.Errorf("type conversion error from '%s' to 'bool'", val.Type().TypeName())
			return Outcome{Status: Error, Message: err.Error(), Index: i, Err: err}
		}
		if b {
			continue
		}
		out := Outcome{Status: Fail, Message: kyvernoMessage(ev, &x, i), Reason: x.reason, Index: i}
		if out.AuditAnnotations, err = v.auditAnnotations(ev); err != nil {
			return Outcome{Status: Error, Message: err.Error(), Index: i, Err: err}
		}
		return out
	}
	annotations, err := v.auditAnnotations(ev)
	if err != nil {
		return Outcome{Status: EvalError, Message: err.Error(), Err: err}
	}
	return Outcome{Status: Pass, AuditAnnotations: annotations}
}

// evaluateAll is the API server's: every validation is evaluated, then
// the first error or denial decides.
func (v *Validating) evaluateAll(ctx context.Context, ev *cel.Evaluation) Outcome {
	var buf [4]struct {
		val ref.Val
		err error
	}
	res := buf[:0]
	for _, x := range v.validations {
		val, err := ev.Eval(x.prog)
		if err != nil && (errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil) {
			return Outcome{Status: Error, Message: err.Error(), Err: err}
		}
		res = append(res, struct {
			val ref.Val
			err error
		}{val, err})
	}
	for i, r := range res {
		if r.err != nil {
			return Outcome{Status: Error, Message: r.err.Error(), Index: i, Err: r.err}
		}
		if r.val == types.True {
			continue
		}
		x := &v.validations[i]
		msg := apiServerMessage(ev, x)
		if msg == "" {
			msg = "failed expression: " + strings.TrimSpace(x.prog.Expression())
		}
		return Outcome{Status: Fail, Message: msg, Reason: x.reason, Index: i}
	}
	return Outcome{Status: Pass}
}

// kyvernoMessage is upstream Kyverno's message of the failed validation
// i: its messageExpression's value, or the error that expression gave
// (as upstream words it), else its message, as written; when that is
// empty, upstream's default.
func kyvernoMessage(ev *cel.Evaluation, x *validationProg, i int) string {
	msg := x.message
	if x.msgExpr != nil {
		mv, err := ev.Eval(x.msgExpr)
		if err != nil {
			msg = "failed to evaluate message expression: " + Cause(err).Error()
		} else if s, cerr := mv.ConvertToNative(reflect.TypeFor[string]()); cerr != nil {
			msg = "failed to convert message expression to string: " + cerr.Error()
		} else {
			msg = s.(string)
		}
	}
	if msg == "" {
		msg = fmt.Sprintf("CEL expression validation failed at index %d", i)
	}
	return msg
}

// apiServerMessage is the API server's message of a failed validation:
// its messageExpression's value when it is a string of one line and not
// too long, else its message (both trimmed), else "".
func apiServerMessage(ev *cel.Evaluation, x *validationProg) string {
	if x.msgExpr != nil {
		mv, err := ev.Eval(x.msgExpr)
		if s, isStr := mv.(types.String); err == nil && isStr {
			msg := strings.TrimSpace(string(s))
			if msg != "" && len(msg) <= cel.MaxMessageBytes && !strings.Contains(msg, "\n") {
				return msg
			}
		}
	}
	return strings.TrimSpace(x.message)
}

// auditAnnotations evaluates the audit annotations as upstream Kyverno.
func (v *Validating) auditAnnotations(ev *cel.Evaluation) (map[string]string, error) {
	return evalAuditAnnotations(ev, v.audits)
}

// evalAuditAnnotations evaluates audit annotations as upstream Kyverno:
// each must be a string; empty strings are left out.
func evalAuditAnnotations(ev *cel.Evaluation, audits []auditProg) (map[string]string, error) {
	if len(audits) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(audits))
	for _, a := range audits {
		val, err := ev.Eval(a.prog)
		if err != nil {
			return nil, fmt.Errorf("failed to evaluate auditAnnotation '%s': %w", a.key, Cause(err))
		}
		s, isStr := val.(types.String)
		if !isStr {
			return nil, fmt.Errorf("failed to convert auditAnnotation '%s' expression: type conversion error from '%s' to 'string'", a.key, val.Type().TypeName())
		}
		if s != "" {
			out[a.key] = string(s)
		}
	}
	return out, nil
}
