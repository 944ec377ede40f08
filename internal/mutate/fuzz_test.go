package mutate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// goldenSeeds returns (patch, resource) pairs of the golden cases as JSON.
func goldenSeeds(f *testing.F, jsonPatch bool) [][2]string {
	f.Helper()
	var out [][2]string
	for _, sec := range goldenSections {
		if sec.jsonPatch != jsonPatch {
			continue
		}
		dirs, _ := filepath.Glob(filepath.Join("testdata", sec.dir, "*"))
		for _, dir := range dirs {
			res, err := os.ReadFile(filepath.Join(dir, "resource.yaml"))
			if err != nil {
				continue
			}
			patch, err := os.ReadFile(filepath.Join(dir, "patch.yaml"))
			if err != nil {
				if patch, err = os.ReadFile(filepath.Join(dir, "patch.json")); err != nil {
					continue
				}
			}
			rj, err1 := yaml.YAMLToJSON(res)
			pj, err2 := yaml.YAMLToJSON(patch)
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, [2]string{string(pj), string(rj)})
		}
	}
	return out
}

func FuzzStrategicMerge(f *testing.F) {
	for _, s := range goldenSeeds(f, false) {
		f.Add(s[0], s[1])
	}
	f.Add(`{"a":[{"(b)":"*","c":{"+(d)":1}},{"<(e)":"x"}]}`, `{"a":[{"b":"1"},{"b":"2","e":"x"}]}`)
	f.Add(`{"$patch":"replace","x":null}`, `{"x":1}`)
	f.Fuzz(func(t *testing.T, patchJSON, resourceJSON string) {
		var patch any
		if json.Unmarshal([]byte(patchJSON), &patch) != nil {
			return
		}
		var resource map[string]any
		if json.Unmarshal([]byte(resourceJSON), &resource) != nil || resource == nil {
			return
		}
		sm, err := CompileStrategicMerge(patch)
		if err != nil {
			return
		}
		before := deepCopyValue(resource)
		res, err := sm.Mutate(resource)
		if !reflect.DeepEqual(before, resource) {
			t.Fatalf("resource modified")
		}
		if err != nil {
			return
		}
		if _, err := Diff(resource, res.Object); err != nil {
			t.Fatalf("diff of a patched resource: %v", err)
		}
	})
}

func FuzzJSONPatch(f *testing.F) {
	for _, s := range goldenSeeds(f, true) {
		f.Add(s[0], s[1])
	}
	f.Add(`[{"op":"add","path":"/a/-1/b","value":1}]`, `{"a":[]}`)
	f.Add(`- op: move
  from: /a
  path: /a/b`, `{"a":{"c":1}}`)
	f.Fuzz(func(t *testing.T, ops, resourceJSON string) {
		var resource map[string]any
		if json.Unmarshal([]byte(resourceJSON), &resource) != nil || resource == nil {
			return
		}
		jp, err := CompileJSONPatch(ops)
		if err != nil {
			return
		}
		before := deepCopyValue(resource)
		res, err := jp.Mutate(resource)
		if !reflect.DeepEqual(before, resource) {
			t.Fatalf("resource modified")
		}
		if err != nil {
			return
		}
		if _, err := Diff(resource, res.Object); err != nil {
			t.Fatalf("diff of a patched resource: %v", err)
		}
	})
}
