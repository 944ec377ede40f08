package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"runtime/debug"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/celpolicy"
	"github.com/gavelpolicy/gavel/internal/deepcopy"
	"github.com/gavelpolicy/gavel/internal/genlabel"
	"github.com/gavelpolicy/gavel/internal/match"
)

// generatingPolicy is the body of a GeneratingPolicy or
// NamespacedGeneratingPolicy.
type generatingPolicy struct {
	// namespace is a NamespacedGeneratingPolicy's
	namespace string
	env       *cel.Env
	// match are the matchConstraints; anyOp the same for every operation:
	// upstream's webhook receives every operation of the policy's
	// resources, and its handler decides what to queue
	match, anyOp *celpolicy.Constraints
	// conds are the matchConditions alone (what admission checks)
	conds *celpolicy.Conditions
	body  *celpolicy.Generating
	// sync is evaluation.synchronize; onDelete is a resource rule naming
	// the DELETE operation (generation on deletion)
	sync, onDelete bool
}

// generatingBody is implemented by the bodies of kinds that take part in
// Generate.
type generatingBody interface {
	generate(rs *reqState, p *Policy, admission bool) (PolicyResult, []*api.UpdateRequest)
}

// compileGeneratingPolicy compiles a GeneratingPolicy.
func (e *Engine) compileGeneratingPolicy(p *api.GeneratingPolicy) (*Policy, error) {
	spec := &p.Spec
	cp := &Policy{src: p, kind: api.KindOf(p), key: policykey.Key(p), annotations: p.GetAnnotations(),
		background: true, admission: spec.AdmissionEnabled(), failurePolicy: api.Fail,
		failureAction: api.Audit, action: api.Audit, types: typeBit(Generation)}
	if wc := spec.WebhookConfiguration; wc != nil && wc.TimeoutSeconds != nil {
		cp.timeout = *wc.TimeoutSeconds
	}
	path := field.NewPath("spec")
	env, err := e.kindEnv(cel.GeneratingPolicyLibraries)
	if err != nil {
		return nil, &CompileError{Policy: cp.key, Errs: field.ErrorList{field.InternalError(path, err)}}
	}
	b := &generatingPolicy{namespace: p.GetNamespace(), env: env, sync: spec.SynchronizationEnabled()}
	cp.skipBackground = spec.SkipBackgroundRequestsEnabled()
	if !api.IsNamespaced(p) {
		b.namespace = ""
	}
	var errs field.ErrorList
	if spec.MatchConstraints == nil || len(spec.MatchConstraints.ResourceRules) == 0 {
		errs = append(errs, field.Required(path.Child("matchConstraints"), "a matchConstraints with at least one resource rule is required"))
	}
	var merrs field.ErrorList
	b.match, merrs = celpolicy.CompileConstraints(spec.MatchConstraints, path.Child("matchConstraints"), false)
	errs = append(errs, merrs...)
	if spec.MatchConstraints != nil {
		b.anyOp, _ = celpolicy.CompileConstraints(anyOperation(spec.MatchConstraints), path.Child("matchConstraints"), false)
		b.onDelete = namesOperation(spec.MatchConstraints, admissionregistrationv1.Delete)
	}
	var copts []cel.CompilerOption
	if b.namespace != "" {
		copts = append(copts, cel.InNamespace(b.namespace))
	}
	b.conds, _ = celpolicy.CompileConditions(env.NewCompiler(false, copts...), spec.MatchConditions, path.Child("matchConditions"))
	var berrs field.ErrorList
	b.body, berrs = celpolicy.CompileGenerating(env, spec, celpolicy.Options{Namespace: b.namespace}, path)
	errs = append(errs, berrs...)
	if len(errs) > 0 {
		return nil, &CompileError{Policy: cp.key, Errs: errs}
	}
	cp.body = b
	cp.variants = ownVariant(spec.MatchConstraints, spec.MatchConditions)
	return cp, nil
}

// anyOperation returns a copy of m whose resource rules name every
// operation.
func anyOperation(m *admissionregistrationv1.MatchResources) *admissionregistrationv1.MatchResources {
	out := m.DeepCopy()
	for i := range out.ResourceRules {
		out.ResourceRules[i].Operations = []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll}
	}
	return out
}

// namesOperation reports whether a resource rule of m names op.
func namesOperation(m *admissionregistrationv1.MatchResources, op admissionregistrationv1.OperationType) bool {
	for _, r := range m.ResourceRules {
		for _, o := range r.Operations {
			if o == op {
				return true
			}
		}
	}
	return false
}

func (b *generatingPolicy) validate(_ *reqState, _ *Policy, out []PolicyResult) []PolicyResult {
	return out
}

func (b *generatingPolicy) jsonMode() bool { return false }

