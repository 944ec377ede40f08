package api

import "testing"

func TestParseKindSelector(t *testing.T) {
	tests := []struct {
		in   string
		want [4]string
	}{
		{"Pod", [4]string{"*", "*", "Pod", ""}},
		{"*", [4]string{"*", "*", "*", ""}},
		{"*/*", [4]string{"*", "*", "*", "*"}},
		{"*/scale", [4]string{"*", "*", "*", "scale"}},
		{"*/Pod", [4]string{"*", "*", "Pod", ""}},
		{"v1/Pod", [4]string{"*", "v1", "Pod", ""}},
		{"v2beta1/HorizontalPodAutoscaler", [4]string{"*", "v2beta1", "HorizontalPodAutoscaler", ""}},
		{"v10alpha3/Thing", [4]string{"*", "v10alpha3", "Thing", ""}},
		{"Pod/exec", [4]string{"*", "*", "Pod", "exec"}},
		{"Pod.exec", [4]string{"*", "*", "Pod", "exec"}},
		{"Pods/status", [4]string{"*", "*", "Pods", "status"}},
		{"v1/Pod/eviction", [4]string{"*", "v1", "Pod", "eviction"}},
		{"v1/Pod.eviction", [4]string{"*", "v1", "Pod", "eviction"}},
		{"*/Node/status", [4]string{"*", "*", "Node", "status"}},
		{"apps/v1/Deployment", [4]string{"apps", "v1", "Deployment", ""}},
		{"networking.k8s.io/v1/NetworkPolicy", [4]string{"networking.k8s.io", "v1", "NetworkPolicy", ""}},
		{"apps/*/Deployment", [4]string{"apps", "*", "Deployment", ""}},
		{"apps/*/*", [4]string{"apps", "*", "*", ""}},
		{"apps/v1/Deployment/scale", [4]string{"apps", "v1", "Deployment", "scale"}},
		{"apps/v1/Deployment.scale", [4]string{"apps", "v1", "Deployment", "scale"}},
		{"version/Kind", [4]string{"*", "*", "version", "Kind"}},
		{"vx/Pod", [4]string{"*", "*", "vx", "Pod"}},
		{"a/b/c/d/e", [4]string{"", "", "", ""}},
	}
	for _, tt := range tests {
		g, v, k, sub := ParseKindSelector(tt.in)
		if got := [4]string{g, v, k, sub}; got != tt.want {
			t.Errorf("ParseKindSelector(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
