package inmem

import "testing"

func TestKinds(t *testing.T) {
	for res, kind := range map[string]string{"pods": "Pod", "networkpolicies": "NetworkPolicy", "widgets": "Widget", "policies": "Policy", "ingresses": "Ingress"} {
		if got := kindFor(res); got != kind {
			t.Errorf("kindFor(%s) = %s, want %s", res, got, kind)
		}
	}
}

func TestResourceFor(t *testing.T) {
	for kind, res := range map[string]string{"Pod": "pods", "NetworkPolicy": "networkpolicies", "Widget": "widgets", "Gateway": "gateways",
		"Ingress": "ingresses", "Proxy": "proxies", "Box": "boxes", "Endpoints": "endpoints"} {
		if got := resourceFor(kind); got != res {
			t.Errorf("resourceFor(%s) = %s, want %s", kind, got, res)
		}
	}
}
