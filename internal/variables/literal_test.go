package variables

import "testing"

// TestLiteral: Literal gives what Render gives for templates without
// variables, escapes resolved, and nothing for templates with variables.
func TestLiteral(t *testing.T) {
	for _, tc := range []struct {
		src, want string
		literal   bool
	}{
		{"plain text.", "plain text.", true},
		{"", "", true},
		{`escaped \{{ not a variable }}`, "", true},
		{"{{ request.object.metadata.name }}", "", false},
		{"name: {{ request.name }}!", "", false},
	} {
		tmpl, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		got, ok := tmpl.Literal()
		if ok != tc.literal {
			t.Errorf("%q: literal %v, want %v", tc.src, ok, tc.literal)
			continue
		}
		if !ok {
			continue
		}
		rendered, err := tmpl.Render(nil)
		if err != nil || rendered != got {
			t.Errorf("%q: Literal %q, Render %v (%v)", tc.src, got, rendered, err)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("%q: %q, want %q", tc.src, got, tc.want)
		}
	}
}
