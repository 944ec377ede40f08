package autogen

import (
	"github.com/gavelpolicy/gavel/internal/policykey"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

type cliTest struct {
	Policies []string `json:"policies"`
	Results  []struct {
		Policy string `json:"policy"`
		Rule   string `json:"rule"`
		Kind   string `json:"kind"`
		Result string `json:"result"`
		Status string `json:"status"`
	} `json:"results"`
}

var templateKinds = map[string]bool{
	"DaemonSet": true, "Deployment": true, "Job": true, "StatefulSet": true,
	"ReplicaSet": true, "ReplicationController": true,
}

// TestCorpusAutogenRules checks, for every upstream CLI test result on a
// Pod controller whose rule is written for Pods, that Rules produces the
// generated rule the CLI reports the result under: autogen-<rule> for
// Deployment and friends, autogen-cronjob-<rule> for CronJob.
//
// It reads the whole conformance corpus (upstream policies with their CLI
// tests): it runs with GAVEL_SHARED set.
func TestCorpusAutogenRules(t *testing.T) {
	corpusDir := testshared.Dir(t, "conformance")
	var files []string
	err := filepath.Walk(corpusDir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "kyverno-test.yaml" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ct cliTest
		if err := yaml.Unmarshal(raw, &ct); err != nil {
			continue
		}
		policies := map[string]api.ClassicPolicy{}
		for _, rel := range ct.Policies {
			f, err := os.Open(filepath.Join(filepath.Dir(file), rel))
			if err != nil {
				continue
			}
			docs, err := api.ReadDocuments(f, rel)
			f.Close()
			if err != nil {
				continue
			}
			for _, d := range docs {
				if !isPolicyDoc(d) {
					continue
				}
				p, err := api.DecodePolicy(d)
				if err != nil {
					t.Errorf("%s: %v", rel, err)
					continue
				}
				if cp, ok := p.(api.ClassicPolicy); ok {
					policies[policykey.Key(p)] = cp
				}
			}
		}
		for _, res := range ct.Results {
			result := res.Result
			if result == "" {
				result = res.Status
			}
			if result == "skip" || (!templateKinds[res.Kind] && res.Kind != kindCronJob) {
				continue
			}
			p := policies[res.Policy]
			if p == nil {
				continue
			}
			base, _ := Original(res.Rule)
			src := &api.Rule{}
			for i := range p.GetSpec().Rules {
				if r := &p.GetSpec().Rules[i]; r.Name == base {
					src = r
				}
			}
			kinds := matchKinds(&src.MatchResources)
			if !containsKind(kinds, kindPod) || containsKind(kinds, res.Kind) {
				continue // a rule written for the controller itself
			}
			want := ruleName("autogen", base)
			if res.Kind == kindCronJob {
				want = ruleName("autogen-cronjob", base)
			}
			found := false
			for _, r := range Rules(p) {
				found = found || r.Name == want
			}
			if !found {
				t.Errorf("%s: policy %s: %s result for rule %q: no rule %q generated",
					strings.TrimPrefix(file, corpusDir+"/"), res.Policy, res.Kind, res.Rule, want)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d corpus results checked", checked)
	}
	t.Logf("%d corpus results on Pod controllers checked in %d CLI tests", checked, len(files))
}
