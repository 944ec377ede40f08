package admission

import (
	"testing"

	goyaml "sigs.k8s.io/yaml/goyaml.v2"
)

// The denial message's YAML is yaml.v2's, byte for byte, whether written
// directly or by yaml.v2 (names or messages it cannot render directly).
func TestFailuresYAMLIsYAMLv2s(t *testing.T) {
	long := "validation error: Running as root is not allowed. Either the field spec.securityContext.runAsNonRoot must be set to `true`, or the fields spec.containers[*].securityContext.runAsNonRoot, spec.initContainers[*].securityContext.runAsNonRoot and spec.ephemeralContainers[*].securityContext.runAsNonRoot must be set to `true`. rule run-as-non-root[0] failed at path /spec/securityContext/runAsNonRoot/ rule run-as-non-root[1] failed at path /spec/containers/0/securityContext/runAsNonRoot/"
	direct := 0
	for _, failures := range []map[string]any{
		{"require-team": map[string]string{"check-team": "validation error: label `team` is required. rule check-team failed at path /metadata/labels/team/"}},
		{"b-policy": map[string]string{"z": "short", "a": "it's: quoted"}, "a-policy": map[string]string{"r": long}},
		{"p": map[string]string{"r": "- starts with a dash", "s": "ends with a space ", "t": "has #hash and ' quote"}},
		{"p": map[string]string{"r": "multi\nline"}},          // left to yaml.v2
		{"true": map[string]string{"r": "a name YAML reads"}}, // left to yaml.v2
		{"p": map[string]string{"r": ""}},                     // left to yaml.v2
	} {
		want, err := goyaml.Marshal(failures)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := failuresYAML(failures)
		if !ok {
			continue
		}
		direct++
		if string(got) != string(want) {
			t.Errorf("failuresYAML:\n%s\nyaml.v2:\n%s", got, want)
		}
	}
	if direct != 2 {
		t.Errorf("%d maps written directly, want 2", direct)
	}
}
