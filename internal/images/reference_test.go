package images

import (
	"regexp"
	"strings"
	"testing"
)

// A regular-expression transcription of the reference grammar, shaped like
// upstream's, used as the oracle for the hand-written parser.
const (
	oAlnum      = `[a-z0-9]+`
	oSeparator  = `(?:[._]|__|[-]+)`
	oPathPart   = oAlnum + `(?:` + oSeparator + oAlnum + `)*`
	oRemoteName = oPathPart + `(?:/` + oPathPart + `)*`
	oDomainPart = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
	oDomainName = oDomainPart + `(?:\.` + oDomainPart + `)*`
	oIPv6       = `\[(?:[a-fA-F0-9:]+)\]`
	oDomain     = `(?:` + oDomainName + `|` + oIPv6 + `)` + `(?::[0-9]+)?`
	oTag        = `[\w][\w.-]{0,127}`
	oDigest     = `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
	oName       = `(?:` + oDomain + `/)?` + oRemoteName
)

var (
	oracleReference = regexp.MustCompile(`^(` + oName + `)(?::(` + oTag + `))?(?:@(` + oDigest + `))?$`)
	oracleSplitName = regexp.MustCompile(`^(?:(` + oDomain + `)/)?(` + oRemoteName + `)$`)
	oracleDigest    = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
)

func oracleSplit(s string) (reference, bool) {
	m := oracleReference.FindStringSubmatch(s)
	if m == nil {
		return reference{}, false
	}
	ref := reference{path: m[1], tag: m[2], digest: m[3]}
	if n := oracleSplitName.FindStringSubmatch(m[1]); n != nil {
		ref.domain, ref.path = n[1], n[2]
	}
	return ref, true
}

func checkAgainstOracle(t *testing.T, s string) {
	t.Helper()
	want, wantOK := oracleSplit(s)
	got, gotOK := splitReference(s)
	if wantOK != gotOK || want != got {
		t.Fatalf("splitReference(%q) = %+v, %v; oracle %+v, %v", s, got, gotOK, want, wantOK)
	}
	lower := strings.ToLower(s)
	_, wantOK = oracleSplit(lower)
	_, gotOK = splitReference(lower)
	if wantOK != gotOK {
		t.Fatalf("lower-case %q: %v, oracle %v", lower, gotOK, wantOK)
	}
	if i := strings.IndexByte(s, ':'); i > 0 {
		if (validateDigest(s) == ErrDigestUnsupported) != (isKnownAlg(s[:i]) == false && oracleDigest.MatchString(s)) {
			t.Fatalf("digest %q: unsupported mismatch", s)
		}
	}
}

func isKnownAlg(a string) bool { return a == "sha256" || a == "sha384" || a == "sha512" }

var grammarSamples = []string{
	"", "a", "A", "nginx", "docker.io/nginx", "docker.io/library/nginx:latest", "nginx:1.25",
	"nginx@" + digest, "nginx:1.25@" + digest, "localhost", "localhost:5000", "localhost:5000/a",
	"localhost:5000/a:b", "a:5000/b", "a/b:c:d", "a:b:c", "[::1]/x", "[::1]:80/x:y", "[::1]", "[::1]:5000",
	"[]/x", "[g]/x", "[::1]]/x", "a.b.c/d", "a-b.c/d", "-a.c/d", "a-.c/d", "a..b/c", "a:/b", ":5000/a",
	"a:5x/b", "my_registry.io/app", "Foo/app", "foo/App", "a__b", "a___b", "a_-b", "a.-b", "a--b", "a-",
	"a/", "/a", "a//b", "a b", "a:" + strings.Repeat("t", 128), "a:" + strings.Repeat("t", 129), "a:.t", "a:_t",
	"a@sha256:" + strings.Repeat("A", 32), "a@sha256:" + strings.Repeat("a", 31), "a@Sha2-56:" + strings.Repeat("0", 40),
	"a@s-:" + strings.Repeat("0", 40), "a@-s:" + strings.Repeat("0", 40), "a@s--x:" + strings.Repeat("0", 40),
	"a@b@sha256:" + strings.Repeat("0", 64), "a@sha256:" + strings.Repeat("0", 64) + ":0", "\u212Aube/app",
	"ghcr.io/acme/app:1.0", "123456789012.dkr.ecr.eu-west-3.amazonaws.com/docker/test/nginx:v10.3",
}

func TestSplitReferenceMatchesOracle(t *testing.T) {
	for _, s := range grammarSamples {
		checkAgainstOracle(t, s)
	}
}

func TestValidateDigest(t *testing.T) {
	tests := map[string]error{
		digest:                                      nil,
		"sha384:" + strings.Repeat("a", 96):         nil,
		"sha512:" + strings.Repeat("0", 128):        nil,
		"sha256:" + strings.Repeat("a", 63):         ErrDigestInvalidLength,
		"sha256:" + strings.Repeat("A", 64):         ErrDigestInvalidFormat,
		"md5:" + strings.Repeat("a", 32):            ErrDigestUnsupported,
		"sha256+b64u:LCa0a2j_xo_5m0U8HTBBNBNCLXBkg": ErrDigestUnsupported,
		"Sha256:" + strings.Repeat("a", 64):         ErrDigestInvalidFormat,
		":abc":                                      ErrDigestInvalidFormat,
		"sha256:":                                   ErrDigestInvalidFormat,
		"sha256":                                    ErrDigestInvalidFormat,
	}
	for d, want := range tests {
		if got := validateDigest(d); got != want {
			t.Errorf("validateDigest(%q) = %v, want %v", d, got, want)
		}
	}
}

// FuzzReferenceGrammar checks the hand-written parser against the oracle.
func FuzzReferenceGrammar(f *testing.F) {
	for _, s := range grammarSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkAgainstOracle(t, s)
	})
}
