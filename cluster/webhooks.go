package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	admv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/patterns"
)

// The webhooks a WebhookController writes: names, and the paths the
// webhook server answers on. The failure-policy webhooks carry a suffix
// ("-fail", "-ignore") and their path one more segment ("/fail",
// "/ignore"); a policy with its own match conditions gets webhooks of its
// own ("-fail-finegrained-NS-NAME", path ".../fail/finegrained/NS/NAME").
const (
	MutateWebhookName      = "mutate.gavel.io"
	ValidateWebhookName    = "validate.gavel.io"
	DownstreamWebhookName  = "downstream.gavel.io"
	CloneSourceWebhookName = "clone-source.gavel.io"
	// PolicyWebhookName is the webhook of the ClusterPolicies and
	// Policies themselves (WebhookOptions.ValidatePolicies).
	PolicyWebhookName = "validate-policy.gavel.io"

	MutatePath     = "/mutate"
	ValidatePath   = "/validate"
	DownstreamPath = "/downstream"
	PolicyPath     = "/policyvalidate"
	// FineGrainedPath separates the failure policy from the policy key in
	// the path of a policy's own webhook.
	FineGrainedPath = "/finegrained"

	// LabelWebhookManagedBy marks the webhook configurations gavel writes.
	LabelWebhookManagedBy = "webhook.gavel.io/managed-by"
)

// The operations of admission requests.
var (
	allOperations      = []admv1.OperationType{admv1.Create, admv1.Update, admv1.Delete, admv1.Connect}
	createUpdate       = []admv1.OperationType{admv1.Create, admv1.Update}
	createUpdateDelete = []admv1.OperationType{admv1.Create, admv1.Update, admv1.Delete}
	updateDelete       = []admv1.OperationType{admv1.Update, admv1.Delete}
)

// hookEntry is one resource and operation a webhook is called for.
type hookEntry struct {
	group, version, resource, sub string
	scope                         admv1.ScopeType
	op                            admv1.OperationType
}

// hook gathers the entries of one webhook: the failure policy's shared
// webhook, or a webhook of its own (key: a policy with match conditions,
// or a group of CEL policies with the same selectors; see webhookGroup).
type hook struct {
	failurePolicy   admv1.FailurePolicyType
	key             string // "": the shared webhook
	matchConditions []admv1.MatchCondition
	// the selectors of a CEL policy's (or selector group's) webhook, and
	// its Exact matching
	nsSelector, objSelector *metav1.LabelSelector
	exact                   bool
	timeout                 int32
	entries                 map[hookEntry]bool
}

// newHook returns the hook of a failure policy and group (g.key "": the
// shared one).
func newHook(fp admv1.FailurePolicyType, timeout int32, p *engine.Policy, g hookGroup) *hook {
	h := &hook{failurePolicy: fp, key: g.key, timeout: timeout, entries: map[hookEntry]bool{}}
	if g.key == "" {
		return h
	}
	if wc := webhookConfiguration(p); wc != nil {
		for _, mc := range wc.MatchConditions {
			h.matchConditions = append(h.matchConditions, admv1.MatchCondition{Name: mc.Name, Expression: mc.Expression})
		}
	}
	if c := g.cel; c != nil {
		h.matchConditions = append(h.matchConditions, c.conditions...)
		h.nsSelector, h.objSelector, h.exact = c.nsSelector, c.objSelector, c.exact
	}
	return h
}

// nameAndPath returns the webhook's name and path given the base ones.
func (h *hook) nameAndPath(name, path string) (string, string) {
	suffix := "fail"
	if h.failurePolicy == admv1.Ignore {
		suffix = "ignore"
	}
	name, path = name+"-"+suffix, path+"/"+suffix
	if h.key != "" {
		name += "-finegrained-" + strings.ToLower(strings.ReplaceAll(h.key, "/", "-"))
		path += FineGrainedPath + "/" + h.key
	}
	return name, path
}

