// Package yamltext writes YAML text for strings exactly as yaml.v2 (under
// sigs.k8s.io/yaml) writes it in block mappings, without its encoder, for
// the strings whose rendering is simple to decide; callers hand the others
// to yaml.v2. The report encoders use it; the CLI has a copy
// (cmd/gavel/internal/yamltext) for its results document.
package yamltext

import "strings"

// This file writes "key: value" lines for string values exactly as yaml.v2
// (under sigs.k8s.io/yaml) does in the block mappings of a report, without
// going through its encoder, for the strings whose rendering is simple to
// decide: printable ASCII on one line that yaml.v2 reads back as a string.
// Such a string is written plain, or single-quoted when plain text would
// be misread (an indicator character first, ": ", " #", a leading or
// trailing space), and long values are folded at spaces past column 80
// like yaml.v2's emitter folds them. Every other string goes to yaml.v2.

// yamlBestWidth is the line width past which yaml.v2 folds scalars.
const yamlBestWidth = 80

// AppendKeyString appends `key: value` and a line break for a mapping whose
// keys are at column keyCol (the key's line prefix is the caller's), with
// continuation lines indented by keyCol+2, and reports whether it could:
// false leaves dst unchanged and means yaml.v2 must render the pair.
func AppendKeyString(dst []byte, keyCol int, key, value string) ([]byte, bool) {
	if !PlainSafe(key) {
		return dst, false
	}
	quoted, ok := stringStyle(value)
	if !ok {
		return dst, false
	}
	dst = append(dst, key...)
	dst = append(dst, ':', ' ')
	col := keyCol + len(key) + 2
	indent := keyCol + 2
	if quoted {
		dst = append(dst, '\'')
		col++
	}
	spaces := false
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c == ' ' {
			// yaml.v2 breaks the line at a single space past the width
			// (for a quoted string, not at its first or last character)
			if !spaces && col > yamlBestWidth && (i+1 >= len(value) || value[i+1] != ' ') &&
				(!quoted || (i > 0 && i < len(value)-1)) {
				dst = append(dst, '\n')
				for j := 0; j < indent; j++ {
					dst = append(dst, ' ')
				}
				col = indent
			} else {
				dst = append(dst, ' ')
				col++
			}
			spaces = true
			continue
		}
		if quoted && c == '\'' {
			dst = append(dst, '\'')
			col++
		}
		dst = append(dst, c)
		col++
		spaces = false
	}
	if quoted {
		dst = append(dst, '\'')
	}
	return append(dst, '\n'), true
}

// stringStyle decides how yaml.v2 writes a string value: plain (quoted
// false) or single-quoted (quoted true); ok is false for the strings left
// to yaml.v2 (empty, non-ASCII or control characters, line breaks, and
// those that could read as something else than a string: numbers, dates,
// booleans, null).
func stringStyle(s string) (quoted, ok bool) {
	if s == "" {
		return false, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false, false
		}
	}
	switch c := s[0]; {
	case c >= '0' && c <= '9', c == '+', c == '-', c == '.', c == '~':
		// may resolve to a number, a date or null
		return false, false
	case c == 'y' || c == 'Y' || c == 'n' || c == 'N' || c == 't' || c == 'T' || c == 'f' || c == 'F' || c == 'o' || c == 'O':
		switch s {
		case "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
			"true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
			"null", "Null", "NULL":
			return false, false
		}
	}
	// yaml.v2's analysis of a plain scalar in block context
	plain := s[0] != ' ' && s[len(s)-1] != ' '
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		plain = false
	case '?', ':':
		if len(s) == 1 || s[1] == ' ' {
			plain = false
		}
	}
	for i := 1; plain && i < len(s); i++ {
		switch s[i] {
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				plain = false
			}
		case '#':
			if s[i-1] == ' ' {
				plain = false
			}
		}
	}
	return !plain, true
}

// PlainSafe reports whether yaml.v2 writes the string as is, unquoted and
// on one line, after a simple key: it starts with a letter, holds only
// letters, digits, '.', '_', '/' and '-', and is not one of the words
// YAML 1.1 reads as a boolean or null.
func PlainSafe(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	if c := s[0]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-') {
			return false
		}
	}
	if len(s) <= 5 {
		switch strings.ToLower(s) {
		case "y", "yes", "n", "no", "on", "off", "true", "false", "null":
			return false
		}
	}
	return true
}
