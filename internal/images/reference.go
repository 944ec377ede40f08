package images

import (
	"errors"
	"strconv"
	"strings"
)

// The errors of reference parsing. Their messages are those of the libraries
// upstream uses (distribution's reference and opencontainers' go-digest), so
// that error text in reports matches.
var (
	ErrReferenceInvalidFormat = errors.New("invalid reference format")
	ErrNameContainsUppercase  = errors.New("repository name must be lowercase")
	ErrNameEmpty              = errors.New("repository name must have at least one component")
	ErrNameTooLong            = errors.New("repository name must not be more than " + strconv.Itoa(maxNameLength) + " characters")
	ErrDigestInvalidFormat    = errors.New("invalid checksum digest format")
	ErrDigestInvalidLength    = errors.New("invalid checksum digest length")
	ErrDigestUnsupported      = errors.New("unsupported digest algorithm")
)

const maxNameLength = 255

// The reference grammar, as upstream's reference package defines it:
//
//	reference      := name [ ":" tag ] [ "@" digest ]
//	name           := [ domain "/" ] remote-name
//	domain         := host [ ":" port-number ]
//	host           := domain-name | "[" ipv6 "]"
//	domain-name    := domain-component ( "." domain-component )*
//	domain-component := [a-zA-Z0-9] | [a-zA-Z0-9] [a-zA-Z0-9-]* [a-zA-Z0-9]
//	ipv6           := [a-fA-F0-9:]+
//	port-number    := [0-9]+
//	remote-name    := path-component ( "/" path-component )*
//	path-component := alnum ( separator alnum )*
//	alnum          := [a-z0-9]+
//	separator      := "." | "_" | "__" | "-"+
//	tag            := [\w][\w.-]{0,127}
//	digest         := algorithm ":" [0-9a-fA-F]{32,}
//	algorithm      := alg-part ( [-_+.] alg-part )*
//	alg-part       := [A-Za-z][A-Za-z0-9]*
//
// When the first element of a name can be a domain and the rest a
// remote-name, it is the domain. The parser below is hand-written for speed;
// reference_test.go checks it against a regular-expression transcription of
// the grammar.

// reference is a parsed image reference.
type reference struct {
	domain, path, tag, digest string
}

// parseReference parses s as upstream's reference.Parse does.
func parseReference(s string) (reference, error) {
	ref, ok := splitReference(s)
	if !ok {
		switch {
		case s == "":
			return reference{}, ErrNameEmpty
		case hasUpper(s):
			if _, ok := splitReference(strings.ToLower(s)); ok {
				return reference{}, ErrNameContainsUppercase
			}
		}
		return reference{}, ErrReferenceInvalidFormat
	}
	if len(ref.path) > maxNameLength {
		return reference{}, ErrNameTooLong
	}
	if ref.digest != "" {
		if err := validateDigest(ref.digest); err != nil {
			return reference{}, err
		}
	}
	return ref, nil
}

// splitReference splits s into its parts if it matches the grammar.
func splitReference(s string) (ref reference, ok bool) {
	name := s
	if i := strings.IndexByte(s, '@'); i >= 0 {
		name, ref.digest = s[:i], s[i+1:]
		if !isDigestSyntax(ref.digest) {
			return reference{}, false
		}
	}
	// A tag cannot hold '/' or ':', and a name holds ':' only in its domain,
	// before the first '/': a ':' after the last '/' starts the tag.
	if i := strings.LastIndexByte(name, ':'); i >= 0 && i > strings.LastIndexByte(name, '/') {
		name, ref.tag = name[:i], name[i+1:]
		if !isTag(ref.tag) {
			return reference{}, false
		}
	}
	if i := strings.IndexByte(name, '/'); i >= 0 && isDomain(name[:i]) && isRemoteName(name[i+1:]) {
		ref.domain, ref.path = name[:i], name[i+1:]
		return ref, true
	}
	if isRemoteName(name) {
		ref.path = name
		return ref, true
	}
	return reference{}, false
}

func isRemoteName(s string) bool {
	for {
		i := strings.IndexByte(s, '/')
		if i < 0 {
			return isPathComponent(s)
		}
		if !isPathComponent(s[:i]) {
			return false
		}
		s = s[i+1:]
	}
}