// covers reports whether a, a different entry, already calls the webhook
// for everything b does (wildcard groups, versions, resources and
// subresources; the cluster-and-namespace scope).
func (a hookEntry) covers(b hookEntry) bool {
	if a == b || a.op != b.op {
		return false
	}
	if a.scope != b.scope && a.scope != admv1.AllScopes {
		return false
	}
	if (a.group != "*" && a.group != b.group) || (a.version != "*" && a.version != b.version) {
		return false
	}
	switch {
	case a.resource == "*" && a.sub == "*":
		return true
	case a.resource == "*" && a.sub == "":
		return b.sub == ""
	case a.sub == "*":
		return a.resource == b.resource && b.sub != ""
	case a.resource == "*":
		return a.sub == b.sub
	}
	return a.resource == b.resource && a.sub == b.sub
}

// rules returns the webhook's rules: entries covered by a broader one
// left out, resources of one group, version and scope with the same
// operations gathered in one rule, sorted. As upstream, pods come with
// pods/ephemeralcontainers.
func (h *hook) rules() []admv1.RuleWithOperations {
	type gvs struct {
		group, version string
		scope          admv1.ScopeType
	}
	byGVS := map[gvs]map[string]map[admv1.OperationType]bool{}
	for e := range h.entries {
		covered := false
		for o := range h.entries {
			if o.covers(e) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		k := gvs{e.group, e.version, e.scope}
		if byGVS[k] == nil {
			byGVS[k] = map[string]map[admv1.OperationType]bool{}
		}
		res := e.resource
		if e.sub != "" {
			res += "/" + e.sub
		}
		if byGVS[k][res] == nil {
			byGVS[k][res] = map[admv1.OperationType]bool{}
		}
		byGVS[k][res][e.op] = true
	}
	var out []admv1.RuleWithOperations
	for k, resources := range byGVS {
		byOps := map[string][]string{}
		for res, ops := range resources {
			var list []string
			for _, op := range allOperations {
				if ops[op] {
					list = append(list, string(op))
				}
			}
			key := strings.Join(list, ",")
			byOps[key] = append(byOps[key], res)
		}
		for ops, res := range byOps {
			if (k.group == "" || k.group == "*") && (k.version == "v1" || k.version == "*") &&
				(slices.Contains(res, "pods") || slices.Contains(res, "*")) && !slices.Contains(res, "pods/ephemeralcontainers") {
				res = append(res, "pods/ephemeralcontainers")
			}
			slices.Sort(res)
			scope := k.scope
			r := admv1.RuleWithOperations{Rule: admv1.Rule{
				APIGroups: []string{k.group}, APIVersions: []string{k.version}, Resources: res, Scope: &scope,
			}}
			for _, op := range strings.Split(ops, ",") {
				r.Operations = append(r.Operations, admv1.OperationType(op))
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, compareRules)
	return out
}

func compareRules(a, b admv1.RuleWithOperations) int {
	return cmp.Or(
		slices.Compare(a.APIGroups, b.APIGroups),
		slices.Compare(a.APIVersions, b.APIVersions),
		slices.Compare(a.Resources, b.Resources),
		slices.Compare(a.Operations, b.Operations),
		cmp.Compare(string(*a.Scope), string(*b.Scope)),
	)
}

// kindOps maps the kind selectors of a rule to the operations they match.
type kindOps map[string]map[admv1.OperationType]bool

func (k kindOps) add(kind string, ops ...admv1.OperationType) {
	if len(ops) == 0 {
		return
	}
	if k[kind] == nil {
		k[kind] = map[admv1.OperationType]bool{}
	}
	for _, op := range ops {
		k[kind][op] = true
	}
}

// matchedKinds returns the kinds a rule's match block names with their
// operations (the filter's own, else defaults), less those an exclude.any
// filter of kinds and operations alone takes out, as upstream derives a
// webhook's rules from a policy.
func matchedKinds(r *api.Rule, defaults []admv1.OperationType) kindOps {
	out := kindOps{}
	add := func(d *api.ResourceDescription) {
		ops := operations(d.Operations)
		if len(ops) == 0 {
			ops = defaults
		}
		for _, k := range d.Kinds {
			out.add(k, ops...)
		}
	}
	add(&r.MatchResources.ResourceDescription)
	for i := range r.MatchResources.All {
		add(&r.MatchResources.All[i].ResourceDescription)
	}
	for i := range r.MatchResources.Any {
		add(&r.MatchResources.Any[i].ResourceDescription)
	}
	if r.ExcludeResources == nil {
		return out
	}
	for i := range r.ExcludeResources.Any {
		f := &r.ExcludeResources.Any[i]
		d := &f.ResourceDescription
		if !f.UserInfo.IsEmpty() || d.Name != "" || len(d.Names) > 0 || len(d.Namespaces) > 0 ||
			len(d.Annotations) > 0 || d.Selector != nil || d.NamespaceSelector != nil {
			continue // narrower than kinds and operations: the webhook still needs the requests
		}
		kinds := d.Kinds
		if len(kinds) == 0 {
			for k := range out {
				kinds = append(kinds, k)
			}
		}
		ops := operations(d.Operations)
		if len(ops) == 0 {
			ops = allOperations
		}
		for _, k := range kinds {
			for _, op := range ops {
				delete(out[k], op)
			}
		}
	}
	return out
}

func operations(ops []api.AdmissionOperation) []admv1.OperationType {
	out := make([]admv1.OperationType, 0, len(ops))
	for _, op := range ops {
		out = append(out, admv1.OperationType(op))
	}
	return out
}

// Rule kinds, as upstream classifies them for its webhooks.
func hasValidate(r *api.Rule) bool { return r.Validation != nil }
func hasGenerate(r *api.Rule) bool { return r.Generation != nil }
func hasMutateExisting(r *api.Rule) bool {
	return r.Mutation != nil && len(r.Mutation.Targets) > 0
}
func hasMutateStandard(r *api.Rule) bool { return r.Mutation != nil && !hasMutateExisting(r) }
func hasVerifyImages(r *api.Rule) bool   { return len(r.VerifyImages) > 0 }
func hasVerifyManifests(r *api.Rule) bool {
	return r.Validation != nil && r.Validation.Manifests != nil && len(r.Validation.Manifests.Attestors) > 0
}

// hasVerifyImageChecks reports whether a verifyImages rule checks digests
// or the verification annotation at validation (both default to true).
func hasVerifyImageChecks(r *api.Rule) bool {
	for i := range r.VerifyImages {
		v := &r.VerifyImages[i]
		if v.VerifyDigest == nil || *v.VerifyDigest || v.Required == nil || *v.Required {
			return true
		}
	}
	return false
}

// generatedKinds returns the kinds a generate rule creates or clones.
func generatedKinds(g *api.Generation) []string {
	var out []string
	add := func(spec api.ResourceSpec, cl *api.CloneList) {
		switch {
		case spec.Kind != "" && spec.APIVersion != "":
			out = append(out, spec.APIVersion+"/"+spec.Kind)
		case spec.Kind != "":
			out = append(out, spec.Kind)
		case cl != nil:
			out = append(out, cl.Kinds...)
		}
	}
	add(g.ResourceSpec, g.CloneList)
	for i := range g.ForEachGeneration {
		add(g.ForEachGeneration[i].ResourceSpec, g.ForEachGeneration[i].CloneList)
	}
	return out
}

// clonedKinds returns the kinds a generate rule clones from sources.
func clonedKinds(g *api.Generation) []string {
	var out []string
	add := func(spec api.ResourceSpec, c *api.CloneFrom, cl *api.CloneList) {
		if c != nil && c.Name != "" && spec.Kind != "" {
			if spec.APIVersion != "" {
				out = append(out, spec.APIVersion+"/"+spec.Kind)
			} else {
				out = append(out, spec.Kind)
			}
		}
		if cl != nil {
			out = append(out, cl.Kinds...)
		}
	}
	add(g.ResourceSpec, g.Clone, g.CloneList)
	for i := range g.ForEachGeneration {
		f := &g.ForEachGeneration[i]
		add(f.ResourceSpec, f.Clone, f.CloneList)
	}
	return out
}

// policyKinds returns the kinds and operations of a policy that a
// validating (validate true) or mutating webhook must receive.
func policyKinds(p *engine.Policy, validate bool) kindOps {
	out := kindOps{}
	defaults := createUpdate
	if validate {
		defaults = allOperations
	}
	for _, r := range p.Rules() {
		switch {
		case hasGenerate(r):
			// generate runs for every operation (a trigger's deletion, or
			// CONNECT as for an exec); its own kinds travel by the
			// downstream webhook
			for k, ops := range matchedKinds(r, allOperations) {
				for op := range ops {
					out.add(k, op)
				}
			}
		case validate && (hasValidate(r) || hasMutateExisting(r) || hasVerifyImageChecks(r)),
			!validate && (hasMutateStandard(r) || hasVerifyImages(r) || hasVerifyManifests(r)):
			for k, ops := range matchedKinds(r, defaults) {
				for op := range ops {
					out.add(k, op)
				}
			}
		}
	}
	return out
}

// inWebhook reports whether a policy is served by the validating
// (validate true) or mutating webhook at all.
func inWebhook(p *engine.Policy, validate bool) bool {
	if !p.Admission() || !admissionKind(api.KindOf(p.Source())) {
		return false
	}
	if _, ok := p.Source().(api.ClassicPolicy); !ok {
		h := celHookOf(p)
		return h != nil && ((validate && h.validating) || (!validate && h.mutating))
	}
	for _, r := range p.Rules() {
		if validate && (hasValidate(r) || hasGenerate(r) || hasMutateExisting(r) || hasVerifyImageChecks(r) || hasVerifyManifests(r)) {
			return true
		}
		if !validate && (hasMutateStandard(r) || hasVerifyImages(r)) {
			return true
		}
	}
	return false
}

// fineGrained reports whether a policy has webhooks of its own (its
// spec.webhookConfiguration.matchConditions).
func fineGrained(p *engine.Policy) bool {
	wc := webhookConfiguration(p)
	return wc != nil && len(wc.MatchConditions) > 0
}

// webhookConfiguration is the spec.webhookConfiguration of a ClusterPolicy
// or Policy (nil for other kinds, or when it has none).
func webhookConfiguration(p *engine.Policy) *api.WebhookConfiguration {
	if p == nil {
		return nil
	}
	if cp, ok := p.Source().(api.ClassicPolicy); ok {
		return cp.GetSpec().WebhookConfiguration
	}
	return nil
}

// resourceLister is what the webhooks need of discovery: every group
// version's resources (client-go's discovery client, cached).
type resourceLister interface {
	ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error)
}

// resolved is a resource (or subresource) a kind selector names.
type resolved struct {
	group, version, resource, sub string
	namespaced                    bool
}

// resolveKind returns the resources a kind selector names in the served
// resource lists: group, version and kind match as wildcards; a
// subresource selector names the subresources of those resources. A kind
// "*" is not looked up: it stays "*" (every resource).
func resolveKind(lists []*metav1.APIResourceList, selector string) []resolved {
	group, version, kind, subresource := api.ParseKindSelector(selector)
	if kind == "*" {
		return []resolved{{group: group, version: version, resource: "*", sub: subresource}}
	}
	var parents []resolved
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			g, v := gv.Group, gv.Version
			if r.Group != "" {
				g = r.Group
			}
			if r.Version != "" {
				v = r.Version
			}
			if patterns.Wildcard(group, g) && patterns.Wildcard(version, v) && patterns.Wildcard(kind, r.Kind) {
				parents = append(parents, resolved{group: gv.Group, version: gv.Version, resource: r.Name, namespaced: r.Namespaced})
			}
		}
	}
	if subresource == "" {
		return parents
	}
	var out []resolved
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			parent, sub, ok := strings.Cut(r.Name, "/")
			if !ok {
				continue
			}
			for _, p := range parents {
				if p.group == gv.Group && p.version == gv.Version && p.resource == parent && patterns.Wildcard(subresource, sub) {
					out = append(out, resolved{group: p.group, version: p.version, resource: parent, sub: sub, namespaced: p.namespaced})
				}
			}
		}
	}
	return out
}

