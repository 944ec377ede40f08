package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	admv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// celHook is what the webhooks need of a policy of a CEL kind
// (ValidatingPolicy, ImageValidatingPolicy, MutatingPolicy and their
// Namespaced kinds), as upstream's webhook controller derives it: the
// resource rules of its matchConstraints and of its Pod controller
// variants, its selectors (a namespaced policy's pinned to its
// namespace), the match conditions the API server can evaluate, Exact
// matching and its own timeout.
type celHook struct {
	// validating: the validating webhook serves it (validations, image
	// checks, the UpdateRequests of mutateExisting); mutating: the
	// mutating webhook (mutations, image digests)
	validating, mutating bool
	rules                []admv1.RuleWithOperations
	nsSelector           *metav1.LabelSelector
	objSelector          *metav1.LabelSelector
	conditions           []admv1.MatchCondition
	exact                bool
	timeout              bool
}

// celHookOf returns the webhook part of a policy of a CEL kind the
// webhooks serve, nil for another policy (ClusterPolicy, Policy, the API
// server's kinds, a ValidatingPolicy of the JSON mode).
func celHookOf(p *engine.Policy) *celHook {
	var h celHook
	vs := p.Variants()
	if len(vs) == 0 {
		return nil // a ValidatingPolicy of the JSON mode
	}
	switch src := p.Source().(type) {
	case *api.ValidatingPolicy:
		h.validating = true
	case *api.ImageValidatingPolicy:
		md := src.Spec.ValidationConfigurations.MutateDigest
		h.validating, h.mutating = true, md == nil || *md
	case *api.MutatingPolicy:
		t := src.Spec.TargetMatchConstraints
		targeted := t != nil && (len(t.ResourceRules) > 0 || t.Expression != "")
		// the trigger is mutated at admission unless targetMatchConstraints
		// name the resources to mutate; mutateExisting queues its
		// UpdateRequests where Generate runs, after validation
		h.mutating = src.Spec.AdmissionEnabled() && !targeted
		h.validating = src.Spec.MutateExistingEnabled()
	case *api.GeneratingPolicy:
		// generate runs where validation does, on admitted requests
		h.validating = src.Spec.AdmissionEnabled()
	default:
		return nil
	}
	m := vs[0].MatchConstraints
	if m == nil {
		return nil
	}
	for _, v := range vs {
		if v.MatchConstraints == nil {
			continue
		}
		for _, r := range v.MatchConstraints.ResourceRules {
			h.rules = append(h.rules, r.RuleWithOperations)
		}
	}
	h.nsSelector, h.objSelector = emptyToNil(m.NamespaceSelector), emptyToNil(m.ObjectSelector)
	if ns := p.Source().GetNamespace(); ns != "" {
		// a namespaced policy applies to its namespace only
		h.nsSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{ns},
		}}}
	}
	h.exact = m.MatchPolicy != nil && *m.MatchPolicy == admv1.Exact
	_, h.timeout = p.TimeoutSeconds()
	h.conditions = webhookConditions(vs)
	return &h
}

// webhookConditions returns the match conditions of the webhook of a
// policy with its variants, as upstream writes them: the conditions of
// the policy and of each variant, when the API server can evaluate all of
// them, each wrapped to apply to its own targets only when the policy
// has Pod controller variants.
func webhookConditions(vs []engine.Variant) []admv1.MatchCondition {
	own := validConditions(vs[0].MatchConditions)
	if len(own) == 0 {
		return nil
	}
	if len(vs) == 1 {
		return own
	}
	out := wrapConditions("", []schema.GroupVersionKind{{Version: "v1", Kind: "Pod"}}, own)
	for _, v := range vs[1:] {
		out = append(out, wrapConditions(v.Config, v.Kinds, validConditions(v.MatchConditions))...)
	}
	return out
}

// wrapConditions makes conditions apply to objects of the targets only,
// named after the variant's configuration, as upstream's autogen does.
func wrapConditions(config string, targets []schema.GroupVersionKind, conds []admv1.MatchCondition) []admv1.MatchCondition {
	if len(targets) == 0 || len(conds) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, t := range targets {
		av := t.Version
		if t.Group != "" {
			av = t.Group + "/" + t.Version
		}
		set[fmt.Sprintf(`(object.apiVersion == '%s' && object.kind =='%s')`, av, t.Kind)] = true
	}
	pre := make([]string, 0, len(set))
	for s := range set {
		pre = append(pre, s)
	}
	sort.Strings(pre)
	prefix := "autogen"
	if config != "" {
		prefix += "-" + config
	}
	out := make([]admv1.MatchCondition, 0, len(conds))
	for _, c := range conds {
		out = append(out, admv1.MatchCondition{
			Name:       prefix + "-" + c.Name,
			Expression: fmt.Sprintf(`!(%s) || (%s)`, strings.Join(pre, " || "), c.Expression),
		})
	}
	return out
}

