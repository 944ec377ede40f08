package celpolicy

import (
	"errors"
	"regexp"
	"strings"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// glob is a compiled pattern of matchImageReferences' glob field, in the
// syntax upstream matches it with (github.com/gobwas/glob without
// separators): * matches any text (/ included), ? one character,
// [abc], [a-z] and [!abc] a character of (or not of) a class, {a,b} one
// of its alternatives (which are patterns), and \ escapes the next
// character. Patterns of * and ? only go through the engine's wildcard
// matcher; the others through a regular expression.
type glob struct {
	wild *wildcard.Pattern
	re   *regexp.Regexp
}

func compileGlob(p string) (*glob, error) {
	if !strings.ContainsAny(p, `[{\`) {
		w := wildcard.Compile(p)
		return &glob{wild: &w}, nil
	}
	var b strings.Builder
	b.WriteString(`(?s)^`)
	rest, err := globRegexp(&b, p, false)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, errors.New("unexpected '" + rest[:1] + "'")
	}
	b.WriteByte('$')
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	return &glob{re: re}, nil
}

func (g *glob) match(s string) bool {
	if g.wild != nil {
		return g.wild.Match(s)
	}
	return g.re.MatchString(s)
}

// globRegexp writes the regular expression of p up to its end or, inside
// alternatives (alt), up to the ',' or '}' that ends the alternative,
// and returns what follows.
func globRegexp(b *strings.Builder, p string, alt bool) (string, error) {
	for len(p) > 0 {
		c := p[0]
		switch {
		case c == '*':
			b.WriteString(`.*`)
			p = p[1:]
		case c == '?':
			b.WriteByte('.')
			p = p[1:]
		case c == '\\':
			if len(p) < 2 {
				return "", errors.New("unexpected end of pattern after '\\'")
			}
			r, n := firstRune(p[1:])
			b.WriteString(regexp.QuoteMeta(r))
			p = p[1+n:]
		case c == '[':
			end := strings.IndexByte(p[1:], ']')
			if end < 0 {
				return "", errors.New("unclosed '['")
			}
			class := p[1 : 1+end]
			p = p[2+end:]
			neg := strings.HasPrefix(class, "!")
			if neg {
				class = class[1:]
			}
			if class == "" {
				return "", errors.New("empty character class")
			}
			b.WriteByte('[')
			if neg {
				b.WriteByte('^')
			}
			for _, r := range class {
				if r == '-' {
					b.WriteByte('-')
					continue
				}
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
			b.WriteByte(']')
		case c == '{':
			b.WriteString(`(?:`)
			p = p[1:]
			for {
				var err error
				if p, err = globRegexp(b, p, true); err != nil {
					return "", err
				}
				if p == "" {
					return "", errors.New("unclosed '{'")
				}
				if p[0] == '}' {
					p = p[1:]
					break
				}
				b.WriteByte('|')
				p = p[1:]
			}
			b.WriteByte(')')
		case alt && (c == ',' || c == '}'):
			return p, nil
		default:
			r, n := firstRune(p)
			b.WriteString(regexp.QuoteMeta(r))
			p = p[n:]
		}
	}
	return "", nil
}

func firstRune(s string) (string, int) {
	for i := range s {
		if i > 0 {
			return s[:i], i
		}
	}
	return s, len(s)
}
