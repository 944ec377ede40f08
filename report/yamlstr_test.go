package report

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
)

// TestAppendKeyStringMatchesYAML compares appendKeyString with yaml.v2 on
// the strings a report holds and on random ones built from the characters
// that decide the style and the folding.
func TestAppendKeyStringMatchesYAML(t *testing.T) {
	cases := []string{
		"validation rule 'check-runasnonroot' passed.",
		"validation error: Running as root is not allowed. rule run-as-non-root failed at path /spec/securityContext/runAsNonRoot/",
		`Validation rule 'restricted' failed. It violates PodSecurity "restricted:latest": (Forbidden reason: allowPrivilegeEscalation != false, field error list: [spec.containers[0].securityContext.allowPrivilegeEscalation is forbidden, forbidden values found: nil])`,
		`[{"ID":"allowPrivilegeEscalation","Name":"Privilege Escalation","Images":["nginx"]}]`,
		"mutated Pod/pod-1 in namespace team-a",
		"a: b", "a:b", "a #b", "a#b", "#a", ":a", ": a", "?a", "? a", "'quoted'", "it's", "trailing ", "x:", "yes", "Yes1", "null", "Null", "~x", "true", "on", "off", "ON",
	}
	rnd := rand.New(rand.NewSource(3))
	frags := []string{"word", "a", " ", "  ", ":", ": ", "#", " #", "'", `"`, "[", "]", "{", "}", ",", "-", "?", "!", "&", "*", "|", ">", "%", "@", "`", "x", "longerwordhere", "/", "."}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		var b strings.Builder
		for j := rnd.Intn(40); j >= 0; j-- {
			b.WriteString(frags[rnd.Intn(len(frags))])
		}
		cases = append(cases, b.String())
	}
	for _, s := range cases {
		for _, nested := range []bool{false, true} {
			keyCol := 2
			var want []byte
			var err error
			if nested {
				keyCol = 4
				want, err = renderInRef("name", s)
			} else {
				want, err = renderInItem(map[string]any{"message": s}, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			key := "message"
			if nested {
				key = "name"
			}
			got, ok := appendKeyString(nil, keyCol, key, s)
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("%q (nested %v):\n got %q\nwant %q", s, nested, got, want)
			}
		}
		// properties: keys at column 4 under "properties:"
		want, err := renderInItem(map[string]any{"properties": map[string]any{"controlsJSON": s}}, false)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendKeyString([]byte("properties:\n    "), 4, "controlsJSON", s)
		if ok && !bytes.Equal(got, want) {
			t.Fatalf("%q (property):\n got %q\nwant %q", s, got, want)
		}
	}
}
