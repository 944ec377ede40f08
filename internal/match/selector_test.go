package match

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The allocation-free validators must never accept what apimachinery rejects.
func TestFastLabelValidators(t *testing.T) {
	keys := []string{
		"app", "app.kubernetes.io/name", "example.com/a_b.c-d", "a", "A1", "1a",
		"", "/", "a/", "/a", "a/b/c", "-a", "a-", "_a", "a.", "Example.com/x", "ex_ample.com/x",
		"ex..ample.com/x", "-ex.com/x", "ex-.com/x", "a b", "é", "a/" + string(make([]byte, 64)),
		"x.y/" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	}
	for _, k := range keys {
		fast := isQualifiedName(k)
		slow := len(validation.IsQualifiedName(k)) == 0
		if fast != slow {
			t.Errorf("isQualifiedName(%q) = %v, apimachinery %v", k, fast, slow)
		}
		fast = isLabelValue(k)
		slow = len(validation.IsValidLabelValue(k)) == 0
		if fast != slow {
			t.Errorf("isLabelValue(%q) = %v, apimachinery %v", k, fast, slow)
		}
	}
}

func TestWildcardSelectorInvalidLabel(t *testing.T) {
	r := mustRule(t, `{all: [{resources: {kinds: [Pod], selector: {matchLabels: {'app*': '*'}}}}]}`, "")
	ok, reason, err := r.Matches(podRes("p", "a", map[string]string{"app": "not valid"}), Request{})
	if err != nil || ok {
		t.Fatalf("got %v %v", ok, err)
	}
	want := `failed to parse selector: values[0][app]: Invalid value: "not valid": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	if reason != want {
		t.Fatalf("reason %q", reason)
	}
	ok, _, _ = r.Matches(podRes("p", "a", map[string]string{"app": "not valid", "app2": "fine"}), Request{})
	if !ok {
		t.Fatal("a valid matching label must satisfy the entry")
	}
}
