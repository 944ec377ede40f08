package celpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Patch types of mutations.
const (
	PatchTypeApplyConfiguration = "ApplyConfiguration"
	PatchTypeJSONPatch          = "JSONPatch"
)

// Mutation is one mutation of a MutatingPolicy or
// MutatingAdmissionPolicy: its patch type and the expression of its
// applyConfiguration or jsonPatch (Expression is empty when the field the
// patch type names is absent).
type Mutation struct {
	PatchType  string
	Expression string
}

// MutatingSpec is what a mutating body is compiled from: the fields a
// MutatingPolicy and a MutatingAdmissionPolicy share, and the
// MutatingPolicy's audit annotations.
type MutatingSpec struct {
	MatchConditions  []admissionregistrationv1.MatchCondition
	Variables        []admissionregistrationv1.Variable
	Mutations        []Mutation
	AuditAnnotations []admissionregistrationv1.AuditAnnotation
	FailurePolicy    *admissionregistrationv1.FailurePolicyType
	// TargetMatchConditions select the existing resources a
	// MutatingPolicy mutates (object is the target); TargetExpression
	// resolves them from the trigger (an object, or a list of them in
	// items).
	TargetMatchConditions []admissionregistrationv1.MatchCondition
	TargetExpression      string
}

// Schemas merge ApplyConfigurations into objects (typeconv.Converter):
// guard refuses patches that set atomic values, as the API server does.
type Schemas interface {
	Apply(obj, patch map[string]any, guard bool) (map[string]any, error)
}

// Mutating is a compiled mutating body: immutable, safe for concurrent
// use.
type Mutating struct {
	sem       Semantics
	comp      *cel.Compiler
	conds     *Conditions
	targets   *Conditions
	target    *cel.Program
	mutations []mutationProg
	audits    []auditProg
	// ignore is failurePolicy Ignore
	ignore bool
	// guard refuses ApplyConfigurations that set atomic values
	guard bool
	reads Reads
	// programs, vars, params and namespace key the programs shared
	// between bodies (MutatingOptions.Programs); compilation only
	programs  *Programs
	vars      string
	params    bool
	namespace string
}

type mutationProg struct {
	prog  *cel.Program
	apply bool // an ApplyConfiguration, else a JSON patch
}

// MutatingOptions configure CompileMutating.
type MutatingOptions struct {
	Options
	// ServerSideApply merges ApplyConfigurations without the API server's
	// guard on atomic values (MutatingPolicy's useServerSideApply).
	ServerSideApply bool
	// Programs, when set, shares the programs of identical mutations
	// between the bodies compiled with it on one environment (a
	// MutatingPolicy and its Pod controller variants, which keep its
	// variables and JSON patches as they are).
	Programs *Programs
}

// Programs shares compiled mutations between bodies; not safe for
// concurrent compilations.
type Programs struct {
	m map[programKey]*cel.Program
}

// programKey is a mutation under its variables and parameters: the
// program is the same for the same key.
type programKey struct {
	vars, expr string
	kind       cel.Kind
	params     bool
	namespace  string
}

// CompileMutating compiles a mutating body on env. Under Kyverno semantics
// (MutatingPolicy) the matchConditions see the variables and a
// matchCondition that fails is an error whatever the failure policy; under
// the API server's (MutatingAdmissionPolicy) a failure under
// failurePolicy Ignore does not match. path is the spec's path for
// errors.
func CompileMutating(env *cel.Env, spec *MutatingSpec, sem Semantics, opts MutatingOptions, path *field.Path) (*Mutating, field.ErrorList) {
	var copts []cel.CompilerOption
	if opts.Namespace != "" {
		copts = append(copts, cel.InNamespace(opts.Namespace))
	}
	comp := env.NewCompiler(opts.Params, copts...)
	if opts.Lazy {
		comp.Lazy()
	}
	m := &Mutating{sem: sem, comp: comp, guard: !opts.ServerSideApply, programs: opts.Programs, params: opts.Params, namespace: opts.Namespace}
	var errs field.ErrorList
	if fp := spec.FailurePolicy; fp != nil {
		switch *fp {
		case admissionregistrationv1.Fail:
		case admissionregistrationv1.Ignore:
			m.ignore = true
		default:
			errs = append(errs, field.NotSupported(path.Child("failurePolicy"), *fp, []string{"Fail", "Ignore"}))
		}
	}
	for i, vr := range spec.Variables {
		vp := path.Child("variables").Index(i)
		if vr.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "variable name is required"))
			continue
		}
		if _, err := comp.AddVariable(vr.Name, vr.Expression); err != nil {
			errs = append(errs, field.Invalid(vp.Child("expression"), vr.Expression, err.Error()))
		}
		m.vars += vr.Name + "\x00" + vr.Expression + "\x00"
	}
	var cerrs field.ErrorList
	m.conds, cerrs = compileConditions(comp, spec.MatchConditions, path.Child("matchConditions"), sem == APIServer)
	errs = append(errs, cerrs...)
	m.reads.merge(m.conds.reads)
	m.targets, cerrs = compileConditions(comp, spec.TargetMatchConditions, path.Child("targetMatchConditions"), false)
	errs = append(errs, cerrs...)
	m.reads.merge(m.targets.reads)
	errs = append(errs, m.compileTarget(spec.TargetExpression, path.Child("targetMatchConstraints", "expression"))...)
	errs = append(errs, m.compileMutations(spec.Mutations, path.Child("mutations"))...)
	var aerrs field.ErrorList
	var areads Reads
	m.audits, areads, aerrs = compileAuditAnnotations(comp, spec.AuditAnnotations, path.Child("auditAnnotations"))
	m.reads.merge(areads)
	comp.Release()
	return m, append(errs, aerrs...)
}