// addKinds adds the entries of kinds to h (kinds "*" in policyScope,
// the others in their resource's scope); it returns the kind selectors
// that no served resource matched.
func (h *hook) addKinds(lists []*metav1.APIResourceList, kinds kindOps, policyScope admv1.ScopeType) []string {
	var missing []string
	for kind, ops := range kinds {
		found := resolveKind(lists, kind)
		if len(found) == 0 {
			missing = append(missing, kind)
		}
		for _, r := range found {
			scope := policyScope
			if r.resource != "*" {
				scope = admv1.AllScopes
				if r.namespaced {
					scope = admv1.NamespacedScope
				}
			}
			for op := range ops {
				h.entries[hookEntry{group: r.group, version: r.version, resource: r.resource, sub: r.sub, scope: scope, op: op}] = true
			}
		}
	}
	return missing
}

// addPolicy adds a policy's kinds to h and raises h's timeout to the
// policy's webhook timeout.
func (h *hook) addPolicy(lists []*metav1.APIResourceList, p *engine.Policy, kinds kindOps) []string {
	scope := admv1.AllScopes
	if p.Source().GetNamespace() != "" {
		scope = admv1.NamespacedScope
	}
	if t, ok := p.TimeoutSeconds(); ok {
		h.timeout = max(h.timeout, t)
	}
	return h.addKinds(lists, kinds, scope)
}

