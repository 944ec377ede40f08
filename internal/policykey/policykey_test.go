package policykey

import (
	"testing"

	"github.com/gavelpolicy/gavel/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestKeyAndNamespace(t *testing.T) {
	tests := []struct {
		p              api.PolicyObject
		key, namespace string
	}{
		{&api.ClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, "c", ""},
		{&api.ClusterPolicy{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "stray"}}, "c", ""},
		{&api.Policy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"}}, "team/p", "team"},
	}
	for _, tt := range tests {
		if got := Key(tt.p); got != tt.key {
			t.Errorf("Key(%s) = %q, want %q", tt.p.GetName(), got, tt.key)
		}
		if got := Namespace(tt.p); got != tt.namespace {
			t.Errorf("Namespace(%s) = %q, want %q", tt.p.GetName(), got, tt.namespace)
		}
	}
}
