package podsecurity

import (
	"math/rand"
	"regexp"
	"testing"
)

// upstreamDetail is the expression upstream reads container names with.
var upstreamDetail = regexp.MustCompile(`container(?:s)?\s*(.*?)\s*must`)

func TestContainerNames(t *testing.T) {
	tests := []struct {
		detail, want string
		ok           bool
	}{
		{`container "app" must set securityContext.allowPrivilegeEscalation=false`, `"app"`, true},
		{`containers "a", "b" must not include "NET_RAW" in securityContext.capabilities.add`, `"a", "b"`, true},
		{`pod or containers "a" must set securityContext.runAsNonRoot=true`, `"a"`, true},
		{`host namespaces (hostNetwork=true)`, "", false},
		{"containers \"a\"\n must", `"a"`, true},
		{"container \"a\nb\" must", "", false},
		{`containersmust`, "", true},
	}
	for _, tt := range tests {
		got, ok := containerNames(tt.detail)
		if got != tt.want || ok != tt.ok {
			t.Errorf("containerNames(%q) = %q, %v; want %q, %v", tt.detail, got, ok, tt.want, tt.ok)
		}
	}
}

// TestContainerNamesMatchesRegexp compares containerNames with upstream's
// expression on random texts made of the fragments that matter.
func TestContainerNamesMatchesRegexp(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	frags := []string{"container", "containers", "s", " ", "\n", "\t", "must", "mus", `"a"`, ", ", "x", "contain", "er", "é", `"b"`}
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := 0; i < n; i++ {
		s := ""
		for j := r.Intn(8); j > 0; j-- {
			s += frags[r.Intn(len(frags))]
		}
		m := upstreamDetail.FindStringSubmatch(s)
		got, ok := containerNames(s)
		if (m != nil) != ok || (ok && m[1] != got) {
			t.Fatalf("%q: regexp %q, containerNames %q %v", s, m, got, ok)
		}
	}
}
