package migrate

import (
	"context"

	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestPodSecurityFixtures verifies the conversion of validate.podSecurity
// (both levels, with exclusions of every form that converts) on the
// Pod Security Standards' own fixtures (k8s.io/pod-security-admission's
// test/testdata/<level>/v1.37/{pass,fail}): the conversion decides as the
// source on every pod, and without exclusions the fixtures' pass pods
// pass and fail pods fail.
func TestPodSecurityFixtures(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/pod-security-admission").Output()
	if err != nil {
		t.Skipf("k8s.io/pod-security-admission not in the module cache: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "test", "testdata")
	// exclusions of every form that converts (a baseline rule cannot
	// exempt the restricted level's own controls)
	excludes := map[string]map[string]string{
		"baseline": {
			"none": "",
			"pod-level": `
        exclude:
        - controlName: Seccomp
        - controlName: SELinux
        - controlName: AppArmor
        - controlName: Host Namespaces`,
			"images": `
        exclude:
        - controlName: Capabilities
          images: ["registry.k8s.io/pause*"]
        - controlName: Seccomp
          images: ["*"]
        - controlName: HostProcess
          images: ["nothing*"]
        - controlName: /proc Mount Type
          images: ["registry.k8s.io/*"]`,
		},
		"restricted": {
			"none": "",
			"pod-level": `
        exclude:
        - controlName: Seccomp
        - controlName: Running as Non-root
        - controlName: AppArmor
        - controlName: Volume Types`,
			"both": `
        exclude:
        - controlName: Seccomp
        - controlName: Seccomp
          images: ["*"]
        - controlName: SELinux
        - controlName: SELinux
          images: ["registry.k8s.io/*"]`,
			"images": `
        exclude:
        - controlName: Capabilities
          images: ["registry.k8s.io/pause*"]
        - controlName: Seccomp
          images: ["registry.k8s.io/pause"]
        - controlName: Running as Non-root user
          images: ["nothing*"]
        - controlName: Running as Non-root
          images: ["registry.k8s.io/*"]
        - controlName: /proc Mount Type
          images: ["registry.k8s.io/*"]`,
		},
	}
	for _, level := range []string{"baseline", "restricted"} {
		var pods []map[string]any
		var want []string
		for _, verdict := range []string{"pass", "fail"} {
			files, _ := filepath.Glob(filepath.Join(root, level, "v1.37", verdict, "*.yaml"))
			for _, f := range files {
				for _, d := range readDocs(t, f) {
					if d.Kind() != "Pod" {
						continue
					}
					md, _ := d.Object["metadata"].(map[string]any)
					// the pass and fail folders hold pods of the same names
					md["namespace"] = verdict
					defaultVolumes(d.Object)
					pods = append(pods, d.Object)
					want = append(want, verdict)
				}
			}
		}
		// copies whose init containers have other images: exclusions
		// with images then cover some of the containers only
		n := len(pods)
		for _, pod := range pods[:n] {
			cp := copyJSON(pod)
			md, _ := cp["metadata"].(map[string]any)
			md["namespace"] = md["namespace"].(string) + "-mixed"
			spec, _ := cp["spec"].(map[string]any)
			inits, _ := spec["initContainers"].([]any)
			for _, ic := range inits {
				if m, ok := ic.(map[string]any); ok {
					m["image"] = "example.com/other:1"
				}
			}
			pods = append(pods, cp)
		}
		if n < 20 {
			t.Fatalf("%s: %d fixture pods", level, n)
		}
		for name, exclude := range excludes[level] {
			t.Run(level+"/"+name, func(t *testing.T) {
				src := `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: pss
spec:
  validationFailureAction: Enforce
  rules:
  - name: pss
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      podSecurity:
        level: ` + level + `
        version: latest` + exclude + "\n"
				docs, err := api.ReadDocuments(strings.NewReader(src), "pss.yaml")
				if err != nil {
					t.Fatal(err)
				}
				conv, err := Convert(docs[0])
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range conv.Rules {
					if !r.Converted() {
						t.Fatalf("not converted: %v", r.Problems)
					}
				}
				v, err := Verify(context.Background(), []*Conversion{conv}, pods)
				if err != nil {
					t.Fatal(err)
				}
				p := v.Policies[0]
				if p.Evaluations != len(pods) {
					t.Errorf("%d evaluations of %d pods", p.Evaluations, len(pods))
				}
				for _, d := range p.Differences {
					t.Errorf("differs: %s", d)
				}
				if name != "none" {
					return
				}
				set := compileOutput(t, conv)
				for i, pod := range pods[:n] {
					resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
					if err != nil {
						t.Fatal(err)
					}
					got := verdict(resp, nil, "")
					if w := want[i]; !strings.HasPrefix(got, w) {
						t.Errorf("%s: converted %s, the fixture says %s", resourceName(pod), got, w)
					}
				}
			})
		}
	}
}

// compileOutput is the policy set of a conversion's only output.
func compileOutput(t *testing.T, c *Conversion) *engine.PolicySet {
	t.Helper()
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CompilePolicy(c.Outputs[0].Object.(api.PolicyObject))
	if err != nil {
		t.Fatal(err)
	}
	return eng.NewPolicySet(p)
}

// defaultVolumes gives a volume without a source the emptyDir the API
// server defaults it to (the fixtures are written for admission).
func defaultVolumes(pod map[string]any) {
	spec, _ := pod["spec"].(map[string]any)
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			m["emptyDir"] = map[string]any{}
		}
	}
}
