package cluster

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	admv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/patterns"
)

// The keys of the configuration ConfigMap the host honours (upstream's
// kyverno ConfigMap; see docs/ARCHITECTURE.md for those it does not).
const (
	ConfigResourceFilters     = "resourceFilters"
	ConfigExcludeGroups       = "excludeGroups"
	ConfigExcludeUsernames    = "excludeUsernames"
	ConfigExcludeRoles        = "excludeRoles"
	ConfigExcludeClusterRoles = "excludeClusterRoles"
	ConfigWebhooks            = "webhooks"
	ConfigWebhookAnnotations  = "webhookAnnotations"
	ConfigWebhookLabels       = "webhookLabels"
	ConfigMatchConditions     = "matchConditions"
	ConfigGenerateSuccess     = "generateSuccessEvents"
	ConfigSuccessEventActions = "successEventActions"
	ConfigURThreshold         = "updateRequestThreshold"
)

// DefaultUpdateRequestThreshold is upstream's updateRequestThreshold.
const DefaultUpdateRequestThreshold = 1000

// Config is the host's dynamic configuration, read from the data of a
// ConfigMap as upstream reads its kyverno ConfigMap: the resources left
// out of admission, background scans and the background passes
// (resourceFilters), and the users whose admission requests are not
// evaluated (excludeUsernames, excludeGroups, excludeRoles,
// excludeClusterRoles, each a comma-separated list of wildcard patterns;
// a "!" before a pattern includes what it matches even when an exclusion
// matches too). The zero Config filters and excludes nothing. A Config is
// immutable and safe for concurrent use.
type Config struct {
	// ResourceFilters in the order of the ConfigMap.
	ResourceFilters []ResourceFilter
	// Excluded are the subjects whose admission requests are not
	// evaluated, unless Included matches them too.
	Excluded, Included Subjects

	// Webhooks holds the selectors of every resource webhook (webhooks:
	// a JSON object with namespaceSelector and objectSelector, or a JSON
	// list of them, as upstream's chart writes it, whose selectors are
	// all required).
	Webhooks WebhookSelectors
	// WebhookAnnotations and WebhookLabels are added to the webhook
	// configurations' metadata (webhookAnnotations, webhookLabels: JSON
	// objects of strings).
	WebhookAnnotations, WebhookLabels map[string]string
	// MatchConditions are the match conditions of every resource webhook
	// that has none of its own (matchConditions: a JSON list of
	// {name, expression}).
	MatchConditions []admv1.MatchCondition

	// GenerateSuccessEvents (generateSuccessEvents, a boolean) lets the
	// host record PolicyApplied events (unless the host's omitted events
	// leave them out), as upstream; SuccessEventActions
	// (successEventActions, comma-separated) then keeps those of these
	// actions only (empty: every action).
	GenerateSuccessEvents bool
	SuccessEventActions   []string

	// UpdateRequestThreshold (updateRequestThreshold, an integer) is the
	// number of UpdateRequests in the cluster at which no more are
	// created: the generate or mutate-existing work of a trigger admitted
	// then is skipped and logged, as upstream skips it. Zero:
	// DefaultUpdateRequestThreshold; negative (a value of 0 or less in the
	// ConfigMap): every one is skipped, as upstream's.
	UpdateRequestThreshold int64

	// Errors are the values ignored as malformed, one per key, as
	// upstream logs and ignores them.
	Errors []error
}

// WebhookSelectors are the namespace and object selectors the webhooks
// key adds to every resource webhook.
type WebhookSelectors struct {
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *metav1.LabelSelector `json:"objectSelector,omitempty"`
}

// ResourceFilter is one entry of resourceFilters, "[Kind,Namespace,Name]"
// (or "[Kind,Namespace]", "[Kind]": the missing parts match only empty
// values, as upstream's), each part a wildcard pattern; Kind is a kind
// selector as in match blocks (Kind, Kind/subresource, version/Kind,
// group/version/Kind, group/version/Kind/subresource, */*; see
// api.ParseKindSelector). A filter of kind Namespace (core v1) also
// matches a Namespace whose name its Namespace part matches, so that
// "[*/*,kube-system,*]" leaves out the kube-system Namespace itself.
type ResourceFilter struct {
	Group, Version, Kind, Subresource, Namespace, Name string
}

