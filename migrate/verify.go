package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/internal/autogen"
)

// Verification is what Verify found for each conversion.
type Verification struct {
	Policies []PolicyVerification
}

// PolicyVerification is the comparison of one source policy with its
// outputs.
type PolicyVerification struct {
	// Policy names the source ("ClusterPolicy name").
	Policy string
	// Compared are the output policies compared with the source, and the
	// number of evaluations compared (resources times outputs).
	Compared    []string
	Evaluations int
	// Differences are the evaluations whose results differ.
	Differences []Difference
	// Unverified are the outputs that were not compared, with why (the
	// engine does not evaluate their kind, rules were not converted).
	Unverified []string
	// NotCompared are the resources ("Kind namespace/name: why") on
	// which one side failed for want of a host the verification was not
	// given (engine.ErrNotConfigured: image data without a
	// RegistryClient, ...), or whose generated resources the source
	// itself gives differently on each evaluation (random()): their
	// results say nothing of the conversion.
	NotCompared []string
}

// Difference is one resource on which a source and its output differ.
type Difference struct {
	// Resource is "Kind namespace/name".
	Resource string
	// Output is the output policy, Type its rule type.
	Output, Type string
	// Original and Converted are the results: "pass", "fail", "fail
	// (blocks)", "skip", "error: ...", or a mutated resource's summary.
	Original, Converted string
	// Detail is a path where mutated or generated resources differ.
	Detail string
	// unconfigured, when set, is the error of a side that needed a host
	// the verification has not (engine.ErrNotConfigured), or says that
	// the source's own results vary between evaluations: the results are
	// not compared.
	unconfigured string
}

func (d Difference) String() string {
	s := fmt.Sprintf("%s: %s %s: original %s, converted %s", d.Resource, d.Type, d.Output, d.Original, d.Converted)
	if d.Detail != "" {
		s += " (" + d.Detail + ")"
	}
	return s
}

// VerifyOption configures Verify.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	engineOpts []engine.Option
	request    func(policy string, obj map[string]any) *engine.Request
	values     func(policy, rule string) map[string]any
}

// WithContextValues gives the values that stand for the context entries
// of a policy's rules (a kyverno-test.yaml's values: the engine's
// ContextValues of the source): the variables the entries became take the
// same values in the outputs, so that both read the same context.
func WithContextValues(fn func(policy, rule string) map[string]any) VerifyOption {
	return func(c *verifyConfig) { c.values = fn }
}

// WithEngineOptions gives the engines of both sides their hosts (a
// Client with the cluster's objects, context values, mocks).
func WithEngineOptions(opts ...engine.Option) VerifyOption {
	return func(c *verifyConfig) { c.engineOpts = append(c.engineOpts, opts...) }
}

// WithRequests builds the request a resource is evaluated with for a
// policy (by default a CREATE of the resource).
func WithRequests(fn func(policy string, obj map[string]any) *engine.Request) VerifyOption {
	return func(c *verifyConfig) { c.request = fn }
}

// Verify evaluates the source policy of each conversion and its outputs on
// every resource, through the engine, and reports where their results
// differ: per policy and resource, the validate result (pass, fail and
// whether it blocks, skip, error; a skip and no result are the same), the
// mutated resource, the generated resources. Conversions of
// PolicyExceptions among convs apply on their side: the classic ones to
// the sources, the converted ones to the outputs. An output of a kind the
// engine does not evaluate, or of a type whose rules were not all
// converted, is reported as unverified.
func Verify(ctx context.Context, convs []*Conversion, resources []map[string]any, opts ...VerifyOption) (*Verification, error) {
	cfg := verifyConfig{request: func(_ string, obj map[string]any) *engine.Request {
		return &engine.Request{Operation: api.Create, Object: obj}
	}}
	for _, o := range opts {
		o(&cfg)
	}
	origEng, convEng, err := cfg.engines(convs)
	if err != nil {
		return nil, err
	}
	out := &Verification{}
	for _, c := range convs {
		p, ok := c.Source.(api.ClassicPolicy)
		if !ok {
			continue
		}
		pv, err := verifyPolicy(ctx, &cfg, origEng, convEng, c, p, resources)
		if err != nil {
			return nil, err
		}
		out.Policies = append(out.Policies, *pv)
	}
	return out, nil
}

