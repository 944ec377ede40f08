package celpolicy

import (
	"context"
	"fmt"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"strings"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Generating is the compiled body of a GeneratingPolicy: matchConditions,
// variables, generate entries (expressions calling generator.Apply, or
// YAML templates) and auditAnnotations. Immutable, safe for concurrent
// use.
type Generating struct {
	comp      *cel.Compiler
	conds     *Conditions
	gens      []generation
	audits    []auditProg
	namespace string
	reads     Reads
}

// generation is one generate entry: an expression or a template.
type generation struct {
	expr *cel.Program
	tmpl *template
}

// CompileGenerating compiles the body of a GeneratingPolicy on env (an
// environment with the generator library). opts.Namespace is a
// NamespacedGeneratingPolicy's namespace: its templates' documents default
// to it and may not leave it (generator.Apply checks the same).
func CompileGenerating(env *cel.Env, spec *policiesv1alpha1.GeneratingPolicySpec, opts Options, path *field.Path) (*Generating, field.ErrorList) {
	var copts []cel.CompilerOption
	if opts.Namespace != "" {
		copts = append(copts, cel.InNamespace(opts.Namespace))
	}
	g := &Generating{comp: env.NewCompiler(false, copts...), namespace: opts.Namespace}
	condComp := env.NewCompiler(false, copts...)
	if opts.Lazy {
		g.comp.Lazy()
		condComp.Lazy()
	}
	conds, errs := CompileConditions(condComp, spec.MatchConditions, path.Child("matchConditions"))
	g.conds, g.reads = conds, conds.reads
	for i, vr := range spec.Variables {
		vp := path.Child("variables").Index(i)
		if vr.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "variable name is required"))
			continue
		}
		p, err := g.comp.AddVariable(vr.Name, vr.Expression)
		if err != nil {
			errs = append(errs, field.Invalid(vp.Child("expression"), vr.Expression, err.Error()))
		}
		g.reads.note(p)
	}
	errs = append(errs, g.compileGenerations(spec, path.Child("generate"))...)
	var aerrs field.ErrorList
	var areads Reads
	g.audits, areads, aerrs = compileAuditAnnotations(g.comp, spec.AuditAnnotations, path.Child("auditAnnotations"))
	g.reads.merge(areads)
	g.comp.Release()
	return g, append(errs, aerrs...)
}

func (g *Generating) compileGenerations(spec *policiesv1alpha1.GeneratingPolicySpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Generation) == 0 {
		errs = append(errs, field.Required(path, "a generating policy needs at least one generate entry"))
	}
	for i, x := range spec.Generation {
		p := path.Index(i)
		switch {
		case x.Template != nil && x.Expression != "":
			errs = append(errs, field.Invalid(p, "", "only one of expression or template may be set"))
		case x.Template != nil:
			interpolate := false
			switch x.Template.Interpolate {
			case "", "none":
			case "cel":
				interpolate = true
			default:
				errs = append(errs, field.NotSupported(p.Child("template", "interpolate"), x.Template.Interpolate, []string{"none", "cel"}))
				continue
			}
			t, err := compileTemplate(g.comp, x.Template.Value, interpolate)
			if err != nil {
				errs = append(errs, field.Invalid(p.Child("template", "value"), x.Template.Value, err.Error()))
				continue
			}
			g.reads.merge(t.reads)
			g.gens = append(g.gens, generation{tmpl: t})
		case strings.TrimSpace(x.Expression) != "":
			prog, err := g.comp.Compile(x.Expression, cel.Validation)
			if err != nil {
				errs = append(errs, field.Invalid(p.Child("expression"), x.Expression, err.Error()))
				continue
			}
			g.reads.note(prog)
			g.gens = append(g.gens, generation{expr: prog})
		default:
			errs = append(errs, field.Required(p, "one of expression or template must be set"))
		}
	}
	return errs
}

// Reads returns what the body's expressions read.
func (g *Generating) Reads() Reads { return g.reads }

// Evaluate evaluates the body on one input: NoMatch when a matchCondition
// does not hold; otherwise every generate entry in order, each handing
// the objects it builds to in.Libraries.Generator (expressions through
// generator.Apply, templates directly), then the audit annotations: Pass
// with them, or Error with the first failure (a matchCondition that could
// not be evaluated included). s is the request's Scope (nil for none).
func (g *Generating) Evaluate(ctx context.Context, in *cel.Input, s *cel.Scope) Outcome {
	ok, err := g.conds.Eval(ctx, in, s)
	if err != nil {
		return Outcome{Status: Error, Message: err.Error(), Err: err}
	}
	if !ok {
		return Outcome{Status: NoMatch}
	}
	ev := g.comp.NewEvaluation(ctx, in, s)
	for i, x := range g.gens {
		if x.tmpl != nil {
			err = g.applyTemplate(ctx, ev, x.tmpl, in)
		} else {
			err = evalGeneration(ev, x.expr)
		}
		if err != nil {
			return Outcome{Status: Error, Message: err.Error(), Index: i, Err: err}
		}
	}
	annotations, err := evalAuditAnnotations(ev, g.audits)
	if err != nil {
		return Outcome{Status: Error, Message: err.Error(), Err: err}
	}
	return Outcome{Status: Pass, AuditAnnotations: annotations}
}

func evalGeneration(ev *cel.Evaluation, p *cel.Program) error {
	v, err := ev.Eval(p)
	if err != nil {
		return Cause(err)
	}
	if _, ok := v.(types.Bool); !ok {
		return fmt.Errorf("type conversion error from '%s' to 'bool'", v.Type().TypeName())
	}
	return nil
}

// applyTemplate renders a template and hands its documents to the
// generator, grouped by their namespace in order of appearance.
func (g *Generating) applyTemplate(ctx context.Context, ev *cel.Evaluation, t *template, in *cel.Input) error {
	objs, err := t.render(ev)
	if err != nil {
		return fmt.Errorf("failed to render generation template: %w", err)
	}
	var order []string
	byNS := map[string][]map[string]any{}
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		if g.namespace != "" {
			switch {
			case ns == "":
				ns = g.namespace
			case ns != g.namespace:
				return fmt.Errorf("cross-namespace generation denied: a policy in namespace %q cannot generate resources into namespace %q", g.namespace, ns)
			}
		}
		if _, seen := byNS[ns]; !seen {
			order = append(order, ns)
		}
		byNS[ns] = append(byNS[ns], o)
	}
	libs := in.Libraries
	if libs == nil || libs.Generator == nil {
		return fmt.Errorf("failed to generate resources: generator library: no generator: %w", cel.ErrNotConfigured)
	}
	for _, ns := range order {
		hctx, cancel := ctx, context.CancelFunc(func() {})
		if libs.HostCallTimeout > 0 {
			hctx, cancel = context.WithTimeout(ctx, libs.HostCallTimeout)
		}
		err := libs.Generator.GenerateResources(hctx, ns, byNS[ns])
		cancel()
		if err != nil {
			return fmt.Errorf("failed to generate resources: %w", err)
		}
	}
	return nil
}