// WebhookOptions configure the webhook configurations a WebhookController
// writes.
type WebhookOptions struct {
	// Name of the MutatingWebhookConfiguration and the
	// ValidatingWebhookConfiguration (default "gavel").
	Name string
	// Service is the Service the API server calls (its path is set per
	// webhook); URL, when set, is called instead (a base URL such as
	// https://127.0.0.1:9443, for a webhook outside the cluster).
	Service *admv1.ServiceReference
	URL     string
	// CABundle is the PEM of the CA that signed the webhook's certificate.
	CABundle []byte
	// NamespaceSelector and ObjectSelector of every resource webhook
	// (default: none; a chart excludes its own namespace).
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// TimeoutSeconds of the webhooks (default 10; a policy's
	// webhookTimeoutSeconds raises its webhook's, up to 30).
	TimeoutSeconds int32
	// OwnerClusterRole, when set, names a ClusterRole that owns the
	// configurations, so that deleting it (uninstalling the chart) deletes
	// them with it, as upstream's configurations are owned by its
	// ClusterRole.
	OwnerClusterRole string
	// NoDownstream leaves out the webhooks of generated resources and
	// clone sources.
	NoDownstream bool
	// ValidatePolicies adds the webhook of the ClusterPolicies and
	// Policies created or updated (PolicyWebhookName, PolicyPath), which
	// the server answers by compiling them: an invalid policy is refused
	// with its errors, as by upstream's policy validating webhook. Its
	// failure policy is Ignore: policies are not refused while gavel is
	// down.
	ValidatePolicies bool
	// FailurePolicy, when set, is every resource webhook's failure policy
	// (what the API server does when gavel cannot answer); empty keeps
	// each policy's, as upstream. The paths stay per policy: gavel's own
	// decision on a policy's errors does not change.
	FailurePolicy admv1.FailurePolicyType
	// Config, when set, adds the webhook keys of the configuration
	// ConfigMap: its Webhooks selectors to every resource webhook (not
	// to the downstream and clone-source ones), its MatchConditions to
	// the shared resource webhooks (a policy's webhook of its own keeps
	// its own conditions, as upstream's), its WebhookLabels and
	// WebhookAnnotations to both configurations. The WebhookController sets it to
	// Host.Config at each reconciliation.
	Config *Config
}