// Subjects are wildcard patterns of usernames, groups, Roles
// ("namespace:name") and ClusterRoles.
type Subjects struct {
	Usernames, Groups, Roles, ClusterRoles []string
}

// ParseConfig reads the configuration from a ConfigMap's data; keys it
// does not know are ignored, as upstream ignores them. A nil map is the
// zero Config.
func ParseConfig(data map[string]string) *Config {
	c := &Config{ResourceFilters: ParseResourceFilters(data[ConfigResourceFilters])}
	c.Excluded.Usernames, c.Included.Usernames = parseExclusions(data[ConfigExcludeUsernames])
	c.Excluded.Groups, c.Included.Groups = parseExclusions(data[ConfigExcludeGroups])
	c.Excluded.Roles, c.Included.Roles = parseExclusions(data[ConfigExcludeRoles])
	c.Excluded.ClusterRoles, c.Included.ClusterRoles = parseExclusions(data[ConfigExcludeClusterRoles])
	c.parseWebhookKeys(data)
	if v, ok := data[ConfigGenerateSuccess]; ok {
		if b, err := strconv.ParseBool(v); err != nil {
			c.Errors = append(c.Errors, fmt.Errorf("configuration key %s: %w", ConfigGenerateSuccess, err))
		} else {
			c.GenerateSuccessEvents = b
		}
	}
	if v, ok := data[ConfigURThreshold]; ok {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			c.Errors = append(c.Errors, fmt.Errorf("configuration key %s: %w", ConfigURThreshold, err))
		} else {
			c.UpdateRequestThreshold = n
			if n <= 0 {
				c.UpdateRequestThreshold = -1
			}
		}
	}
	for a := range strings.SplitSeq(data[ConfigSuccessEventActions], ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.SuccessEventActions = append(c.SuccessEventActions, a)
		}
	}
	return c
}

// parseWebhookKeys reads the keys of the webhook configurations; a
// malformed value is noted in c.Errors and left out.
func (c *Config) parseWebhookKeys(data map[string]string) {
	fail := func(key string, err error) {
		c.Errors = append(c.Errors, fmt.Errorf("configuration key %s: %w", key, err))
	}
	if v, ok := data[ConfigWebhooks]; ok && strings.TrimSpace(v) != "" {
		if w, err := parseWebhookSelectors(v); err != nil {
			fail(ConfigWebhooks, err)
		} else {
			c.Webhooks = w
		}
	}
	for _, kv := range []struct {
		key string
		out *map[string]string
	}{{ConfigWebhookAnnotations, &c.WebhookAnnotations}, {ConfigWebhookLabels, &c.WebhookLabels}} {
		v, ok := data[kv.key]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		var m map[string]string
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			fail(kv.key, err)
			continue
		}
		*kv.out = m
	}
	if v, ok := data[ConfigMatchConditions]; ok && strings.TrimSpace(v) != "" {
		var mcs []admv1.MatchCondition
		if err := json.Unmarshal([]byte(v), &mcs); err != nil {
			fail(ConfigMatchConditions, err)
		} else if err := checkMatchConditions(mcs); err != nil {
			fail(ConfigMatchConditions, err)
		} else {
			c.MatchConditions = mcs
		}
	}
}

// parseWebhookSelectors reads the webhooks key: one object, or a list
// whose selectors are merged (each one required).
func parseWebhookSelectors(v string) (WebhookSelectors, error) {
	var w WebhookSelectors
	if strings.HasPrefix(strings.TrimSpace(v), "[") {
		var list []WebhookSelectors
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return w, err
		}
		for _, e := range list {
			w.NamespaceSelector = mergeSelectors(w.NamespaceSelector, e.NamespaceSelector)
			w.ObjectSelector = mergeSelectors(w.ObjectSelector, e.ObjectSelector)
		}
	} else if err := json.Unmarshal([]byte(v), &w); err != nil {
		return w, err
	}
	for _, s := range []*metav1.LabelSelector{w.NamespaceSelector, w.ObjectSelector} {
		if s == nil {
			continue
		}
		if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
			return WebhookSelectors{}, err
		}
	}
	return w, nil
}

