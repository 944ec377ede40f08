package variables

import (
	"slices"
	"testing"
)

func TestKeyPath(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"request.object.metadata.name", []string{"request", "object", "metadata", "name"}},
		{`metadata.annotations."example.com/owner"`, []string{"metadata", "annotations", "example.com/owner"}},
		{`a."b.c".d`, []string{"a", "b.c", "d"}},
		{`a."unterminated`, []string{"a", `"unterminated`}},
		{"single", []string{"single"}},
	} {
		if got := KeyPath(tc.key); !slices.Equal(got, tc.want) {
			t.Errorf("KeyPath(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}