func (o *WebhookOptions) defaults() {
	if o.Name == "" {
		o.Name = "gavel"
	}
	if o.TimeoutSeconds <= 0 {
		o.TimeoutSeconds = 10
	}
}

func (o *WebhookOptions) clientConfig(path string) admv1.WebhookClientConfig {
	cc := admv1.WebhookClientConfig{CABundle: o.CABundle}
	if o.URL != "" {
		u := strings.TrimSuffix(o.URL, "/") + path
		cc.URL = &u
		return cc
	}
	if o.Service != nil {
		s := *o.Service
		s.Path = &path
		cc.Service = &s
	}
	return cc
}

// WebhookConfigurations returns the webhook configurations that send
// gavel the admission requests the policies of set need, as upstream's
// webhook controller derives them from the policies: per failure policy
// (Fail, Ignore: the policy's spec.webhookConfiguration.failurePolicy or
// spec.failurePolicy, Fail by default) one mutating webhook for the
// mutate and verifyImages rules and one validating webhook for the
// validate, generate, mutate-existing and verifyImages checks; the kinds
// and operations of the rules' match blocks (all operations for generate
// rules and, without operations, for validating rules; CREATE and UPDATE
// for mutating ones), resolved through discovery to resources and
// subresources (kinds without a group in any group serving them); a
// policy with match conditions in webhooks of its own. The downstream
// webhook receives the updates and deletions of the kinds the generate
// rules create and the clone-source webhook those of the kinds they
// clone. missing lists the kind selectors no served resource matches
// (a CRD not installed yet).
func WebhookConfigurations(set *engine.PolicySet, lists []*metav1.APIResourceList, opts WebhookOptions) (mwc *admv1.MutatingWebhookConfiguration, vwc *admv1.ValidatingWebhookConfiguration, missing []string) {
	opts.defaults()
	seen := map[string]bool{}
	note := func(m []string) {
		for _, k := range m {
			if !seen[k] {
				seen[k] = true
				missing = append(missing, k)
			}
		}
	}
	meta := metav1.ObjectMeta{Name: opts.Name, Labels: map[string]string{}}
	if opts.Config != nil {
		maps.Copy(meta.Labels, opts.Config.WebhookLabels)
		if len(opts.Config.WebhookAnnotations) > 0 {
			meta.Annotations = maps.Clone(opts.Config.WebhookAnnotations)
		}
	}
	meta.Labels[LabelWebhookManagedBy] = "gavel"
	mwc = &admv1.MutatingWebhookConfiguration{ObjectMeta: meta}
	vwc = &admv1.ValidatingWebhookConfiguration{ObjectMeta: *meta.DeepCopy()}
	mutate, mm := buildHooks(set, lists, false, opts.TimeoutSeconds)
	validate, vm := buildHooks(set, lists, true, opts.TimeoutSeconds)
	note(mm)
	note(vm)
	for _, h := range mutate {
		mwc.Webhooks = append(mwc.Webhooks, mutatingWebhook(h, &opts))
	}
	for _, h := range validate {
		vwc.Webhooks = append(vwc.Webhooks, validatingWebhook(h, &opts, ValidateWebhookName, ValidatePath))
	}
	if !opts.NoDownstream {
		ds, dm := downstreamWebhooks(set, lists, &opts)
		note(dm)
		vwc.Webhooks = append(vwc.Webhooks, ds...)
	}
	if opts.ValidatePolicies {
		vwc.Webhooks = append(vwc.Webhooks, policyWebhook(&opts))
	}
	slices.SortFunc(mwc.Webhooks, func(a, b admv1.MutatingWebhook) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(vwc.Webhooks, func(a, b admv1.ValidatingWebhook) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(missing)
	return mwc, vwc, missing
}

// buildHooks returns the non-empty hooks of the mutating or validating
// configuration: Ignore and Fail shared, then the fine-grained ones.
func buildHooks(set *engine.PolicySet, lists []*metav1.APIResourceList, validate bool, timeout int32) ([]*hook, []string) {
	shared := map[admv1.FailurePolicyType]*hook{
		admv1.Ignore: newHook(admv1.Ignore, timeout, nil, hookGroup{}),
		admv1.Fail:   newHook(admv1.Fail, timeout, nil, hookGroup{}),
	}
	var fine []*hook
	byKey := map[string]*hook{}
	var missing []string
	for _, p := range set.Policies() {
		if !inWebhook(p, validate) {
			continue
		}
		fp := admv1.Fail
		if p.FailurePolicy() == api.Ignore {
			fp = admv1.Ignore
		}
		h := shared[fp]
		g := webhookGroup(p)
		if g.key != "" {
			if h = byKey[g.key]; h == nil {
				h = newHook(fp, timeout, p, g)
				byKey[g.key] = h
				fine = append(fine, h)
			}
		}
		if g.cel != nil {
			// a CEL policy names resources: no discovery
			if t, ok := p.TimeoutSeconds(); ok {
				// a policy's own webhook has its timeout, as upstream's
				h.timeout = t
			}
			h.addRules(g.cel.rules)
			continue
		}
		missing = append(missing, h.addPolicy(lists, p, policyKinds(p, validate))...)
	}
	var out []*hook
	for _, h := range append([]*hook{shared[admv1.Ignore], shared[admv1.Fail]}, fine...) {
		if len(h.entries) > 0 {
			out = append(out, h)
		}
	}
	return out, missing
}

// matchPolicy is Equivalent, or Exact for a CEL policy that asks for it.
func (h *hook) matchPolicy() *admv1.MatchPolicyType {
	if h.exact {
		return ptr(admv1.Exact)
	}
	return ptr(admv1.Equivalent)
}

func capTimeout(t int32) *int32 {
	t = min(t, 30)
	return &t
}

func (o *WebhookOptions) failurePolicy(h *hook) *admv1.FailurePolicyType {
	fp := h.failurePolicy
	if o.FailurePolicy != "" {
		fp = o.FailurePolicy
	}
	return &fp
}

// namespaceSelector and objectSelector of a resource webhook require the
// hook's own selectors (a CEL policy's), the options' and the
// configuration's webhooks key.
func (o *WebhookOptions) namespaceSelector(h *hook) *metav1.LabelSelector {
	s := mergeSelectors(h.nsSelector, o.NamespaceSelector)
	if o.Config != nil {
		s = mergeSelectors(s, o.Config.Webhooks.NamespaceSelector)
	}
	return s
}

func (o *WebhookOptions) objectSelector(h *hook) *metav1.LabelSelector {
	s := mergeSelectors(h.objSelector, o.ObjectSelector)
	if o.Config != nil {
		s = mergeSelectors(s, o.Config.Webhooks.ObjectSelector)
	}
	return s
}

// matchConditions are the configuration's for a shared webhook, and
// the hook's own for a webhook of its own, as upstream: a ClusterPolicy's
// match conditions replace the configuration's, and the webhooks of CEL
// policies never get them.
func (o *WebhookOptions) matchConditions(h *hook) []admv1.MatchCondition {
	if h.key != "" || o.Config == nil || len(o.Config.MatchConditions) == 0 {
		return h.matchConditions
	}
	return slices.Clone(o.Config.MatchConditions)
}

func mutatingWebhook(h *hook, o *WebhookOptions) admv1.MutatingWebhook {
	name, path := h.nameAndPath(MutateWebhookName, MutatePath)
	return admv1.MutatingWebhook{
		Name: name, ClientConfig: o.clientConfig(path), Rules: h.rules(),
		FailurePolicy: o.failurePolicy(h), MatchPolicy: h.matchPolicy(),
		NamespaceSelector: o.namespaceSelector(h), ObjectSelector: o.objectSelector(h),
		SideEffects: ptr(admv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: capTimeout(h.timeout),
		AdmissionReviewVersions: []string{"v1"}, ReinvocationPolicy: ptr(admv1.IfNeededReinvocationPolicy),
		MatchConditions: o.matchConditions(h),
	}
}

func validatingWebhook(h *hook, o *WebhookOptions, base, basePath string) admv1.ValidatingWebhook {
	name, path := h.nameAndPath(base, basePath)
	return admv1.ValidatingWebhook{
		Name: name, ClientConfig: o.clientConfig(path), Rules: h.rules(),
		FailurePolicy: o.failurePolicy(h), MatchPolicy: h.matchPolicy(),
		NamespaceSelector: o.namespaceSelector(h), ObjectSelector: o.objectSelector(h),
		SideEffects: ptr(admv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: capTimeout(h.timeout),
		AdmissionReviewVersions: []string{"v1"}, MatchConditions: o.matchConditions(h),
	}
}

// downstreamWebhooks returns the webhooks of the generated resources and
// of the clone sources: their updates and deletions, selected by
// generate's tracking labels; they never deny (Ignore).
func downstreamWebhooks(set *engine.PolicySet, lists []*metav1.APIResourceList, o *WebhookOptions) ([]admv1.ValidatingWebhook, []string) {
	generated, cloned := kindOps{}, kindOps{}
	for _, p := range set.Policies() {
		for _, r := range p.Rules() {
			if r.Generation == nil {
				continue
			}
			for _, k := range generatedKinds(r.Generation) {
				generated.add(k, updateDelete...)
			}
			for _, k := range clonedKinds(r.Generation) {
				cloned.add(k, updateDelete...)
			}
		}
	}
	var out []admv1.ValidatingWebhook
	var missing []string
	for _, d := range []struct {
		name, label string
		kinds       kindOps
	}{
		{DownstreamWebhookName, "generate.kyverno.io/policy-name", generated},
		{CloneSourceWebhookName, "generate.kyverno.io/clone-source", cloned},
	} {
		if len(d.kinds) == 0 {
			continue
		}
		h := newHook(admv1.Ignore, 5, nil, hookGroup{})
		missing = append(missing, h.addKinds(lists, d.kinds, admv1.AllScopes)...)
		if len(h.entries) == 0 {
			continue
		}
		fp := admv1.Ignore
		out = append(out, admv1.ValidatingWebhook{
			Name: d.name, ClientConfig: o.clientConfig(DownstreamPath), Rules: h.rules(),
			FailurePolicy: &fp, MatchPolicy: ptr(admv1.Equivalent),
			ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: d.label, Operator: metav1.LabelSelectorOpExists,
			}}},
			SideEffects: ptr(admv1.SideEffectClassNoneOnDryRun), TimeoutSeconds: ptr(int32(5)),
			AdmissionReviewVersions: []string{"v1"},
		})
	}
	return out, missing
}

// policyWebhook is the webhook of the ClusterPolicies and Policies of
// every version (WebhookOptions.ValidatePolicies).
func policyWebhook(o *WebhookOptions) admv1.ValidatingWebhook {
	return admv1.ValidatingWebhook{
		Name: PolicyWebhookName, ClientConfig: o.clientConfig(PolicyPath),
		Rules: []admv1.RuleWithOperations{{
			Operations: []admv1.OperationType{admv1.Create, admv1.Update},
			Rule: admv1.Rule{APIGroups: []string{"kyverno.io"}, APIVersions: []string{"*"},
				Resources: []string{"clusterpolicies", "policies"}, Scope: ptr(admv1.AllScopes)},
		}},
		FailurePolicy: ptr(admv1.Ignore), MatchPolicy: ptr(admv1.Equivalent),
		SideEffects: ptr(admv1.SideEffectClassNone), TimeoutSeconds: ptr(o.TimeoutSeconds),
		AdmissionReviewVersions: []string{"v1"},
	}
}

// String describes a webhook's rules in one line, for logs.
func describeRules(rules []admv1.RuleWithOperations) string {
	var parts []string
	for _, r := range rules {
		parts = append(parts, fmt.Sprintf("%s/%s %s %v", strings.Join(r.APIGroups, ","), strings.Join(r.APIVersions, ","), strings.Join(r.Resources, ","), r.Operations))
	}
	return strings.Join(parts, "; ")
}
