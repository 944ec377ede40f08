package match

import "testing"

func TestKindSelectorMatches(t *testing.T) {
	type gvks struct{ g, v, k, s string }
	pod := gvks{"", "v1", "Pod", ""}
	tests := []struct {
		sel  string
		gvk  gvks
		want bool
	}{
		{"Pod", pod, true},
		{"Pod", gvks{"", "v1", "Pod", "exec"}, false},
		{"Pod", gvks{"", "v1", "Pod", "ephemeralcontainers"}, true},
		{"v1/Pod", gvks{"", "v1", "Pod", "ephemeralcontainers"}, true},
		{"Pod", gvks{"custom.io", "v1", "Pod", "ephemeralcontainers"}, false},
		{"Pod/ephemeralcontainers", gvks{"", "v1", "Pod", "ephemeralcontainers"}, true},
		{"Pod/exec", gvks{"", "v1", "Pod", "exec"}, true},
		{"Pod/*", gvks{"", "v1", "Pod", "exec"}, true},
		{"Pod/*", pod, true},
		{"*", pod, true},
		{"*", gvks{"", "v1", "Pod", "status"}, false},
		{"*/*", gvks{"", "v1", "Pod", "status"}, true},
		{"*/status", gvks{"apps", "v1", "Deployment", "status"}, true},
		{"*/status", gvks{"apps", "v1", "Deployment", ""}, false},
		{"v1/Pod", pod, true},
		{"v2/Pod", pod, false},
		{"apps/v1/Deployment", gvks{"apps", "v1", "Deployment", ""}, true},
		{"apps/v1/Deployment", gvks{"extensions", "v1", "Deployment", ""}, false},
		{"Deploy*", gvks{"apps", "v1", "Deployment", ""}, true},
		{"pod", pod, false},
		{"a/b/c/d/e", pod, false},
	}
	for _, tt := range tests {
		k := ParseKindSelector(tt.sel)
		if got := k.Matches(tt.gvk.g, tt.gvk.v, tt.gvk.k, tt.gvk.s); got != tt.want {
			t.Errorf("%q.Matches(%v) = %v, want %v", tt.sel, tt.gvk, got, tt.want)
		}
		m := newKindMatcher(k)
		res := Resource{Group: tt.gvk.g, Version: tt.gvk.v, Kind: tt.gvk.k, Subresource: tt.gvk.s}
		if got := m.matches(&res); got != tt.want {
			t.Errorf("compiled %q on %v = %v, want %v", tt.sel, tt.gvk, got, tt.want)
		}
	}
}

func TestKindSelectorString(t *testing.T) {
	if s := ParseKindSelector("Pod/exec").String(); s != "*/*/Pod/exec" {
		t.Fatal(s)
	}
	if s := ParseKindSelector("apps/v1/Deployment").String(); s != "apps/v1/Deployment" {
		t.Fatal(s)
	}
}