// engines builds the engines of both sides: the same hosts, each with its
// side's exceptions.
func (cfg *verifyConfig) engines(convs []*Conversion) (*engine.Engine, *engine.Engine, error) {
	var classic []*api.PolicyException
	var cel []*api.CELPolicyException
	for _, c := range convs {
		x, ok := c.Source.(*api.PolicyException)
		if !ok {
			continue
		}
		classic = append(classic, x)
		for _, o := range c.Outputs {
			if cx, ok := o.Object.(*api.CELPolicyException); ok {
				cel = append(cel, cx)
			}
		}
	}
	origOpts := append([]engine.Option(nil), cfg.engineOpts...)
	convOpts := append([]engine.Option(nil), cfg.engineOpts...)
	if len(classic) > 0 {
		set, err := exceptions.Compile(classic)
		if err != nil {
			return nil, nil, fmt.Errorf("exceptions: %w", err)
		}
		origOpts = append(origOpts, engine.WithExceptions(set))
	}
	if len(cel) > 0 {
		set, err := exceptions.Compile(nil, exceptions.CEL(cel...))
		if err != nil {
			return nil, nil, fmt.Errorf("converted exceptions: %w", err)
		}
		convOpts = append(convOpts, engine.WithExceptions(set))
	}
	origEng, err := engine.New(origOpts...)
	if err != nil {
		return nil, nil, err
	}
	convEng, err := engine.New(convOpts...)
	if err != nil {
		return nil, nil, err
	}
	return origEng, convEng, nil
}

// verifyPolicy compares one source with its outputs.
func verifyPolicy(ctx context.Context, cfg *verifyConfig, origEng, convEng *engine.Engine, c *Conversion, p api.ClassicPolicy, resources []map[string]any) (*PolicyVerification, error) {
	pv := &PolicyVerification{Policy: c.Kind + " " + policyKey(c)}
	orig, err := origEng.CompilePolicy(p)
	if err != nil {
		pv.Unverified = append(pv.Unverified, "the source does not compile: "+err.Error())
		return pv, nil
	}
	typed := map[string]bool{}
	for _, o := range c.Outputs {
		typed[o.Type] = true
	}
	for _, r := range c.Rules {
		if !typed[r.Type] {
			typed[r.Type] = true
			pv.Unverified = append(pv.Unverified, fmt.Sprintf("%s rules not converted: %s", r.Type, strings.Join(unconverted(c, r.Type), ", ")))
		}
	}
	for _, o := range c.Outputs {
		if missing := unconverted(c, o.Type); len(missing) > 0 {
			pv.Unverified = append(pv.Unverified, fmt.Sprintf("%s: %s rules not converted: %s", o.Object.GetName(), o.Type, strings.Join(missing, ", ")))
			continue
		}
		obj, ok := o.Object.(api.PolicyObject)
		if !ok {
			continue
		}
		src := obj
		if cfg.values != nil {
			mocked, err := withValues(obj, o, c.Name, cfg.values)
			if err != nil {
				return nil, err
			}
			obj = mocked
		}
		obj = targetsOnly(obj)
		conv, err := convEng.CompilePolicy(obj)
		if err != nil {
			pv.Differences = append(pv.Differences, Difference{Resource: "-", Output: o.Object.GetName(), Type: o.Type,
				Original: "compiles", Converted: "does not compile: " + err.Error()})
			continue
		}
		pv.Compared = append(pv.Compared, o.Object.GetName())
		rules := map[string]bool{}
		for _, r := range o.Rules {
			rules[r] = true
		}
		for _, res := range resources {
			set, err := resourceSet(cfg, convEng, conv, src, o, c.Name, res)
			if err != nil {
				return nil, err
			}
			d, err := compare(ctx, cfg, origEng.NewPolicySet(orig), set, o, rules, res)
			if err != nil {
				return nil, err
			}
			switch {
			case d != nil && d.unconfigured != "":
				pv.NotCompared = append(pv.NotCompared, fmt.Sprintf("%s: %s", d.Resource, d.unconfigured))
			case d != nil:
				pv.Evaluations++
				pv.Differences = append(pv.Differences, *d)
			default:
				pv.Evaluations++
			}
		}
	}
	return pv, nil
}

