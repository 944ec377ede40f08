package celpolicy

import "testing"

// TestGlob checks matchImageReferences globs against upstream's syntax
// (gobwas/glob without separators).
func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"ghcr.io/kyverno/test-verify-image*", []string{"ghcr.io/kyverno/test-verify-image:signed", "ghcr.io/kyverno/test-verify-image"}, []string{"docker.io/kyverno/test-verify-image"}},
		{"*", []string{"", "a/b/c:d"}, nil},
		{"ghcr.io/*", []string{"ghcr.io/a/b/c:v1", "ghcr.io/"}, []string{"ghcr.io", "docker.io/ghcr.io/x"}},
		{"docker.io/library/nginx:1.2?", []string{"docker.io/library/nginx:1.27"}, []string{"docker.io/library/nginx:1.2", "docker.io/library/nginx:1.270"}},
		{"ghcr.io/{acme,kyverno}/*", []string{"ghcr.io/acme/app", "ghcr.io/kyverno/x:1"}, []string{"ghcr.io/other/app"}},
		{"ghcr.io/app:v[0-9]", []string{"ghcr.io/app:v1"}, []string{"ghcr.io/app:vx", "ghcr.io/app:v10"}},
		{"ghcr.io/app:v[!0-9]", []string{"ghcr.io/app:vx"}, []string{"ghcr.io/app:v1"}},
		{`ghcr.io/a\*b`, []string{"ghcr.io/a*b"}, []string{"ghcr.io/axb"}},
		{"reg.io/{a,b{c,d}}*", []string{"reg.io/a1", "reg.io/bc", "reg.io/bd2"}, []string{"reg.io/b", "reg.io/c"}},
		{"x.io/a.b+c", []string{"x.io/a.b+c"}, []string{"x.io/aXb+c", "x.io/a.bbc"}},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		for _, s := range tt.yes {
			if !g.match(s) {
				t.Errorf("%s does not match %q", tt.pattern, s)
			}
		}
		for _, s := range tt.no {
			if g.match(s) {
				t.Errorf("%s matches %q", tt.pattern, s)
			}
		}
	}
	for _, bad := range []string{"a[b", "a{b,c", `a\`, "a[]b"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("%s compiled", bad)
		}
	}
}

// TestCheckPEM checks the PEM fields of attestors as the verifier reads
// them.
func TestCheckPEM(t *testing.T) {
	const key = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEvpsc4RQi49Zj+eg4IsrEIegtmgxR
sRjJb9uroEyW8EYDKrezihZtH/wphUXr65TVPefGfYgeXELIZVYDF9cVCQ==
-----END PUBLIC KEY-----`
	tests := []struct {
		s    string
		kind pemKind
		ok   bool
	}{
		{key, pemPublicKeys, true},
		{key + "\n" + key, pemPublicKeys, true},
		{"", pemPublicKeys, true},
		{"nope", pemPublicKeys, false},
		{key + "\ntrailing", pemPublicKeys, false},
		{key, pemCertificates, false},
		{"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----", pemPublicKeys, false},
	}
	for i, tt := range tests {
		if errs := checkPEM(nil, tt.s, tt.kind); (len(errs) == 0) != tt.ok {
			t.Errorf("%d: %v", i, errs)
		}
	}
}
