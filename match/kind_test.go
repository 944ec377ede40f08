package match

import "testing"

func TestParseKindSelector(t *testing.T) {
	tests := []struct {
		in   string
		want KindSelector
	}{
		{"Pod", KindSelector{"*", "*", "Pod", ""}},
		{"*", KindSelector{"*", "*", "*", ""}},
		{"*/*", KindSelector{"*", "*", "*", "*"}},
		{"*/scale", KindSelector{"*", "*", "*", "scale"}},
		{"*/Pod", KindSelector{"*", "*", "Pod", ""}},
		{"v1/Pod", KindSelector{"*", "v1", "Pod", ""}},
		{"v2beta1/HorizontalPodAutoscaler", KindSelector{"*", "v2beta1", "HorizontalPodAutoscaler", ""}},
		{"v10alpha3/Thing", KindSelector{"*", "v10alpha3", "Thing", ""}},
		{"Pod/exec", KindSelector{"*", "*", "Pod", "exec"}},
		{"Pod.exec", KindSelector{"*", "*", "Pod", "exec"}},
		{"Pods/status", KindSelector{"*", "*", "Pods", "status"}},
		{"v1/Pod/eviction", KindSelector{"*", "v1", "Pod", "eviction"}},
		{"v1/Pod.eviction", KindSelector{"*", "v1", "Pod", "eviction"}},
		{"*/Node/status", KindSelector{"*", "*", "Node", "status"}},
		{"apps/v1/Deployment", KindSelector{"apps", "v1", "Deployment", ""}},
		{"networking.k8s.io/v1/NetworkPolicy", KindSelector{"networking.k8s.io", "v1", "NetworkPolicy", ""}},
		{"apps/*/Deployment", KindSelector{"apps", "*", "Deployment", ""}},
		{"apps/*/*", KindSelector{"apps", "*", "*", ""}},
		{"apps/v1/Deployment/scale", KindSelector{"apps", "v1", "Deployment", "scale"}},
		{"apps/v1/Deployment.scale", KindSelector{"apps", "v1", "Deployment", "scale"}},
		{"version/Kind", KindSelector{"*", "*", "version", "Kind"}},
		{"vx/Pod", KindSelector{"*", "*", "vx", "Pod"}},
		{"a/b/c/d/e", KindSelector{}},
	}
	for _, tt := range tests {
		if got := ParseKindSelector(tt.in); got != tt.want {
			t.Errorf("ParseKindSelector(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

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
