package podsecurity

import (
	"encoding/json"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// FuzzEvaluate feeds arbitrary JSON documents: Evaluate may fail but must
// not panic.
func FuzzEvaluate(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"Pod","spec":{"containers":[{"name":"a","securityContext":{"privileged":true}}]}}`,
		`{"kind":"Deployment","spec":{"template":{"spec":{"hostPID":true}}}}`,
		`{"kind":"CronJob","spec":{"jobTemplate":{"spec":{"template":[]}}}}`,
		`{"kind":"Pod","metadata":{"annotations":{"container.apparmor.security.beta.kubernetes.io/a":"x"}}}`,
		`{"kind":"Pod","spec":{"volumes":[{"name":"v","hostPath":{"path":"/"}}],"containers":"x"}}`,
		`{"kind":"Pod","spec":null,"metadata":7}`,
	} {
		f.Add(seed)
	}
	chk := mustCompile(f, mustPodSecurity(f, `level: restricted
exclude:
- controlName: Capabilities
  images: ['*']
  restrictedField: spec.containers[*].securityContext.capabilities.add
  values: ['*']
- controlName: Host Namespaces`), "r")
	extra := []api.PodSecurityStandard{{ControlName: "Running as Non-root"}, {ControlName: "Seccomp", Images: []string{"?*"}}}
	f.Fuzz(func(t *testing.T, doc string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		_, _ = chk.Evaluate(obj, nil)
		_, _ = chk.Evaluate(obj, extra)
	})
}