// checkMatchConditions rejects conditions without a name or expression
// and repeated names, which the API server would refuse in every webhook.
func checkMatchConditions(mcs []admv1.MatchCondition) error {
	seen := map[string]bool{}
	for i, mc := range mcs {
		switch {
		case mc.Name == "":
			return fmt.Errorf("match condition %d: no name", i)
		case mc.Expression == "":
			return fmt.Errorf("match condition %q: no expression", mc.Name)
		case seen[mc.Name]:
			return fmt.Errorf("match condition %q: repeated", mc.Name)
		}
		seen[mc.Name] = true
	}
	return nil
}

// parseExclusions splits a comma-separated list into its exclusions and
// its inclusions (the entries starting with "!").
func parseExclusions(in string) (exclusions, inclusions []string) {
	for _, e := range strings.Split(in, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(e, "!"); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				inclusions = append(inclusions, rest)
			}
			continue
		}
		exclusions = append(exclusions, e)
	}
	return exclusions, inclusions
}

var filterEntry = regexp.MustCompile(`\[([^\[\]]*)\]`)

// ParseResourceFilters parses the value of resourceFilters: entries in
// brackets, "[Kind,Namespace,Name]", separated by anything (upstream's
// chart joins them without a separator).
func ParseResourceFilters(in string) []ResourceFilter {
	var out []ResourceFilter
	for _, m := range filterEntry.FindAllStringSubmatch(in, -1) {
		parts := strings.Split(m[1], ",")
		var f ResourceFilter
		if parts[0] != "" {
			f.Group, f.Version, f.Kind, f.Subresource = api.ParseKindSelector(parts[0])
			if len(parts) > 1 {
				f.Namespace = parts[1]
			}
			if len(parts) > 2 {
				f.Name = parts[2]
			}
		}
		if len(parts) > 3 {
			// upstream keeps the last entry it parsed for a malformed one
			// ([a,b,c,d]); gavel ignores it
			continue
		}
		out = append(out, f)
	}
	return out
}

// Matches reports whether the filter selects a resource.
func (f *ResourceFilter) Matches(kind schema.GroupVersionKind, subresource, namespace, name string) bool {
	match := patterns.Wildcard
	if !match(f.Kind, kind.Kind) || !match(f.Group, kind.Group) || !match(f.Version, kind.Version) || !match(f.Subresource, subresource) {
		return false
	}
	if match(f.Namespace, namespace) && match(f.Name, name) {
		return true
	}
	return kind.Group == "" && kind.Version == "v1" && kind.Kind == "Namespace" && match(f.Namespace, name)
}

// urThreshold is the UpdateRequest threshold in force.
func (c *Config) urThreshold() int64 {
	if c.UpdateRequestThreshold == 0 {
		return DefaultUpdateRequestThreshold
	}
	return c.UpdateRequestThreshold
}

// Filtered reports whether one of the resourceFilters selects the
// resource (the engine's resource filter, engine.WithResourceFilter).
func (c *Config) Filtered(kind schema.GroupVersionKind, subresource, namespace, name string) bool {
	if c == nil {
		return false
	}
	for i := range c.ResourceFilters {
		if c.ResourceFilters[i].Matches(kind, subresource, namespace, name) {
			return true
		}
	}
	return false
}

// ExcludedUser reports whether the admission requests of a user are left
// out: an exclusion matches the username, one of its groups, Roles or
// ClusterRoles, and no inclusion does.
func (c *Config) ExcludedUser(username string, groups, roles, clusterRoles []string) bool {
	if c == nil {
		return false
	}
	if c.Included.matches(username, groups, roles, clusterRoles) {
		return false
	}
	return c.Excluded.matches(username, groups, roles, clusterRoles)
}

func (s *Subjects) matches(username string, groups, roles, clusterRoles []string) bool {
	return matchAny(s.Usernames, username) || anyMatches(s.Groups, groups) ||
		anyMatches(s.Roles, roles) || anyMatches(s.ClusterRoles, clusterRoles)
}

