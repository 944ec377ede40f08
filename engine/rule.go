package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
)

// rule is a compiled rule.
type rule struct {
	name  string
	src   *api.Rule
	typ   RuleType
	match *match.Rule
	// kinds are the kind selectors of the match block (see kindCands)
	kinds         []match.KindSelector
	context       []*contextEntry
	preconditions *condSet
	// celPre are the celPreconditions of a rule that is not a
	// validate.cel rule (see compileCEL).
	celPre *celConds
	// precondKey names the preconditions block by its text when its
	// outcome depends only on the request (see reqState.rulePreconditions);
	// "" otherwise.
	precondKey     string
	validate       *validateSpec
	mutate         *mutateSpec
	generate       *generateSpec
	verify         *verifySpec
	failureAction  *api.ValidationFailureAction
	overrides      []override
	allowExisting  bool
	emitWarning    bool
	properties     map[string]string
	skipBackground bool
	// needsImages is set when an expression of the rule reads "images".
	needsImages bool
	// passMessage is upstream's message of a passed validate rule.
	passMessage string
	unsupported string
}

func (e *Engine) compileRule(p *Policy, r *api.Rule, path *field.Path) (*rule, field.ErrorList) {
	cr := &rule{name: r.Name, src: r, properties: r.ReportProperties,
		passMessage: fmt.Sprintf("validation rule '%s' passed.", r.Name)}
	var errs field.ErrorList
	m, merrs := match.Compile(r.MatchResources, r.ExcludeResources, path,
		match.Background(p.background), match.Namespaced(api.IsNamespaced(p.src)))
	errs = append(errs, merrs...)
	cr.match = m
	if m != nil {
		cr.kinds = m.Kinds()
	}
	cr.skipBackground = r.SkipBackgroundRequests == nil || *r.SkipBackgroundRequests
	cr.context, errs = e.compileContext(r.Context, path.Child("context"), errs)
	cr.preconditions, errs = e.compileConditions(r.Preconditions, path.Child("preconditions"), errs)
	cr.precondKey = e.conditionsKey(r.Preconditions, cr.preconditions)
	switch {
	case r.Validation != nil:
		cr.typ = Validation
		v := r.Validation
		cr.failureAction = v.FailureAction
		if cr.failureAction == nil {
			cr.failureAction = v.ValidationFailureAction
		}
		ovs := v.FailureActionOverrides
		if len(ovs) == 0 {
			ovs = v.ValidationFailureActionOverrides
		}
		var oerrs field.ErrorList
		cr.overrides, oerrs = compileOverrides(ovs, path.Child("validate", "failureActionOverrides"))
		errs = append(errs, oerrs...)
		cr.allowExisting = v.AllowExistingViolations == nil || *v.AllowExistingViolations
		cr.validate, errs = e.compileValidate(r.Name, v, path.Child("validate"), errs)
	case r.Mutation != nil:
		cr.typ = Mutation
		cr.mutate, errs = e.compileMutate(r, path.Child("mutate"), errs)
	case r.Generation != nil:
		cr.typ = Generation
		cr.generate, errs = e.compileGenerate(r.Generation, path.Child("generate"), errs)
	case len(r.VerifyImages) > 0:
		cr.typ = ImageVerify
		// the first entry's action, Enforce when any entry enforces
		// (upstream's ruleAction)
		for _, iv := range r.VerifyImages {
			if iv.FailureAction != nil && (cr.failureAction == nil || iv.FailureAction.IsEnforce()) {
				cr.failureAction = iv.FailureAction
			}
		}
		cr.verify, errs = e.compileVerifyImages(r, path, errs)
	}
	errs = e.compileCEL(cr, r, path, errs)
	// the rule as a JSON-like tree, for the checks that walk every string
	var doc map[string]any
	docErr := remarshal(r, &doc)
	errs = append(errs, e.checkExpressions(r, doc, docErr, path, p.background)...)
	if docErr == nil {
		errs = append(errs, e.checkSubstitutionDepth(doc, path)...)
	}
	cr.needsImages = docErr != nil || readsImages(doc)
	if len(errs) > 0 {
		return nil, errs
	}
	return cr, nil
}

// validateSpec is a compiled validate body. The same shape serves a rule
// and each level of foreach.
type validateSpec struct {
	message     *template
	rawMessage  string
	body        *validateBody
	podSecurity *podsecurity.Check
	cel         *celRule
	manifests   *manifestSpec
	unsupported string
}

type validateBody struct {
	context       []*contextEntry
	preconditions *condSet
	pattern       *patternSpec
	anyPattern    []*patternSpec
	deny          *condSet
	foreach       []*foreachValidate
}

type foreachValidate struct {
	list         *listExpr
	elementScope *bool
	body         *validateBody
	// recycle is set when the body, at every depth, loads no context
	// entries: the variables of its elements then reach nothing but the
	// body's own evaluation (no host call), and an element's scope and
	// variable map are reused for the next one (see scope.recycled).
	recycle bool
}

// loadsContext reports whether a validate body or a foreach in it, at any
// depth, has context entries.
func (b *validateBody) loadsContext() bool {
	if b == nil {
		return false
	}
	if len(b.context) > 0 {
		return true
	}
	for _, fe := range b.foreach {
		if fe.body.loadsContext() {
			return true
		}
	}
	return false
}

