package variables

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Prefixes used for `{{ @ }}`.
const (
	prefixRequestObject = "request.object"
	prefixTarget        = "target"
)

// splitRawPath splits a raw path (keys joined by "/") into its elements the
// way upstream's jsonpointer.ParsePath does: "/" separates elements except
// inside double quotes, a backslash makes the next rune literal, double quotes
// are dropped, empty elements are skipped, an invalid UTF-8 byte ends the
// walk without keeping the element being read, and a U+FFFD rune ends it after
// keeping that element.
func splitRawPath(raw string) []string {
	out := make([]string, 0, 8)
	var sb strings.Builder
	flush := func() {
		if sb.Len() > 0 {
			out = append(out, sb.String())
		}
		sb.Reset()
	}
	escaped, quoted := false, false
	for i := 0; i < len(raw); {
		r, w := utf8.DecodeRuneInString(raw[i:])
		if r == utf8.RuneError && w == 1 {
			return out
		}
		switch {
		case escaped:
			sb.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
		case r == '"':
			quoted = !quoted
		case r == '/' && !quoted:
			flush()
		case r == utf8.RuneError:
			// upstream takes a literal U+FFFD for the end of the input
			flush()
			return out
		default:
			sb.WriteRune(r)
		}
		i += w
	}
	if escaped {
		// upstream writes the end-of-input marker for a trailing backslash
		sb.WriteRune(utf8.RuneError)
	}
	flush()
	return out
}

// currentValueTail returns the elements of the resource path designated by
// `{{ @ }}` for a string at raw path p: everything up to and including the
// first "foreach" element is dropped, then the first two elements.
func currentValueTail(p string) []string {
	elems := splitRawPath(p)
	if i := slices.Index(elems, "foreach"); i >= 0 {
		elems = elems[i+1:]
	}
	if 2 > len(elems)-1 {
		return nil
	}
	return elems[2:]
}

// currentValueExpr renders prefix + tail as a JMESPath expression the way
// upstream's jsonpointer.Pointer.JMESPath does.
func currentValueExpr(prefix string, tail []string) string {
	elems := append(strings.Split(prefix, "."), tail...)
	return pointerToJMESPath(elems)
}

func pointerToJMESPath(elems []string) string {
	var sb strings.Builder
	for _, e := range elems {
		if _, err := strconv.ParseUint(e, 10, 64); err == nil {
			sb.WriteByte('[')
			sb.WriteString(e)
			sb.WriteByte(']')
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		if isPlainIdentifier(e) {
			sb.WriteString(e)
			continue
		}
		sb.WriteByte('"')
		for _, r := range e {
			switch {
			case r == '"':
				sb.WriteString(`\"`)
			case r == '\\':
				sb.WriteString(`\\`)
			case r >= 0x20:
				sb.WriteRune(r)
			case r == '\b':
				sb.WriteString(`\b`)
			case r == '\f':
				sb.WriteString(`\f`)
			case r == '\n':
				sb.WriteString(`\n`)
			case r == '\r':
				sb.WriteString(`\r`)
			case r == '\t':
				sb.WriteString(`\t`)
			default:
				fmt.Fprintf(&sb, "\\u%04x", r&0xffff)
			}
		}
		sb.WriteByte('"')
	}
	return sb.String()
}

// isPlainIdentifier reports whether e can be written unquoted: it starts with
// a letter, '_' or '(' and every rune is a letter, digit, '_' or ')'. (The
// rule is upstream's; an element starting with '(' therefore always ends up
// quoted.)
func isPlainIdentifier(e string) bool {
	if e == "" {
		return false
	}
	c := e[0]
	if !(c == '(' || c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
		return false
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if !(c == ')' || c == '_' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) {
			return false
		}
	}
	return true
}
