package migrate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

func TestDevConvert(t *testing.T) {
	f := os.Getenv("DEV_FILE")
	if f == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(f)
	for _, f := range files {
		r, _ := os.Open(f)
		docs, err := api.ReadDocuments(r, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			c, err := Convert(d)
			if err != nil {
				t.Log(err)
				continue
			}
			for _, r := range c.Rules {
				t.Logf("%s %s %s %v", c.Name, r.Rule, r.Type, r.Problems)
			}
			if os.Getenv("DEV_YAML") != "" {
				c.WriteYAML(os.Stdout)
			}
		}
	}
}
