// Package match implements the match and exclude blocks of Kyverno policy
// rules, with upstream's semantics, and the blocks of PolicyExceptions.
//
// Compile once, evaluate many times:
//
//	rule, errs := match.Compile(r.MatchResources, r.ExcludeResources,
//		field.NewPath("spec", "rules").Index(i), match.Background(true))
//	res := match.ResourceFromObject(object, "")      // once per request
//	ok, reason, err := rule.Matches(res, match.Request{Operation: "CREATE"})
//
// Compile validates the blocks as upstream's policy validation does and
// returns field errors with paths. A compiled Rule or Filter is immutable and
// safe for concurrent use; Matches does not allocate when the rule applies or
// is rejected by a static criterion.
//
// Semantics, as upstream:
//
//   - A block uses any (OR of filters), all (AND of filters) or the inline
//     legacy form (one filter). Inside a filter, criteria are ANDed and each
//     list is ORed. Exclude is evaluated only when match holds, and wins.
//   - kinds: see KindSelector. "Pod" selects no subresource except Pod
//     ephemeralcontainers, "*" selects every kind without subresources,
//     "*/*" everything, "*/scale" the scale subresource of any kind.
//   - name, names, namespaces, annotations (keys and values) take '*' and
//     '?' wildcards. A Namespace object's namespace is its own name.
//   - selector and namespaceSelector: matchLabels keys and values take
//     wildcards (an entry holds when a label matches both patterns);
//     matchExpressions are plain label selector requirements. A
//     namespaceSelector never holds for a Namespace object in a rule.
//   - operations: an empty Request.Operation (background, CLI) counts as
//     CREATE, as upstream runs those modes.
//   - subjects (User, Group, ServiceAccount with its namespace, wildcards in
//     names), roles ("namespace:name") and clusterRoles (exact names). In a
//     rule's match block they are ignored when the request carries no user
//     information; in exclude blocks and exceptions they are always checked.
//   - A namespaced Policy applies only in its namespace (NamespacedPolicyApplies).
package match