// resourceSet is the policy set the output is verified with on res: the
// compiled output, or, when the test gives the resource values of its
// own (a kyverno-test.yaml's policies[].resources[].values, in the
// request's Variables), the output with those values too.
func resourceSet(cfg *verifyConfig, eng *engine.Engine, conv *engine.Policy, src api.PolicyObject, o *Output, policy string, res map[string]any) (*engine.PolicySet, error) {
	vars := cfg.request(policy, copyJSON(res)).Variables
	own := map[string]any{}
	for k, v := range vars {
		if !strings.HasPrefix(k, "request.") {
			own[k] = v
		}
	}
	if len(own) == 0 {
		return eng.NewPolicySet(conv), nil
	}
	values := func(policy, rule string) map[string]any {
		out := map[string]any{}
		if cfg.values != nil {
			for k, v := range cfg.values(policy, rule) {
				out[k] = v
			}
		}
		for k, v := range own {
			out[k] = v
		}
		return out
	}
	mocked, err := withValues(src, o, policy, values)
	if err != nil {
		return nil, err
	}
	p, err := eng.CompilePolicy(targetsOnly(mocked))
	if err != nil {
		return nil, fmt.Errorf("%s with the values of %s: %w", o.Object.GetName(), resourceName(res), err)
	}
	return eng.NewPolicySet(p), nil
}

// targetsOnly is a MutatingPolicy with targets as upstream's admission
// webhook runs it: on its targets only (the webhook leaves out the
// policies with targetMatchConstraints when it mutates the request's
// object, as Kyverno leaves a trigger unchanged); upstream's CLI, as the
// engine without a background queue, also mutates the trigger. The
// verified copy has admission off, which the engine reads as that.
func targetsOnly(obj api.PolicyObject) api.PolicyObject {
	mp, ok := obj.(*api.MutatingPolicy)
	if !ok || mp.Spec.TargetMatchConstraints == nil {
		return obj
	}
	cp := *mp
	ev := policiesv1alpha1.MutatingPolicyEvaluationConfiguration{}
	if mp.Spec.EvaluationConfiguration != nil {
		ev = *mp.Spec.EvaluationConfiguration
	}
	off := false
	ev.Admission = &policiesv1alpha1.AdmissionConfiguration{Enabled: &off}
	cp.Spec.EvaluationConfiguration = &ev
	return &cp
}

// withValues is the output with the variables of the context entries
// the values give set to them (a copy; the output when none is given).
func withValues(obj api.PolicyObject, o *Output, policy string, values func(policy, rule string) map[string]any) (api.PolicyObject, error) {
	set := map[string]any{}
	for rule, entries := range o.entries {
		vals := values(policy, rule)
		for entry, variable := range entries {
			if v, ok := valueOf(vals, entry); ok {
				if str, isStr := v.(string); isStr && o.numbers[variable] {
					// the test's text of a number the output computes
					if f, err := strconv.ParseFloat(str, 64); err == nil {
						v = f
					}
				}
				v = jsonText(v)
				if o.imageVars[variable] {
					v = imageDataValue(v)
				}
				set[variable] = v
			}
		}
	}
	// the foreach entries bound with cel.bind: their bound expression
	// is replaced by the value
	binds := map[string][]string{}
	for rule, entries := range o.binds {
		vals := values(policy, rule)
		for entry, b := range entries {
			if v, ok := valueOf(vals, entry); ok {
				v = jsonText(v)
				if b.imageData {
					v = imageDataValue(v)
				}
				prefix := "cel.bind(" + b.name + ", "
				binds[rule] = append(binds[rule], prefix+b.init+", ", prefix+call("dyn", lit(normalize(v))).s+", ")
			}
		}
	}
	if len(set) == 0 && len(binds) == 0 {
		return obj, nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	spec, _ := m["spec"].(map[string]any)
	vars, _ := spec["variables"].([]any)
	var inlined []string
	for _, v := range vars {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if val, ok := set[name]; ok {
			value := call("dyn", lit(normalize(val))).s
			if expr, ok := vm["expression"].(string); ok {
				// the matchConditions bind the variable with cel.bind
				// (see bindVariables)
				prefix := "cel.bind(" + name + ", "
				inlined = append(inlined, prefix+variablesRE.ReplaceAllString(expr, "$1")+", ", prefix+value+", ")
			}
			vm["expression"] = value
		}
	}
	if mcs, ok := spec["matchConditions"].([]any); ok && len(inlined) > 0 {
		r := strings.NewReplacer(inlined...)
		for _, mc := range mcs {
			if m, ok := mc.(map[string]any); ok {
				if e, ok := m["expression"].(string); ok {
					m["expression"] = r.Replace(e)
				}
			}
		}
	}
	if len(binds) > 0 {
		// each expression takes the values of the rules it comes from
		replaceOwned(m, "", o.owners, binds, nil)
	}
	return api.DecodePolicy(api.Document{Object: m, Source: "verification of " + obj.GetName()})
}

// jsonText is a test's value given as the JSON text of a list or a map
// (Kyverno's operators read such a string as the list or map it writes)
// as that list or map; any other value as it is.
func jsonText(v any) any {
	str, ok := v.(string)
	if !ok {
		return v
	}
	trimmed := strings.TrimSpace(str)
	if !strings.HasPrefix(trimmed, "[") && !strings.HasPrefix(trimmed, "{") {
		return v
	}
	var out any
	if err := json.Unmarshal([]byte(trimmed), &out); err != nil {
		return v
	}
	return out
}

// imageDataValue is a test's value of Kyverno's image data under the
// names image.GetMetadata gives its fields.
func imageDataValue(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		out[imageDataField(k)] = x
	}
	return out
}