func (e *Engine) compileValidate(name string, v *api.Validation, path *field.Path, errs field.ErrorList) (*validateSpec, field.ErrorList) {
	vs := &validateSpec{rawMessage: v.Message}
	if v.Message != "" {
		t, err := e.compileTemplate(v.Message)
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("message"), v.Message, err.Error()))
		}
		vs.message = t
	}
	switch {
	case v.PodSecurity != nil:
		c, err := e.psa.Compile(*v.PodSecurity, podsecurity.WithRuleName(name))
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("podSecurity"), v.PodSecurity.Level, err.Error()))
		}
		vs.podSecurity = c
		return vs, errs
	case v.CEL != nil:
		// compiled with the rule's celPreconditions (compileCEL)
		return vs, errs
	case v.Manifests != nil:
		vs.manifests, errs = e.compileManifests(v.Manifests, path.Child("manifests"), errs)
		return vs, errs
	case v.Assert != nil:
		vs.unsupported = "validate.assert rules are not supported by gavel"
		return vs, errs
	}
	vs.body, errs = e.compileValidateBody(nil, nil, v.Pattern, v.AnyPattern, v.Deny, v.ForEachValidation, path, "/validate", 0, errs)
	return vs, errs
}

// compileValidateBody compiles one level of a validate rule; base is the
// upstream JSON path of the level ("/validate", "/validate/foreach/0"),
// from which {{ @ }} is resolved.
func (e *Engine) compileValidateBody(ctxEntries []api.ContextEntry, pre any, pattern, anyPattern any, deny *api.Deny, foreach []api.ForEachValidation, path *field.Path, base string, depth int, errs field.ErrorList) (*validateBody, field.ErrorList) {
	b := &validateBody{}
	b.context, errs = e.compileContext(ctxEntries, path.Child("context"), errs)
	b.preconditions, errs = e.compileConditions(pre, path.Child("preconditions"), errs)
	if pattern != nil {
		ps, err := e.compilePattern(pattern, "")
		if err != nil {
			errs = append(errs, field.Invalid(path.Child("pattern"), "", err.Error()))
		}
		b.pattern = ps
	}
	if anyPattern != nil {
		list, ok := anyPattern.([]any)
		if !ok {
			errs = append(errs, field.Invalid(path.Child("anyPattern"), "", "anyPattern must be a list"))
		}
		for i, p := range list {
			ps, err := e.compilePattern(p, "")
			if err != nil {
				errs = append(errs, field.Invalid(path.Child("anyPattern").Index(i), "", err.Error()))
			}
			b.anyPattern = append(b.anyPattern, ps)
		}
	}
	if deny != nil {
		b.deny, errs = e.compileConditions(deny.Conditions, path.Child("deny", "conditions"), errs)
		if b.deny == nil {
			b.deny = &condSet{}
		}
	}
	if len(foreach) > 0 && depth >= e.cfg.limits.MaxForeachDepth {
		return b, append(errs, field.Invalid(path.Child("foreach"), "", fmt.Sprintf("foreach nesting exceeds %d", e.cfg.limits.MaxForeachDepth)))
	}
	for i := range foreach {
		f := &foreach[i]
		fp := path.Child("foreach").Index(i)
		fv := &foreachValidate{elementScope: f.ElementScope}
		l, err := e.compileList(f.List)
		if err != nil {
			errs = append(errs, field.Invalid(fp.Child("list"), f.List, err.Error()))
		}
		fv.list = l
		var nested []api.ForEachValidation
		if f.ForEachValidation != nil {
			if err := remarshal(f.ForEachValidation, &nested); err != nil {
				errs = append(errs, field.Invalid(fp.Child("foreach"), "", err.Error()))
			}
		}
		fv.body, errs = e.compileValidateBody(f.Context, f.Preconditions, f.Pattern, f.AnyPattern, f.Deny, nested, fp, fmt.Sprintf("%s/foreach/%d", base, i), depth+1, errs)
		fv.recycle = !fv.body.loadsContext()
		b.foreach = append(b.foreach, fv)
	}
	return b, errs
}

// remarshal converts a free-form JSON value into a typed one.
func remarshal(in any, out any) error {
	raw, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// readsImages reports whether an expression of the rule may read the
// images variable: a {{ }} template, a foreach list or a jmesPath naming
// "images". Other mentions (podSecurity exclusions list images too) do not
// make every request extract the images of its object.
func readsImages(doc map[string]any) bool {
	var walk func(v any, key string) bool
	walk = func(v any, key string) bool {
		switch t := v.(type) {
		case string:
			return strings.Contains(t, "images") && (strings.Contains(t, "{{") || key == "list" || key == "jmesPath")
		case []any:
			for _, x := range t {
				if walk(x, key) {
					return true
				}
			}
		case map[string]any:
			for k, x := range t {
				if strings.Contains(k, "images") && strings.Contains(k, "{{") {
					return true
				}
				if walk(x, k) {
					return true
				}
			}
		}
		return false
	}
	return walk(doc, "")
}