// targetType is the type of a target expression: an object, or a list
// of them (items).
var targetType = celgo.MapType(celgo.StringType, celgo.AnyType)

func (m *Mutating) compileTarget(expr string, path *field.Path) field.ErrorList {
	if expr == "" {
		return nil
	}
	p, err := m.comp.Compile(expr, cel.Variable)
	if err != nil {
		return field.ErrorList{field.Invalid(path, expr, err.Error())}
	}
	m.reads.note(p)
	if !p.OutputType().IsExactType(targetType) {
		return field.ErrorList{field.Invalid(path, expr, "output type must be a map")}
	}
	m.target = p
	return nil
}

func (m *Mutating) compileMutations(in []Mutation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(in) == 0 {
		errs = append(errs, field.Required(path, "mutations must not be empty"))
	}
	for i, x := range in {
		mp := path.Index(i)
		var kind cel.Kind
		var ep *field.Path
		switch x.PatchType {
		case PatchTypeApplyConfiguration:
			kind, ep = cel.ApplyConfiguration, mp.Child("applyConfiguration", "expression")
		case PatchTypeJSONPatch:
			kind, ep = cel.JSONPatch, mp.Child("jsonPatch", "expression")
		default:
			errs = append(errs, field.NotSupported(mp.Child("patchType"), x.PatchType, []string{PatchTypeApplyConfiguration, PatchTypeJSONPatch}))
			continue
		}
		if strings.TrimSpace(x.Expression) == "" {
			errs = append(errs, field.Required(ep, "expression is required"))
			continue
		}
		p, err := m.compile(x.Expression, kind)
		if err != nil {
			errs = append(errs, field.Invalid(ep, x.Expression, err.Error()))
			continue
		}
		m.reads.note(p)
		m.mutations = append(m.mutations, mutationProg{prog: p, apply: kind == cel.ApplyConfiguration})
	}
	return errs
}

// compile compiles a mutation, or takes the program of the same mutation
// another body compiled (MutatingOptions.Programs).
func (m *Mutating) compile(expr string, kind cel.Kind) (*cel.Program, error) {
	if m.programs == nil {
		return m.comp.Compile(expr, kind)
	}
	k := programKey{vars: m.vars, expr: expr, kind: kind, params: m.params, namespace: m.namespace}
	if p, ok := m.programs.m[k]; ok {
		return p, nil
	}
	p, err := m.comp.Compile(expr, kind)
	if err == nil {
		if m.programs.m == nil {
			m.programs.m = map[programKey]*cel.Program{}
		}
		m.programs.m[k] = p
	}
	return p, err
}

func (r *Reads) merge(o Reads) {
	r.Namespace = r.Namespace || o.Namespace
	r.Request = r.Request || o.Request
	r.Params = r.Params || o.Params
	r.Resources = r.Resources || o.Resources
}

// Reads returns what the body's expressions read.
func (m *Mutating) Reads() Reads { return m.reads }

// MutateOutcome is the result of a mutating body on a request.
type MutateOutcome struct {
	// Status is NoMatch (a matchCondition is false), Pass (the mutations
	// were applied, whether or not they changed the object) or Error.
	Status Status
	// Object is the object after the mutations (Pass, and Error under the
	// API server's semantics, where the mutations that succeeded stay
	// applied); it shares what the mutations left unchanged with the input.
	Object map[string]any
	// Message is the error's text; Err the error (joined, under the API
	// server's semantics, when several mutations failed).
	Message string
	Err     error
	// Condition tells an error of the matchConditions.
	Condition bool
	// AuditAnnotations are the audit annotations of a Pass (Kyverno
	// semantics), nil when there are none.
	AuditAnnotations map[string]string
}