// replaceOwned applies to the strings of a JSON value at path the
// replacements of the rules that own it (owners by the path of an
// expression: spec.validations[0]); r are those of the enclosing owner.
func replaceOwned(v any, path string, owners map[string][]string, byRule map[string][]string, r *strings.Replacer) any {
	if rules, ok := owners[path]; ok {
		var pairs []string
		for _, rule := range rules {
			pairs = append(pairs, byRule[rule]...)
		}
		r = strings.NewReplacer(pairs...)
	}
	switch t := v.(type) {
	case string:
		if r != nil {
			return r.Replace(t)
		}
	case map[string]any:
		for k, x := range t {
			p := k
			if path != "" {
				p = path + "." + k
			}
			t[k] = replaceOwned(x, p, owners, byRule, r)
		}
	case []any:
		for i, x := range t {
			t[i] = replaceOwned(x, fmt.Sprintf("%s[%d]", path, i), owners, byRule, r)
		}
	}
	return v
}

// valueOf is the value the values give an entry: the entry's own, or
// the paths below it ("entry.data.key") as a map.
func valueOf(vals map[string]any, entry string) (any, bool) {
	if v, ok := vals[entry]; ok {
		return v, true
	}
	var out map[string]any
	for k, v := range vals {
		rest, ok := strings.CutPrefix(k, entry+".")
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		cur := out
		parts := strings.Split(rest, ".")
		for i, p := range parts {
			p = strings.Trim(p, `"`)
			if i == len(parts)-1 {
				cur[p] = v
				break
			}
			next, _ := cur[p].(map[string]any)
			if next == nil {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
	}
	return out, out != nil
}

// unconverted are the rules of a type that were not converted.
func unconverted(c *Conversion, typ string) []string {
	var out []string
	for _, r := range c.Rules {
		if r.Type == typ && !r.Converted() {
			out = append(out, r.Rule)
		}
	}
	return out
}

func policyKey(c *Conversion) string {
	if c.Namespace != "" {
		return c.Namespace + "/" + c.Name
	}
	return c.Name
}

// resourceName is "Kind namespace/name".
func resourceName(obj map[string]any) string {
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	if ns, _ := md["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}

// compare evaluates one resource with both sides for an output's type.
func compare(ctx context.Context, cfg *verifyConfig, orig, conv *engine.PolicySet, o *Output, rules map[string]bool, res map[string]any) (*Difference, error) {
	name := o.Object.GetName()
	d := &Difference{Resource: resourceName(res), Output: name, Type: o.Type}
	origReq := cfg.request(orig.Policies()[0].Source().GetName(), copyJSON(res))
	convReq := convertedRequest(cfg, orig.Policies()[0].Source().GetName(), o, cfg.request(name, copyJSON(res)), origReq.Variables)
	switch o.Type {
	case TypeValidate, TypeVerifyImages:
		a, err := orig.Validate(ctx, origReq)
		if err != nil {
			return nil, err
		}
		b, err := conv.Validate(ctx, convReq)
		if err != nil {
			return nil, err
		}
		d.Original, d.Converted = verdict(a, rules, o.Type), verdict(b, nil, "")
		d.unconfigured = unconfigured(a, rules, o.Type, b)
	case TypeMutate:
		a, err := orig.Mutate(ctx, origReq)
		if err != nil {
			return nil, err
		}
		b, err := conv.Mutate(ctx, convReq)
		if err != nil {
			return nil, err
		}
		// a mutation is compared by the resource it makes (Kyverno reports
		// a rule that changed nothing as a pass or a skip, a
		// MutatingPolicy as a pass): an error is a result of its own
		ea, eb := errorOf(a, rules, o.Type), errorOf(b, nil, "")
		if ea != "" || eb != "" {
			if (ea == "") == (eb == "") {
				return nil, nil
			}
			d.Original, d.Converted = orNone(ea, "mutated"), orNone(eb, "mutated")
			d.unconfigured = unconfigured(a, rules, o.Type, b)
			return d, nil
		}
		if path, same := sameJSON(a.Resource, b.Resource); !same {
			d.Original, d.Converted, d.Detail = "mutated", "mutated differently", "at "+path
			return d, nil
		}
		ta, tb := patchedTargets(resultsOf(a, rules, o.Type)), patchedTargets(resultsOf(b, nil, ""))
		if path, same := sameJSON(ta, tb); !same {
			d.Original, d.Converted = fmt.Sprintf("%d targets patched", len(ta)), fmt.Sprintf("%d targets patched", len(tb))
			d.Detail = "the patched targets differ at " + path
			return d, nil
		}
		return nil, nil
	case TypeGenerate:
		a, err := orig.Generate(ctx, origReq)
		if err != nil {
			return nil, err
		}
		b, err := conv.Generate(ctx, convReq)
		if err != nil {
			return nil, err
		}
		d.Original, d.Converted = verdict(a, rules, o.Type), verdict(b, nil, "")
		if sameVerdict(d.Original, d.Converted) {
			if path, same := sameJSON(generated(a), generated(b)); !same {
				d.Original, d.Converted, d.Detail = "generated", "generated differently", "at "+path
				// a source whose resources differ between two
				// evaluations of one request (random()) cannot be
				// compared there
				again, err := orig.Generate(ctx, cfg.request(orig.Policies()[0].Source().GetName(), copyJSON(res)))
				if err != nil {
					return nil, err
				}
				if p, same := sameJSON(generated(a), generated(again)); !same {
					d.unconfigured = "the source generates differently on each evaluation (at " + p + ": random() or an unfixed clock)"
				}
				return d, nil
			}
			return nil, nil
		}
	}
	if sameVerdict(d.Original, d.Converted) {
		return nil, nil
	}
	return d, nil
}

// sameVerdict compares two verdicts: errors are equal whatever their
// messages, a skip is no result.
func sameVerdict(a, b string) bool {
	switch {
	case a == b, notApplied(a) && notApplied(b):
		return true
	case strings.HasPrefix(a, "error") && strings.HasPrefix(b, "error"):
		return true
	}
	return false
}

func notApplied(v string) bool { return v == "skip" || v == "none" }

// unconfigured says which side of a comparison failed for want of a
// host the verification has not (a RegistryClient for image data, ...):
// "" when neither or both did.
func unconfigured(orig *engine.Response, rules map[string]bool, typ string, conv *engine.Response) string {
	cause := func(rs []engine.RuleResult) string {
		for _, r := range rs {
			if r.Status == engine.StatusError && errors.Is(r.Err, engine.ErrNotConfigured) {
				return r.Err.Error()
			}
		}
		return ""
	}
	a, b := cause(resultsOf(orig, rules, typ)), cause(resultsOf(conv, nil, ""))
	switch {
	case a != "" && b == "":
		return "the source needs a host the verification has not: " + a
	case b != "" && a == "":
		return "the conversion needs a host the verification has not: " + b
	}
	return ""
}

// errorOf is the message of the first error among a response's results
// (of the type, among rules when given), "" when none.
func errorOf(resp *engine.Response, rules map[string]bool, typ string) string {
	for _, r := range resultsOf(resp, rules, typ) {
		if r.Status == engine.StatusError {
			return "error: " + r.Message
		}
	}
	return ""
}

func orNone(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// resultsOf are the results of a response's rules of the type (among rules
// when given).
func resultsOf(resp *engine.Response, rules map[string]bool, typ string) []engine.RuleResult {
	wantType := map[string]engine.RuleType{TypeValidate: engine.Validation, TypeMutate: engine.Mutation,
		TypeGenerate: engine.Generation, TypeVerifyImages: engine.ImageVerify}[typ]
	var out []engine.RuleResult
	for i := range resp.Policies {
		for _, r := range resp.Policies[i].Rules {
			if rules != nil {
				n := r.Name
				if orig, ok := autogen.Original(n); ok {
					n = orig
				}
				if !rules[n] || (wantType != "" && r.Type != wantType) {
					continue
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// verdict is a policy's result on a resource: the first failure or error
// of its rules (of the type, among rules when given), else pass when a
// rule passed, else skip, else none.
func verdict(resp *engine.Response, rules map[string]bool, typ string) string {
	wantType := map[string]engine.RuleType{TypeValidate: engine.Validation, TypeMutate: engine.Mutation,
		TypeGenerate: engine.Generation, TypeVerifyImages: engine.ImageVerify}[typ]
	passed, skipped := false, false
	for i := range resp.Policies {
		pr := &resp.Policies[i]
		for _, r := range pr.Rules {
			if rules != nil {
				n := r.Name
				if orig, ok := autogen.Original(n); ok {
					n = orig
				}
				if !rules[n] || (wantType != "" && r.Type != wantType) {
					continue
				}
			}
			switch r.Status {
			case engine.StatusFail, engine.StatusWarn:
				if pr.Blocks() {
					return "fail (blocks)"
				}
				return "fail"
			case engine.StatusError:
				return "error: " + r.Message
			case engine.StatusPass:
				passed = true
			case engine.StatusSkip:
				skipped = true
			}
		}
	}
	switch {
	case passed:
		return "pass"
	case skipped:
		return "skip"
	}
	return "none"
}

// patchedTargets are the existing resources mutate results patched, in
// a fixed order.
func patchedTargets(rs []engine.RuleResult) []any {
	var out []any
	for _, r := range rs {
		for _, t := range r.PatchedTargets {
			out = append(out, copyJSON(t))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return resourceName(out[i].(map[string]any)) < resourceName(out[j].(map[string]any))
	})
	return out
}

// generated are the resources a response's generate rules produced, in
// a fixed order, without the labels that name the policy and rule.
func generated(resp *engine.Response) []any {
	var out []any
	for _, r := range resp.Rules() {
		for _, g := range r.GeneratedResources {
			c := copyJSON(g)
			if md, ok := c["metadata"].(map[string]any); ok {
				if labels, ok := md["labels"].(map[string]any); ok {
					for k := range labels {
						if strings.HasPrefix(k, "generate.kyverno.io/") || k == "app.kubernetes.io/managed-by" {
							delete(labels, k)
						}
					}
					if len(labels) == 0 {
						delete(md, "labels")
					}
				}
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return resourceName(out[i].(map[string]any)) < resourceName(out[j].(map[string]any))
	})
	return out
}

// copyJSON is a deep copy of a JSON-like object, numbers as float64.
func copyJSON(m map[string]any) map[string]any {
	data, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return m
	}
	return out
}

// sameJSON compares two JSON-like values (numbers by value) and returns
// the first path where they differ.
func sameJSON(a, b any) (string, bool) {
	na, nb := normalize(a), normalize(b)
	if reflect.DeepEqual(na, nb) {
		return "", true
	}
	return diffPath(na, nb, ""), false
}

func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	_ = json.Unmarshal(data, &out)
	return out
}

// diffPath is the first path where a and b differ.
func diffPath(a, b any, path string) string {
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		if !ok {
			return path + "/"
		}
		keys := map[string]bool{}
		for k := range ta {
			keys[k] = true
		}
		for k := range tb {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if !reflect.DeepEqual(ta[k], tb[k]) {
				return diffPath(ta[k], tb[k], path+"/"+k)
			}
		}
	case []any:
		tb, ok := b.([]any)
		if !ok || len(ta) != len(tb) {
			return path + "/"
		}
		for i := range ta {
			if !reflect.DeepEqual(ta[i], tb[i]) {
				return diffPath(ta[i], tb[i], fmt.Sprintf("%s/%d", path, i))
			}
		}
	}
	if path == "" {
		return "/"
	}
	return path
}