func isPathComponent(s string) bool {
	i := 0
	for {
		start := i
		for i < len(s) && isLowerAlnum(s[i]) {
			i++
		}
		if i == start {
			return false
		}
		if i == len(s) {
			return true
		}
		switch s[i] {
		case '.':
			i++
		case '_':
			i++
			if i < len(s) && s[i] == '_' {
				i++
			}
		case '-':
			for i < len(s) && s[i] == '-' {
				i++
			}
		default:
			return false
		}
	}
}

func isDomain(s string) bool {
	var rest string
	if strings.HasPrefix(s, "[") {
		j := strings.IndexByte(s, ']')
		if j < 2 {
			return false
		}
		for k := 1; k < j; k++ {
			if c := s[k]; !(isHex(c) || c == ':') {
				return false
			}
		}
		rest = s[j+1:]
	} else {
		host := s
		if k := strings.IndexByte(s, ':'); k >= 0 {
			host, rest = s[:k], s[k:]
		}
		if !isDomainName(host) {
			return false
		}
	}
	if rest == "" {
		return true
	}
	if rest[0] != ':' || len(rest) == 1 {
		return false
	}
	for k := 1; k < len(rest); k++ {
		if rest[k] < '0' || rest[k] > '9' {
			return false
		}
	}
	return true
}

func isDomainName(s string) bool {
	for {
		part := s
		i := strings.IndexByte(s, '.')
		if i >= 0 {
			part = s[:i]
		}
		if part == "" || !isAlnum(part[0]) || !isAlnum(part[len(part)-1]) {
			return false
		}
		for k := 1; k < len(part)-1; k++ {
			if !isAlnum(part[k]) && part[k] != '-' {
				return false
			}
		}
		if i < 0 {
			return true
		}
		s = s[i+1:]
	}
}

func isTag(s string) bool {
	if len(s) == 0 || len(s) > 128 || !isWord(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isWord(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// isDigestSyntax is the digest shape the reference grammar accepts; the
// algorithm and the value are checked afterwards by validateDigest.
func isDigestSyntax(s string) bool {
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return false
	}
	alg, hex := s[:i], s[i+1:]
	if len(hex) < 32 {
		return false
	}
	for k := 0; k < len(hex); k++ {
		if !isHex(hex[k]) {
			return false
		}
	}
	partStart := true
	for k := 0; k < len(alg); k++ {
		c := alg[k]
		switch {
		case partStart:
			if !isLetter(c) {
				return false
			}
			partStart = false
		case isAlnum(c):
		case c == '-' || c == '_' || c == '+' || c == '.':
			partStart = true
		default:
			return false
		}
	}
	return alg != "" && !partStart
}

// validateDigest checks a digest as go-digest does: a known algorithm with a
// lower-case hex value of the right length.
func validateDigest(d string) error {
	i := strings.IndexByte(d, ':')
	if i <= 0 || i+1 == len(d) {
		return ErrDigestInvalidFormat
	}
	var size int
	switch d[:i] {
	case "sha256":
		size = 64
	case "sha384":
		size = 96
	case "sha512":
		size = 128
	default:
		if !isDigestValueSyntax(d) {
			return ErrDigestInvalidFormat
		}
		return ErrDigestUnsupported
	}
	hex := d[i+1:]
	if len(hex) != size {
		return ErrDigestInvalidLength
	}
	for j := 0; j < len(hex); j++ {
		if c := hex[j]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return ErrDigestInvalidFormat
		}
	}
	return nil
}

// isDigestValueSyntax is go-digest's general digest shape:
// [a-z0-9]+([.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+
func isDigestValueSyntax(d string) bool {
	i := strings.IndexByte(d, ':')
	if i < 0 || i+1 == len(d) {
		return false
	}
	alg, value := d[:i], d[i+1:]
	partStart := true
	for k := 0; k < len(alg); k++ {
		c := alg[k]
		switch {
		case isLowerAlnum(c):
			partStart = false
		case !partStart && (c == '.' || c == '+' || c == '_' || c == '-'):
			partStart = true
		default:
			return false
		}
	}
	if alg == "" || partStart {
		return false
	}
	for k := 0; k < len(value); k++ {
		if c := value[k]; !(isAlnum(c) || c == '=' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
func isLetter(c byte) bool     { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool      { return isLetter(c) || c >= '0' && c <= '9' }
func isWord(c byte) bool       { return isAlnum(c) || c == '_' }
func isHex(c byte) bool        { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' || s[i] >= 0x80 {
			return true
		}
	}
	return false
}
