package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

func decodePolicy(t *testing.T, src string) api.PolicyObject {
	t.Helper()
	docs, err := api.ReadDocuments(strings.NewReader(src), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const ruleHead = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
`

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		rules string
		// want are substrings of the error, including the field path.
		want []string
	}{
		{
			name: "duplicate rule names",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`,
			want: []string{"spec.rules[1].name", "Duplicate rule name: 'r'"},
		},
		{
			name: "two rule types",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
    mutate: {patchStrategicMerge: {metadata: {labels: {a: b}}}}
`,
			want: []string{"spec.rules[0]", "Multiple operations defined in the rule 'r'"},
		},
		{
			name: "no rule type",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
`,
			want: []string{"No operation defined in the rule 'r'"},
		},
		{
			name: "pattern and deny together",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      pattern: {metadata: {name: "?*"}}
      deny: {conditions: {any: [{key: a, operator: Equals, value: a}]}}
`,
			want: []string{"spec.rules[0].validate", "exactly one of pattern"},
		},
		{
			name: "invalid JMESPath in a message",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "{{ request.object.metadata.[name }}"
      pattern: {metadata: {name: "?*"}}
`,
			want: []string{"spec.rules[0].validate.message", "invalid JMESPath expression"},
		},
		{
			name: "invalid foreach list",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      foreach:
      - list: "request.object.spec.containers[?"
        deny: {conditions: {any: [{key: a, operator: Equals, value: a}]}}
`,
			want: []string{"spec.rules[0].validate.foreach[0].list", "invalid JMESPath expression"},
		},
		{
			name: "variables in match",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod], names: ["{{ request.object.metadata.name }}"]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`,
			want: []string{"spec.rules[0].match"},
		},
		{
			name: "invalid operator",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    preconditions: {all: [{key: a, operator: Equalz, value: a}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`,
			want: []string{"spec.rules[0].preconditions.all[0].operator", "Equalz"},
		},
		{
			name: "user variables in background mode",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "by {{ request.userInfo.username }}"
      pattern: {metadata: {name: "?*"}}
`,
			want: []string{"spec.rules[0].validate.message", "only select variables are allowed in background mode",
				"variable {{ request.userInfo.username }} is not allowed"},
		},
		{
			name: "context entry without a source",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    context: [{name: x}]
    validate: {pattern: {metadata: {name: "?*"}}}
`,
			want: []string{"spec.rules[0].context[0]", "exactly one of variable"},
		},
		{
			name: "invalid failure action",
			rules: `
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      failureAction: Block
      pattern: {metadata: {name: "?*"}}
`,
			want: []string{"spec.rules[0].validate.failureAction", "Block"},
		},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := decodePolicy(t, ruleHead+tt.rules)
			_, err := eng.CompilePolicy(p)
			if err == nil {
				t.Fatal("expected a compile error")
			}
			var ce *engine.CompileError
			if !errors.As(err, &ce) || ce.Policy != "p" {
				t.Fatalf("error %T %v is not a CompileError for p", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCompileValidPolicies(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	p := decodePolicy(t, ruleHead+`
  - name: r
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate:
      message: "{{ request.object.spec.serviceAccountName }} ok"
      pattern: {metadata: {name: "?*"}}
`)
	cp, err := eng.CompilePolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range cp.Rules() {
		got = append(got, r.Name)
	}
	if len(got) != 3 || got[0] != "r" || got[1] != "autogen-r" || got[2] != "autogen-cronjob-r" {
		t.Errorf("rule names = %v, want r plus autogen rules", got)
	}
}
