package match

import (
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		match   string
		exclude string
		opts    []Option
		want    []string // the errors, in order
	}{
		{name: "valid", match: `{any: [{resources: {kinds: [Pod]}}]}`},
		{name: "empty match", match: `{}`,
			want: []string{"spec.rules[0].match.resources: Required value: match resources not specified"}},
		{name: "filter without resources", match: `{any: [{clusterRoles: [admin]}]}`,
			want: []string{"spec.rules[0].match.any[0].resources: Required value: match resources not specified"}},
		{name: "filter without kinds", match: `{all: [{resources: {kinds: [Pod]}}, {resources: {names: [x]}}]}`,
			want: []string{"spec.rules[0].match.all[1].resources.kinds: Required value: at least one element must be specified in a kind block, the kind attribute is mandatory when working with the resources element"}},
		{name: "any and all", match: `{any: [{resources: {kinds: [Pod]}}], all: [{resources: {kinds: [Pod]}}]}`,
			want: []string{"spec.rules[0].match: Invalid value: Can't specify any and all together"}},
		{name: "any with inline resources", match: `{any: [{resources: {kinds: [Pod]}}], resources: {kinds: [Pod]}}`,
			want: []string{"spec.rules[0].match.resources: Forbidden: can't specify any/all together with match resources"}},
		{name: "exclude any with inline resources", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{resources: {names: [a]}}], resources: {names: [b]}}`,
			want: []string{"spec.rules[0].exclude.resources: Forbidden: can't specify any/all together with exclude resources"}},
		{name: "variables", match: `{any: [{resources: {kinds: [Pod], names: ['{{ request.object.metadata.name }}']}}]}`, exclude: `{any: [{resources: {namespaces: ['{{x}}']}}]}`,
			want: []string{
				"spec.rules[0].match.any[0].resources.names[0]: Forbidden: variables are not allowed in the match section",
				"spec.rules[0].exclude.any[0].resources.namespaces[0]: Forbidden: variables are not allowed in the exclude section",
			}},
		{name: "name and names", match: `{any: [{resources: {kinds: [Pod], name: a, names: [b]}}]}`,
			want: []string{"spec.rules[0].match.any[0].resources: Invalid value: Both name and names can not be specified together"}},
		{name: "empty selector", match: `{any: [{resources: {kinds: [Pod], selector: {}}}]}`,
			want: []string{"spec.rules[0].match.any[0].resources.selector: Invalid value: The requirements are not specified in selector"}},
		{name: "invalid selector value", match: `{any: [{resources: {kinds: [Pod], selector: {matchLabels: {app: 'a b'}}}}]}`,
			want: []string{`spec.rules[0].match.any[0].resources.selector.matchLabels[app]: Invalid value: "a b": values[0][app]: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},
		{name: "invalid selector operator", match: `{any: [{resources: {kinds: [Pod], namespaceSelector: {matchExpressions: [{key: a, operator: Is}]}}}]}`,
			want: []string{`spec.rules[0].match.any[0].resources.namespaceSelector.matchExpressions[0].operator: Invalid value: "Is": "Is" is not a valid label selector operator`}},
		{name: "In without values", match: `{any: [{resources: {kinds: [Pod], selector: {matchExpressions: [{key: a, operator: In}]}}}]}`,
			want: []string{`spec.rules[0].match.any[0].resources.selector.matchExpressions[0]: Invalid value: "a": values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`}},
		{name: "wildcard selector is not validated as a selector", match: `{any: [{resources: {kinds: [Pod], selector: {matchLabels: {'*': '*'}}}}]}`},
		{name: "bad operation", match: `{any: [{resources: {kinds: [Pod], operations: [create]}}]}`,
			want: []string{`spec.rules[0].match.any[0].resources.operations[0]: Unsupported value: "create": supported values: "CREATE", "UPDATE", "DELETE", "CONNECT"`}},
		{name: "bad kind", match: `{any: [{resources: {kinds: ['', 'a/b/c/d/e', 'apps/v1/']}}]}`,
			want: []string{
				`spec.rules[0].match.any[0].resources.kinds[0]: Invalid value: "": kind must not be empty`,
				`spec.rules[0].match.any[0].resources.kinds[1]: Invalid value: "a/b/c/d/e": kind selector has more than four segments (group/version/Kind/subresource)`,
				`spec.rules[0].match.any[0].resources.kinds[2]: Invalid value: "apps/v1/": kind selector has an empty kind`,
			}},
		{name: "subjects", match: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: Robot, name: r}, {kind: ServiceAccount, name: sa}, {name: x}, {kind: User}]}]}`,
			want: []string{
				`spec.rules[0].match.any[0].subjects[0].kind: Invalid value: "Robot": kind must be 'User', 'Group', or 'ServiceAccount'`,
				`spec.rules[0].match.any[0].subjects[1].namespace: Required value: namespace is required when Kind is ServiceAccount`,
				`spec.rules[0].match.any[0].subjects[2].kind: Required value`,
				`spec.rules[0].match.any[0].subjects[3].name: Required value`,
			}},
		{name: "roles", match: `{any: [{resources: {kinds: [Pod]}, roles: [admin, 'ns:admin', 'a:b:c']}]}`,
			want: []string{
				`spec.rules[0].match.any[0].roles[0]: Invalid value: "admin": Role is expected to be in namespace:name format`,
				`spec.rules[0].match.any[0].roles[2]: Invalid value: "a:b:c": Role is expected to be in namespace:name format`,
			}},
		{name: "wildcard kind with others", match: `{any: [{resources: {kinds: ['*', Pod]}}]}`,
			want: []string{"spec.rules[0].match.any[0].resources.kinds: Invalid value: wildcard policy can not deal with more than one kind"}},
		{name: "wildcard kind in background", match: `{any: [{resources: {kinds: ['*']}}]}`, opts: []Option{Background(true)},
			want: []string{"spec.rules[0].match.any[0].resources.kinds: Invalid value: wildcard policy not allowed in background mode. Set spec.background=false to disable background mode for this policy rule"}},
		{name: "user info in background", match: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: u}]}]}`, exclude: `{clusterRoles: [admin]}`, opts: []Option{Background(true)},
			want: []string{
				"spec.rules[0].match.any[0].subjects: Forbidden: only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: invalid variable used at path: spec/rules[0]/match/any[0]/subjects",
				"spec.rules[0].exclude.clusterRoles: Forbidden: only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: invalid variable used at path: spec/rules[0]/exclude/clusterRoles",
			}},
		{name: "user info without background", match: `{any: [{resources: {kinds: [Pod]}, subjects: [{kind: User, name: u}]}]}`, opts: []Option{Background(false)}},
		{name: "namespaced policy", match: `{any: [{resources: {kinds: [Pod, Namespace], namespaces: [a]}}]}`, opts: []Option{Namespaced(true), ClusterScopedKinds("Namespace")},
			want: []string{
				"spec.rules[0].match.any[0].resources.namespaces: Forbidden: Filtering namespaces not allowed in namespaced policies",
				"spec.rules[0].match.any[0].resources.kinds[1]: Forbidden: Cluster wide resource 'Namespace' not allowed in namespaced policy",
			}},
		{name: "identical any filters", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{resources: {kinds: [Pod]}}]}`,
			want: []string{"spec.rules[0]: Invalid value: Rule is matching an empty set"}},
		{name: "legacy exclude equal to match", match: `{resources: {kinds: [Pod], namespaces: [a]}}`, exclude: `{resources: {kinds: [Pod], namespaces: [a]}}`,
			want: []string{"spec.rules[0]: Invalid value: Rule is matching an empty set"}},
		{name: "legacy exclude of a subset", match: `{resources: {kinds: [Pod], namespaces: [a, b]}}`, exclude: `{resources: {kinds: [Pod], namespaces: [a]}}`},
		{name: "legacy exclude names overlap", match: `{resources: {kinds: [Pod], names: [web-1]}}`, exclude: `{resources: {names: ['web-*']}}`,
			want: []string{"spec.rules[0]: Invalid value: Rule is matching an empty set"}},
		{name: "legacy match with exclude any", match: `{resources: {kinds: [Pod]}}`, exclude: `{any: [{resources: {names: [a]}}]}`,
			want: []string{"spec.rules[0]: Invalid value: Rule is matching an empty set"}},
		{name: "legacy match with selector and exclude any", match: `{resources: {kinds: [Pod], selector: {matchLabels: {a: b}}}}`, exclude: `{any: [{resources: {names: [a]}}]}`},
		{name: "exclude may lack kinds", match: `{any: [{resources: {kinds: [Pod]}}]}`, exclude: `{any: [{subjects: [{kind: User, name: x}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustBlock(t, tt.match)
			var ex *api.MatchResources
			if tt.exclude != "" {
				b := mustBlock(t, tt.exclude)
				ex = &b
			}
			r, errs := Compile(m, ex, field.NewPath("spec", "rules").Index(0), tt.opts...)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if (r == nil) != (len(tt.want) > 0) {
				t.Fatalf("rule = %v with %d errors", r, len(got))
			}
		})
	}
}

