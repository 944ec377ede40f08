// Package genlabel holds the label keys upstream puts on the resources
// generate rules produce (tracking their policy, rule, trigger and clone
// source), on clone sources, and on UpdateRequests, and the
// api.ResourceSpec by which both name a trigger, a downstream resource or
// a clone source (Spec). The engine writes them and the generate
// controller reads them back; both must agree with upstream's keys, so
// they are kept in one place.
package genlabel

import "github.com/gavelpolicy/gavel/api"

// Labels of downstream resources: managed-by, policy, rule, trigger and,
// for clones, source; clone sources carry CloneSource.
const (
	ManagedBy       = "app.kubernetes.io/managed-by"
	ManagedByValue  = "kyverno"
	PolicyName      = "generate.kyverno.io/policy-name"
	PolicyNamespace = "generate.kyverno.io/policy-namespace"
	RuleName        = "generate.kyverno.io/rule-name"
	TriggerName     = "generate.kyverno.io/trigger-name"
	TriggerNS       = "generate.kyverno.io/trigger-namespace"
	TriggerKind     = "generate.kyverno.io/trigger-kind"
	TriggerGroup    = "generate.kyverno.io/trigger-group"
	TriggerVersion  = "generate.kyverno.io/trigger-version"
	TriggerUID      = "generate.kyverno.io/trigger-uid"
	SourceName      = "generate.kyverno.io/source-name"
	SourceNS        = "generate.kyverno.io/source-namespace"
	SourceKind      = "generate.kyverno.io/source-kind"
	SourceGroup     = "generate.kyverno.io/source-group"
	SourceVersion   = "generate.kyverno.io/source-version"
	SourceUID       = "generate.kyverno.io/source-uid"
	CloneSource     = "generate.kyverno.io/clone-source"
)

// Labels of UpdateRequests.
const (
	URGeneratePolicy    = "generate.kyverno.io/policy-name"
	URMutatePolicy      = "mutate.updaterequest.kyverno.io/policy-name"
	URMutateTriggerNS   = "mutate.updaterequest.kyverno.io/trigger-namespace"
	URMutateTriggerKind = "mutate.updaterequest.kyverno.io/trigger-kind"
)

// Spec returns the ResourceSpec of an object (apiVersion, kind,
// namespace, name and uid), the fields it lacks empty.
func Spec(obj map[string]any) api.ResourceSpec {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	uid, _ := md["uid"].(string)
	return api.ResourceSpec{APIVersion: av, Kind: kind, Namespace: ns, Name: name, UID: uid}
}

// Of returns an object's labels whose values are strings.
func Of(obj map[string]any) map[string]string {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	out := make(map[string]string, len(l))
	for k, v := range l {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}
