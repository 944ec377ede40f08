package engine

import (
	"reflect"
	"testing"
)

func TestSplitVariablePath(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"request.operation", []string{"request", "operation"}},
		{"registry", []string{"registry"}},
		{`request.object.metadata.annotations."example.com/owner"`, []string{"request", "object", "metadata", "annotations", "example.com/owner"}},
		{`a."b.c".d`, []string{"a", "b.c", "d"}},
		{`a."say ""hi""".b`, []string{"a", `say "hi"`, "b"}},
		// not well formed: split at every dot, as before
		{`a."b.c`, []string{"a", `"b`, "c"}},
	}
	for _, tt := range tests {
		if got := splitVariablePath(tt.name); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitVariablePath(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
