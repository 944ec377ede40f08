package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

func devFolder(t *testing.T, dir string) (convs []*Conversion, resources []map[string]any) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		f, _ := os.Open(filepath.Join(dir, e.Name()))
		docs, err := api.ReadDocuments(f, e.Name())
		f.Close()
		if err != nil {
			continue
		}
		for _, d := range docs {
			if d.Kind() == "ClusterPolicy" || d.Kind() == "Policy" {
				c, err := Convert(d)
				if err == nil {
					convs = append(convs, c)
				}
			}
		}
	}
	seen := map[string]bool{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".yaml") || filepath.Dir(p) == dir {
			return nil
		}
		f, _ := os.Open(p)
		docs, err := api.ReadDocuments(f, p)
		f.Close()
		if err != nil {
			return nil
		}
		for _, d := range docs {
			av := d.APIVersion()
			if d.Kind() == "" || strings.Contains(av, "kyverno.io") && !strings.HasPrefix(av, "kyverno.io/v2") || strings.Contains(av, "chainsaw") || d.Kind() == "Test" || d.Kind() == "Values" {
				continue
			}
			md, _ := d.Object["metadata"].(map[string]any)
			if md == nil {
				continue
			}
			if ns, _ := md["namespace"].(string); ns == "" {
				md["namespace"] = "default"
			}
			k := resourceName(d.Object)
			if seen[k] {
				continue
			}
			seen[k] = true
			resources = append(resources, d.Object)
		}
		return nil
	})
	return
}

func TestDevCorpus(t *testing.T) {
	root := os.Getenv("DEV_CORPUS")
	if root == "" {
		t.Skip()
	}
	dirs, _ := filepath.Glob(root)
	sort.Strings(dirs)
	var eq, diff, unver, probs int
	for _, dir := range dirs {
		convs, resources := devFolder(t, dir)
		for _, c := range convs {
			for _, r := range c.Rules {
				if !r.Converted() {
					fmt.Printf("PROBLEM %s %s: %v\n", c.Name, r.Rule, r.Problems)
				}
			}
			if !c.Converted() {
				probs++
			}
		}
		cluster := inmem.New(resources...)
		v, err := Verify(context.Background(), convs, resources, WithEngineOptions(engine.WithClient(cluster), engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster)))
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		for _, p := range v.Policies {
			for _, u := range p.Unverified {
				fmt.Printf("UNVERIFIED %s: %s\n", p.Policy, u)
			}
			for _, d := range p.Differences {
				fmt.Printf("DIFF %s: %s\n", p.Policy, d)
			}
			switch {
			case len(p.Differences) > 0:
				diff++
			case len(p.Compared) > 0 && len(p.Unverified) == 0:
				eq++
			default:
				unver++
			}
		}
	}
	fmt.Printf("equal %d, differ %d, unverified %d, with problems %d\n", eq, diff, unver, probs)
}
