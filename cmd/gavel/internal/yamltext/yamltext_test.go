package yamltext

import (
	"math/rand"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestAppendKeyString compares AppendKeyString with yaml.v2 (through
// sigs.k8s.io/yaml) for a top-level key and for the first key of a list
// item, on random strings of the characters that decide the style and the
// folding; PlainSafe strings must come out as they are.
func TestAppendKeyString(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	frags := []string{"word", "a", " ", "  ", ":", ": ", "#", " #", "'", `"`, "[", "{", ",", "-", "?", "!", "&", "*", "|", ">", "%", "@", "`", "longerwordhere", "/", ".", "é", "\n", "yes", "null", "1"}
	cases := []string{"", "plain", "yes", "a: b", "trailing ", " leading", strings.Repeat("fold me ", 30)}
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for j := r.Intn(30); j >= 0; j-- {
			b.WriteString(frags[r.Intn(len(frags))])
		}
		cases = append(cases, b.String())
	}
	fast := 0
	for _, s := range cases {
		top, err := yaml.Marshal(map[string]string{"message": s})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := AppendKeyString(nil, 0, "message", s); ok {
			fast++
			if string(got) != string(top) {
				t.Fatalf("%q at column 0:\n got %q\nwant %q", s, got, top)
			}
		}
		item, err := yaml.Marshal([]map[string]string{{"message": s}})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := AppendKeyString([]byte("- "), 2, "message", s); ok && string(got) != string(item) {
			t.Fatalf("%q in a list item:\n got %q\nwant %q", s, got, item)
		}
		if PlainSafe(s) && string(top) != "message: "+s+"\n" {
			t.Fatalf("PlainSafe(%q) but yaml.v2 writes %q", s, top)
		}
	}
	if fast < len(cases)/3 {
		t.Fatalf("only %d of %d strings took the fast path", fast, len(cases))
	}
}