// generate evaluates the policy for Generate. At admission it only decides,
// as upstream's webhook handler, which UpdateRequest to queue (the
// controller evaluates the policy); otherwise it evaluates the policy and
// returns its result with the objects it generates.
func (b *generatingPolicy) generate(rs *reqState, p *Policy, admission bool) (pr PolicyResult, urs []*api.UpdateRequest) {
	pr = PolicyResult{Policy: p, Resource: rs.obj, PatchedResource: rs.obj, FailureAction: p.failureAction}
	if (rs.req.Background && !p.background) || (!rs.req.Background && !p.admission) ||
		(b.namespace != "" && !match.NamespacedPolicyApplies(b.namespace, rs.matchRes)) ||
		rs.e.backgroundRequest(rs, p) {
		return pr, nil
	}
	start := len(rs.results)
	defer func() {
		if v := recover(); v != nil {
			rs.results = rs.results[:start]
			b.result(rs, p, StatusError, "policy evaluation panicked", fmt.Errorf("%v\n%s", v, firstFrames(debug.Stack())))
			urs = nil
		}
		if n := len(rs.results); n > start {
			pr.Rules = rs.results[start:n:n]
		}
	}()
	if admission {
		return pr, b.admissionRequests(rs, p)
	}
	b.evaluate(rs, p)
	return pr, nil
}

// result appends a result of the policy (named after it, as upstream).
func (b *generatingPolicy) result(rs *reqState, p *Policy, status Status, msg string, err error) *RuleResult {
	res := rs.celKindResult(p.name(), status, msg, err, nil)
	res.Type = Generation
	return res
}

// evaluate evaluates the policy on the request as upstream's engine does:
// matchConstraints, CEL PolicyExceptions, then the body, whose
// generator.Apply calls collect the downstream objects.
func (b *generatingPolicy) evaluate(rs *reqState, p *Policy) {
	kd := rs.kindData()
	ok, err := b.match.Matches(&kd.attrs)
	if err != nil {
		b.result(rs, p, StatusError, "failed to execute matching: "+err.Error(), err)
		return
	}
	if !ok {
		return
	}
	gen := &gpolGenerator{rs: rs, p: p, b: b}
	in, err := b.input(rs, gen)
	if err != nil {
		b.result(rs, p, StatusError, "failed to evaluate policy: "+err.Error(), err)
		return
	}
	excepted, extra, err := rs.celExceptions(b.env, p, in, true)
	if err != nil {
		b.result(rs, p, StatusError, "failed to evaluate policy: "+err.Error(), err)
		return
	}
	if len(excepted) > 0 {
		rs.exceptedResult(excepted)
		rs.results[len(rs.results)-1].Type = Generation
		return
	}
	in.Extra = extra
	o := b.body.Evaluate(rs.ctx, in, rs.celScope())
	switch o.Status {
	case celpolicy.NoMatch:
	case celpolicy.Pass:
		res := b.result(rs, p, StatusPass, "policy evaluated successfully", nil)
		res.Properties = o.AuditAnnotations
		res.GeneratedResources = gen.objects
	default:
		b.result(rs, p, StatusError, "failed to evaluate policy: "+o.Message, o.Err)
	}
}

// input binds the request for the body, with gen as the generator
// library's host.
func (b *generatingPolicy) input(rs *reqState, gen *gpolGenerator) (*cel.Input, error) {
	kd := rs.kindData()
	libs := *rs.e.celLibs
	libs.Generator = gen
	in := &cel.Input{Object: kd.attrs.Object, OldObject: kd.attrs.OldObject, Libraries: &libs}
	reads := b.body.Reads()
	if reads.Request {
		in.Request = rs.kindRequest()
	}
	if reads.Namespace {
		ns, err := rs.kindNamespace()
		if err != nil {
			return nil, err
		}
		in.Namespace = ns
	}
	return in, nil
}

// admissionRequests are the UpdateRequests upstream's webhook handler
// queues for a request its webhook received (every operation on the
// policy's resources; with synchronize, matchConditions filter CREATE
// only): on DELETE, generation when a resource rule names DELETE, else
// the deletion of the trigger's downstream when the policy synchronizes;
// otherwise generation, synchronized on UPDATE. Dry runs queue nothing.
func (b *generatingPolicy) admissionRequests(rs *reqState, p *Policy) []*api.UpdateRequest {
	if rs.req.DryRun || b.anyOp == nil {
		return nil
	}
	kd := rs.kindData()
	ok, err := b.anyOp.Matches(&kd.attrs)
	if err != nil {
		b.result(rs, p, StatusError, "failed to execute matching: "+err.Error(), err)
		return nil
	}
	if !ok {
		return nil
	}
	if rs.op == api.Create || !b.sync {
		in := &cel.Input{Object: kd.attrs.Object, OldObject: kd.attrs.OldObject, Libraries: rs.e.celLibs}
		if b.conds.Reads().Request {
			in.Request = rs.kindRequest()
		}
		// a condition that fails to evaluate queues the request: the
		// controller evaluates the policy and reports the error
		if ok, err := b.conds.Eval(rs.ctx, in, rs.celScope()); err == nil && !ok {
			return nil
		}
	}
	trigger := genlabel.Spec(rs.obj)
	rc := api.RuleContext{Rule: p.key, Trigger: trigger}
	switch {
	case rs.op == api.Delete && b.onDelete:
	case rs.op == api.Delete && b.sync:
		rc.DeleteDownstream = true
	case rs.op == api.Delete:
		return nil
	case rs.op == api.Update:
		rc.Synchronize = b.sync
	}
	return []*api.UpdateRequest{rs.e.newUpdateRequest(rs, p, api.URCELGenerate, trigger, []api.RuleContext{rc})}
}