func TestCompileFilterErrors(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  []string
	}{
		{name: "valid", block: `{any: [{resources: {kinds: [Pod]}}]}`},
		{name: "empty is valid", block: `{}`},
		{name: "filters need no kinds", block: `{all: [{resources: {namespaces: [a]}}]}`},
		{name: "inline resources", block: `{resources: {kinds: [Pod]}, subjects: [{kind: User, name: u}]}`,
			want: []string{
				"spec.match.resources: Forbidden: only any and all are supported here",
				"spec.match.subjects: Forbidden: only any and all are supported here",
			}},
		{name: "any and all", block: `{any: [{resources: {kinds: [Pod]}}], all: [{resources: {kinds: [Pod]}}]}`,
			want: []string{"spec.match: Invalid value: Can't specify any and all together"}},
		{name: "bad subject", block: `{any: [{subjects: [{kind: ServiceAccount, name: x}]}]}`,
			want: []string{"spec.match.any[0].subjects[0].namespace: Required value: namespace is required when Kind is ServiceAccount"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, errs := CompileFilter(mustBlock(t, tt.block), field.NewPath("spec", "match"))
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if (f == nil) != (len(tt.want) > 0) {
				t.Fatalf("filter = %v with %d errors", f, len(got))
			}
		})
	}
}