// anyMatches reports whether a pattern of ps matches one of values.
func anyMatches(ps, values []string) bool {
	for _, v := range values {
		if matchAny(ps, v) {
			return true
		}
	}
	return false
}

func matchAny(ps []string, s string) bool {
	for _, p := range ps {
		if patterns.Wildcard(p, s) {
			return true
		}
	}
	return false
}

// SkipsRequest reports whether an admission request is answered without
// evaluating the policies, as upstream's webhooks filter them: its user
// is excluded (ExcludedUser), or its resource is filtered (the request's
// kind, subresource, namespace and name, the object's name when the
// request has none).
func (c *Config) SkipsRequest(req *engine.Request) bool {
	if c == nil || req == nil {
		return false
	}
	if c.ExcludedUser(req.UserInfo.Username, req.UserInfo.Groups, req.Roles, req.ClusterRoles) {
		return true
	}
	kind := req.ResourceKind
	if kind.Kind == "" {
		kind = req.Kind
	}
	return c.Filtered(kind, req.SubResource, req.Namespace, req.Name)
}

// watchConfig keeps h.cfg the parse of the configuration ConfigMap, from
// the host's ConfigMap informer (a deleted ConfigMap: the zero Config, as
// upstream unloads its configuration).
func (h *Host) watchConfig() error {
	inf := h.factory.Core().V1().ConfigMaps().Informer()
	load := func(o any) {
		if cm, ok := o.(*corev1.ConfigMap); ok && cm.Namespace == h.cfgNS && cm.Name == h.cfgName {
			h.storeConfig(cm)
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    load,
		UpdateFunc: func(_, o any) { load(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Namespace == h.cfgNS && cm.Name == h.cfgName {
				h.cfgMu.Lock()
				h.cfgVersion = ""
				h.cfg.Store(&Config{})
				h.configChanged()
				h.cfgMu.Unlock()
				h.log.Info("configuration removed", "configmap", h.cfgNS+"/"+h.cfgName)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}

// loadConfig reads the configuration ConfigMap from the informer's cache
// (Start, once it is filled: the configuration is in force before the
// first request, not when the informer's handler runs).
func (h *Host) loadConfig() {
	if h.cfgName == "" {
		return
	}
	if cm, err := h.configMaps.ConfigMaps(h.cfgNS).Get(h.cfgName); err == nil {
		h.storeConfig(cm)
	} else {
		h.log.Info("no configuration ConfigMap: nothing is filtered", "configmap", h.cfgNS+"/"+h.cfgName)
	}
}

func (h *Host) storeConfig(cm *corev1.ConfigMap) {
	c := ParseConfig(cm.Data)
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	if cm.ResourceVersion != "" && cm.ResourceVersion == h.cfgVersion {
		return // the informer's handler after loadConfig
	}
	h.cfgVersion = cm.ResourceVersion
	h.cfg.Store(c)
	for _, err := range c.Errors {
		h.log.Error("configuration value ignored", "configmap", h.cfgNS+"/"+h.cfgName, "err", err)
	}
	h.log.Info("configuration loaded", "configmap", h.cfgNS+"/"+h.cfgName,
		"resourceFilters", len(c.ResourceFilters), "resourceVersion", cm.ResourceVersion)
	h.configChanged()
}

// onConfigChange registers f to run after each change of the
// configuration (the webhook controller rebuilds the webhooks); f must
// not block. Call it before Start.
func (h *Host) onConfigChange(f func()) {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	h.cfgSubs = append(h.cfgSubs, f)
}

// configChanged runs the subscribers of configuration changes; h.cfgMu
// is held.
func (h *Host) configChanged() {
	for _, f := range h.cfgSubs {
		f()
	}
}

// Config returns the host's configuration as the configuration ConfigMap
// (Options.ConfigMap) last read; the zero Config without one. The webhook
// asks it which admission requests to skip (Config.SkipsRequest).
func (h *Host) Config() *Config { return h.cfg.Load() }

// filtered is the host's resource filter (engine.WithResourceFilter): the
// resourceFilters of its configuration at the time of each call.
func (h *Host) filtered(kind schema.GroupVersionKind, subresource, namespace, name string) bool {
	return h.cfg.Load().Filtered(kind, subresource, namespace, name)
}
