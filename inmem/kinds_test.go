package inmem

import "testing"

func TestKinds(t *testing.T) {
	for res, kind := range map[string]string{"pods": "Pod", "networkpolicies": "NetworkPolicy", "widgets": "Widget", "policies": "Policy", "ingresses": "Ingress"} {
		if got := kindFor(res); got != kind {
			t.Errorf("kindFor(%s) = %s, want %s", res, got, kind)
		}
	}
}