// matchConditionCompiler is the API server's compiler of webhook match
// conditions (its environment without params, with the authorizer),
// built on first use; it is immutable.
var matchConditionCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// boolExpression is a match condition for the API server's compiler.
type boolExpression string

func (e boolExpression) GetExpression() string      { return string(e) }
func (e boolExpression) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.BoolType} }

// validConditions returns conds when the API server accepts all of them
// in a webhook (at most 64, named, unique, compiling in its environment):
// a policy's conditions that read Kyverno's variables or libraries stay
// the engine's to evaluate, and the webhook has none (as upstream).
func validConditions(conds []admv1.MatchCondition) []admv1.MatchCondition {
	if len(conds) == 0 || len(conds) > 64 {
		return nil
	}
	seen := map[string]bool{}
	for _, c := range conds {
		if c.Name == "" || seen[c.Name] || len(validation.IsQualifiedName(c.Name)) > 0 || strings.TrimSpace(c.Expression) == "" {
			return nil
		}
		seen[c.Name] = true
		res := matchConditionCompiler().CompileCELExpression(boolExpression(c.Expression),
			plugincel.OptionalVariableDeclarations{HasParams: false, HasAuthorizer: true}, environment.NewExpressions)
		if res.Error != nil {
			return nil
		}
	}
	return conds
}

func emptyToNil(s *metav1.LabelSelector) *metav1.LabelSelector {
	if s == nil || (len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0) {
		return nil
	}
	return s
}

// hookGroup is the webhook a policy joins: key "" for the shared webhook
// of its failure policy, else the key of a webhook of its own (a policy
// with match conditions, Exact matching or a timeout of its own: its
// policy ID in lower case, see groupKey) or of the policies of its
// failure policy with the same selectors ("selectors/" and a hash).
type hookGroup struct {
	key string
	cel *celHook // nil for ClusterPolicy and Policy
}

// selectorsPrefix begins the key of a selector group's webhook.
const selectorsPrefix = "selectors/"

// webhookGroup returns the webhook a policy joins; the PolicySource's
// webhook sets and WebhookConfigurations both decide with it.
func webhookGroup(p *engine.Policy) hookGroup {
	if fineGrained(p) {
		return hookGroup{key: groupKey(p)}
	}
	h := celHookOf(p)
	if h == nil {
		return hookGroup{}
	}
	switch {
	case len(h.conditions) > 0 || h.exact || h.timeout:
		return hookGroup{key: groupKey(p), cel: h}
	case h.nsSelector != nil || h.objSelector != nil:
		data, _ := json.Marshal([]any{p.FailurePolicy(), h.nsSelector, h.objSelector})
		sum := sha256.Sum256(data)
		return hookGroup{key: selectorsPrefix + hex.EncodeToString(sum[:])[:12], cel: h}
	}
	return hookGroup{cel: h}
}

// groupKey is the key of a policy's own webhook: its ID in lower case
// ("mutatingpolicy.name"), for the key is a segment of the webhook's path,
// which the API server requires to be a lowercase RFC 1123 subdomain
// (names and namespaces are; the kinds of the CEL policy IDs are not).
func groupKey(p *engine.Policy) string { return strings.ToLower(idOf(p)) }

// addRules adds the entries of resource rules to h: every group, version,
// resource (or subresource) and operation they name, in their scope.
func (h *hook) addRules(rules []admv1.RuleWithOperations) {
	for _, r := range rules {
		ops := r.Operations
		if len(ops) == 0 || containsOp(ops, admv1.OperationAll) {
			ops = allOperations
		}
		scope := admv1.AllScopes
		if r.Scope != nil && *r.Scope != "" {
			scope = *r.Scope
		}
		for _, g := range r.APIGroups {
			for _, v := range r.APIVersions {
				for _, res := range r.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					for _, op := range ops {
						h.entries[hookEntry{group: g, version: v, resource: resource, sub: sub, scope: scope, op: op}] = true
					}
				}
			}
		}
	}
}

func containsOp(ops []admv1.OperationType, op admv1.OperationType) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

// mergeSelectors returns a selector requiring both a and b (nil when
// both are nil), as upstream merges a policy's selector with the
// configuration's.
func mergeSelectors(a, b *metav1.LabelSelector) *metav1.LabelSelector {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	out := &metav1.LabelSelector{}
	for _, s := range []*metav1.LabelSelector{a, b} {
		for k, v := range s.MatchLabels {
			if out.MatchLabels == nil {
				out.MatchLabels = map[string]string{}
			}
			out.MatchLabels[k] = v
		}
		out.MatchExpressions = append(out.MatchExpressions, s.MatchExpressions...)
	}
	return out
}