// Mutate evaluates the body on in and applies its mutations, in order, to
// in.Object: each sees the object the previous one left, and the
// variables keep the value of their first use. Under Kyverno semantics
// the first failure stops the mutations (the object is then unchanged);
// under the API server's, a mutation that fails is skipped and the others
// still apply. schemas types the objects of ApplyConfigurations. in is
// not modified; s is the request's Scope (see cel.NewEvaluation), nil for
// none.
func (m *Mutating) Mutate(ctx context.Context, in *cel.Input, s *cel.Scope, schemas Schemas) MutateOutcome {
	return m.mutate(ctx, in, s, schemas, m.conds)
}

// MutateTarget is Mutate for an existing resource a MutatingPolicy
// mutates (in.Object): its targetMatchConditions select it, instead of
// the matchConditions.
func (m *Mutating) MutateTarget(ctx context.Context, in *cel.Input, s *cel.Scope, schemas Schemas) MutateOutcome {
	return m.mutate(ctx, in, s, schemas, m.targets)
}

// HasTargetExpression tells whether the body resolves its targets with an
// expression (Targets).
func (m *Mutating) HasTargetExpression() bool { return m.target != nil }

// Targets evaluates the matchConditions on the trigger (in) and, when
// they hold, the target expression: the objects it resolves (the object
// it gives, or the items of the list it gives). None when the conditions
// do not hold.
func (m *Mutating) Targets(ctx context.Context, in *cel.Input, s *cel.Scope) ([]map[string]any, error) {
	ev := m.comp.NewEvaluation(ctx, in, s)
	ok, err := m.conds.evalWith(ctx, ev)
	if err != nil || !ok || m.target == nil {
		return nil, err
	}
	v, err := ev.Eval(m.target)
	if err != nil {
		return nil, Cause(err)
	}
	if v == nil || v.Type() == types.NullType {
		// null (resource.Get of an object that does not exist): none
		return nil, nil
	}
	native, err := v.ConvertToNative(mapType)
	if err != nil {
		return nil, fmt.Errorf("target expression: %w", err)
	}
	obj, _ := native.(map[string]any)
	if obj == nil {
		return nil, nil
	}
	items, isList := obj["items"].([]any)
	if !isList {
		return []map[string]any{obj}, nil
	}
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		o, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("target expression: item is not a valid Kubernetes object: %#v", it)
		}
		out = append(out, o)
	}
	return out, nil
}

// Matches evaluates the matchConditions on in (the trigger of a
// MutatingPolicy that mutates existing resources).
func (m *Mutating) Matches(ctx context.Context, in *cel.Input, s *cel.Scope) (bool, error) {
	return m.conds.evalWith(ctx, m.comp.NewEvaluation(ctx, in, s))
}

var mapType = reflect.TypeOf(map[string]any{})

func (m *Mutating) mutate(ctx context.Context, in *cel.Input, s *cel.Scope, schemas Schemas, conds *Conditions) MutateOutcome {
	ev := m.comp.NewEvaluation(ctx, in, s)
	ok, err := conds.evalWith(ctx, ev)
	stopped := err != nil && (errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil)
	if err != nil && (m.sem == Kyverno || !m.ignore || stopped) {
		return MutateOutcome{Status: Error, Message: err.Error(), Err: err, Condition: true}
	}
	if !ok {
		return MutateOutcome{Status: NoMatch}
	}
	obj := in.Object
	var errs []error
	for i := range m.mutations {
		x := &m.mutations[i]
		next, err := m.mutateOne(ev, x, obj, schemas)
		if err != nil {
			if m.sem == Kyverno || errors.Is(err, cel.ErrCostLimit) || ctx.Err() != nil {
				return MutateOutcome{Status: Error, Message: err.Error(), Err: err}
			}
			errs = append(errs, err)
			continue
		}
		if !sameObject(next, obj) {
			obj = next
			ev.SetObject(obj)
		}
	}
	if len(errs) > 0 {
		err := joined(errs)
		return MutateOutcome{Status: Error, Object: obj, Message: err.Error(), Err: err}
	}
	out := MutateOutcome{Status: Pass, Object: obj}
	if out.AuditAnnotations, err = evalAuditAnnotations(ev, m.audits); err != nil {
		return MutateOutcome{Status: Error, Message: err.Error(), Err: err}
	}
	return out
}

// mutateOne evaluates one mutation and applies it to obj.
func (m *Mutating) mutateOne(ev *cel.Evaluation, x *mutationProg, obj map[string]any, schemas Schemas) (map[string]any, error) {
	v, err := ev.Eval(x.prog)
	if err != nil {
		if m.sem == Kyverno {
			err = Cause(err)
		}
		return nil, err
	}
	if x.apply {
		if schemas == nil {
			return nil, errors.New("error applying patch: type converter must not be nil")
		}
		return applyConfiguration(schemas, obj, v, m.guard)
	}
	return applyJSONPatch(obj, v)
}

// sameObject tells whether two trees are the same map.
func sameObject(a, b map[string]any) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}
