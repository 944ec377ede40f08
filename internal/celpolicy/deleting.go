package celpolicy

import (
	"context"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Deleting is the compiled body of a DeletingPolicy: its variables and its
// conditions, which see the variables. Immutable, safe for concurrent use.
type Deleting struct {
	comp  *cel.Compiler
	conds *Conditions
	reads Reads
}

// CompileDeleting compiles the body of a DeletingPolicy on env.
func CompileDeleting(env *cel.Env, spec *policiesv1alpha1.DeletingPolicySpec, opts Options, path *field.Path) (*Deleting, field.ErrorList) {
	var copts []cel.CompilerOption
	if opts.Namespace != "" {
		copts = append(copts, cel.InNamespace(opts.Namespace))
	}
	d := &Deleting{comp: env.NewCompiler(false, copts...)}
	var errs field.ErrorList
	for i, vr := range spec.Variables {
		vp := path.Child("variables").Index(i)
		if vr.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "variable name is required"))
			continue
		}
		p, err := d.comp.AddVariable(vr.Name, vr.Expression)
		if err != nil {
			errs = append(errs, field.Invalid(vp.Child("expression"), vr.Expression, err.Error()))
		}
		d.reads.note(p)
	}
	conds, cerrs := CompileConditions(d.comp, spec.Conditions, path.Child("conditions"))
	d.conds = conds
	d.reads.Namespace = d.reads.Namespace || conds.reads.Namespace
	d.reads.Request = d.reads.Request || conds.reads.Request
	d.reads.Resources = d.reads.Resources || conds.reads.Resources
	d.comp.Release()
	return d, append(errs, cerrs...)
}

// Reads returns what the body's expressions read.
func (d *Deleting) Reads() Reads { return d.reads }

// Evaluate reports whether every condition holds on the input (the
// object to delete): false when one is false; otherwise the errors of
// those that could not be evaluated, or true. s is the request's Scope
// (nil for none).
func (d *Deleting) Evaluate(ctx context.Context, in *cel.Input, s *cel.Scope) (bool, error) {
	return d.conds.Eval(ctx, in, s)
}