// gpolGenerator is the generator library's host of one evaluation: it
// collects the objects generator.Apply (and templates) generate, as
// upstream's generator would write them, with upstream's tracking labels.
type gpolGenerator struct {
	rs      *reqState
	p       *Policy
	b       *generatingPolicy
	objects []map[string]any
}

// GenerateResources implements cel.Generator.
func (g *gpolGenerator) GenerateResources(ctx context.Context, namespace string, objs []map[string]any) error {
	for _, o := range objs {
		items := []map[string]any{o}
		if list, ok := o["items"].([]any); ok {
			items = items[:0]
			for i, x := range list {
				m, ok := x.(map[string]any)
				if !ok {
					return fmt.Errorf("item %d of the list is not an object", i)
				}
				items = append(items, m)
			}
		}
		for _, item := range items {
			obj, err := g.downstream(namespace, item)
			if err != nil {
				return err
			}
			g.objects = append(g.objects, obj)
		}
	}
	return ctx.Err()
}

// downstream is the object generated from item in namespace: cluster-scoped
// kinds have no namespace (a namespaced policy may not generate them),
// owner references are dropped across namespaces, server-set metadata is
// dropped, and the tracking labels (and the source's, for an object read
// from the cluster: it has a resourceVersion) are added.
func (g *gpolGenerator) downstream(namespace string, item map[string]any) (map[string]any, error) {
	obj, _ := deepcopy.Value(normalize(item)).(map[string]any)
	if obj == nil {
		return nil, errors.New("generated object is not an object")
	}
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	target := namespace
	if !g.namespaced(av, kind) {
		if namespace != "" && g.b.namespace != "" {
			return nil, fmt.Errorf("cross-scope generation denied: a policy scoped to namespace %q cannot generate cluster-scoped resource %s/%s", namespace, av, kind)
		}
		target = ""
	}
	md := metaOf(obj)
	srcName, srcNS := objectMeta(obj)
	if srcNS != "" && srcNS != target {
		delete(md, "ownerReferences")
	}
	labels := labelsOf(md)
	if rv, _ := md["resourceVersion"].(string); rv != "" {
		group, version := splitAPIVersion(av)
		uid, _ := md["uid"].(string)
		labels[genlabel.SourceUID] = uid
		labels[genlabel.SourceName] = srcName
		labels[genlabel.SourceNS] = srcNS
		labels[genlabel.SourceKind] = kind
		labels[genlabel.SourceGroup] = group
		labels[genlabel.SourceVersion] = version
	}
	g.trackingLabels(labels)
	for _, k := range []string{"uid", "selfLink", "creationTimestamp", "managedFields", "resourceVersion"} {
		delete(md, k)
	}
	if target != "" {
		md["namespace"] = target
	} else {
		delete(md, "namespace")
	}
	return obj, nil
}

// namespaced tells whether a kind is namespaced: the Client's answer when
// it knows (NamespacedKinds), else the built-in kinds' scope; unknown
// kinds are namespaced, as upstream assumes.
func (g *gpolGenerator) namespaced(apiVersion, kind string) bool {
	if nk, ok := g.rs.e.cfg.client.(NamespacedKinds); ok && apiVersion != "" && kind != "" {
		if ns, err := nk.IsNamespaced(apiVersion, kind); err == nil {
			return ns
		}
	}
	return kindScope(kind) != scopeCluster
}

// trackingLabels are upstream's labels of a GeneratingPolicy's downstream
// (no rule name), with the policy's namespace as for generate rules.
func (g *gpolGenerator) trackingLabels(labels map[string]any) {
	trigger := g.rs.obj
	tav, _ := trigger["apiVersion"].(string)
	group, version := splitAPIVersion(tav)
	tkind, _ := trigger["kind"].(string)
	tname, tns := objectMeta(trigger)
	tmd, _ := trigger["metadata"].(map[string]any)
	tuid, _ := tmd["uid"].(string)
	labels[genlabel.ManagedBy] = genlabel.ManagedByValue
	labels[genlabel.PolicyName] = g.p.name()
	labels[genlabel.PolicyNamespace] = g.b.namespace
	labels[genlabel.TriggerGroup] = group
	labels[genlabel.TriggerVersion] = version
	labels[genlabel.TriggerKind] = tkind
	labels[genlabel.TriggerNS] = tns
	labels[genlabel.TriggerUID] = tuid
	if len(tname) <= 63 {
		labels[genlabel.TriggerName] = tname
	}
}
