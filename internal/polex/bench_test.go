package polex

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/internal/match"
)

func BenchmarkCandidatesAndMatch(b *testing.B) {
	var docs []string
	for i := 0; i < 200; i++ {
		docs = append(docs, fmt.Sprintf(`apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: e%d, namespace: ns%d}
spec:
  exceptions:
  - policyName: policy-%d
    ruleNames: [rule-a, 'rule-b*']
  match:
    any:
    - resources: {kinds: [Pod], namespaces: [ns%d], names: ['tool-*']}`, i, i, i%20, i))
	}
	s := mustSet(b, strings.Join(docs, "\n---\n"))
	res := match.Resource{Version: "v1", Kind: "Pod", Name: "tool-1", Namespace: "ns7"}
	req := match.Request{Operation: "CREATE"}
	b.Run("miss-policy", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = s.Candidates("other", "rule-a")
		}
	})
	b.Run("candidates-and-match", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			for _, e := range s.Candidates("policy-7", "rule-b2") {
				_, _ = e.Matches(res, req)
			}
		}
	})
}
