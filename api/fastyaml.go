package api

import (
	"strconv"
	"strings"
)

// This file decodes the plain block-style YAML of most Kubernetes manifests
// directly into a JSON-like tree, several times faster than the general
// path (yaml.v2, then JSON, then encoding/json) that decodeOne otherwise
// takes. It accepts only a strict subset and gives up (ok false) on
// anything else, leaving the document to the general path, which then
// decides, errors included:
//
//   - block mappings and sequences indented with spaces, "- " items that
//     may open a mapping on their own line, sequences at the indentation
//     of their parent key;
//   - one-line scalars: plain, single-quoted, or double-quoted with the
//     escapes \\ \" \/ \n \t \r and \uXXXX (no surrogates);
//   - the empty flow collections {} and [], comments, blank lines.
//
// Plain scalars resolve as yaml.v2 resolves them and the general path
// then converts them: null (~, null, empty), YAML 1.1 booleans (yes, on,
// ...), decimal integers of up to 15 digits and simple decimals as float64;
// anything else that could be a number, a date or a special float (a
// first character among digits, '+', '-', '.') is left to the general
// path. Keys must be strings. Tabs, carriage returns, control characters, non-ASCII bytes,
// anchors, aliases, tags, block scalars, multi-line scalars, flow
// collections with content, complex keys, directives, document markers and
// duplicate keys all make it give up.

type fastLine struct {
	indent int
	text   string // from the first non-space byte, comments not removed
}

type fastParser struct {
	lines []fastLine
	pos   int
}

// decodeFast decodes a document whose top level is a mapping.
func decodeFast(doc []byte) (map[string]any, bool) {
	// one copy of the text: keys and values without escapes are substrings
	raw := string(doc)
	p := fastParser{lines: make([]fastLine, 0, 64)}
	for start := 0; start < len(raw); {
		end := start
		for end < len(raw) && raw[end] != '\n' {
			c := raw[end]
			if c == '\t' || c == '\r' || c >= 0x7f || (c < 0x20 && c != '\n') {
				return nil, false
			}
			end++
		}
		line := raw[start:end]
		start = end + 1
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		if indent == len(line) || line[indent] == '#' {
			continue // blank or comment
		}
		if indent == 0 && (line[0] == '%' || hasDocMarker(line)) {
			return nil, false
		}
		p.lines = append(p.lines, fastLine{indent: indent, text: line[indent:]})
	}
	if len(p.lines) == 0 || p.lines[0].indent != 0 {
		return nil, false
	}
	key, _, isKey := splitKey(p.lines[0].text)
	if !isKey || key == "" {
		return nil, false
	}
	m, ok := p.mapping(0)
	if !ok || p.pos != len(p.lines) {
		return nil, false
	}
	return m, true
}

func hasDocMarker(line string) bool {
	if len(line) < 3 {
		return false
	}
	s := line[:3]
	return (s == "---" || s == "...") && (len(line) == 3 || line[3] == ' ')
}

// mapping parses the block mapping whose keys are at column indent.
func (p *fastParser) mapping(indent int) (map[string]any, bool) {
	m := make(map[string]any, 8)
	for p.pos < len(p.lines) {
		ln := p.lines[p.pos]
		if ln.indent < indent {
			break
		}
		if ln.indent > indent {
			return nil, false
		}
		keyText, rest, isKey := splitKey(ln.text)
		if !isKey {
			return nil, false
		}
		key, ok := fastKey(keyText)
		if !ok {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		p.pos++
		v, ok := p.value(rest, indent, true)
		if !ok {
			return nil, false
		}
		m[key] = v
	}
	return m, true
}

// value parses what follows "key:" or "- " (rest, comments included) for a
// node at column indent; inMapping allows a sequence at the same column.
func (p *fastParser) value(rest string, indent int, inMapping bool) (any, bool) {
	rest = trimComment(rest)
	if rest != "" {
		v, ok := fastScalar(rest)
		if !ok {
			return nil, false
		}
		// a deeper line after a scalar would continue it
		if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
			return nil, false
		}
		return v, true
	}
	if p.pos >= len(p.lines) {
		return nil, true
	}
	next := p.lines[p.pos]
	switch {
	case next.indent > indent:
		return p.block(next.indent)
	case next.indent == indent && inMapping && isSeqItem(next.text):
		return p.sequence(indent)
	}
	return nil, true
}

// block parses the mapping or sequence starting at the current line, at
// column indent.
func (p *fastParser) block(indent int) (any, bool) {
	ln := p.lines[p.pos]
	if isSeqItem(ln.text) {
		return p.sequence(indent)
	}
	if _, _, isKey := splitKey(ln.text); isKey {
		return p.mapping(indent)
	}
	return nil, false // a multi-line scalar
}

// sequence parses the block sequence whose "-" are at column indent.
func (p *fastParser) sequence(indent int) ([]any, bool) {
	var out []any
	for p.pos < len(p.lines) {
		ln := p.lines[p.pos]
		if ln.indent < indent || (ln.indent == indent && !isSeqItem(ln.text)) {
			break
		}
		if ln.indent > indent {
			return nil, false
		}
		// the item's content starts after "-" and its spaces
		j := 1
		for j < len(ln.text) && ln.text[j] == ' ' {
			j++
		}
		content := ln.text[j:]
		col := indent + j
		if content == "" || content[0] == '#' {
			p.pos++
			v, ok := p.value("", indent, false)
			if !ok {
				return nil, false
			}
			out = append(out, v)
			continue
		}
		if _, _, isKey := splitKey(content); isKey || isSeqItem(content) {
			// the item is a mapping (or a sequence) starting on this line:
			// read the line again as if it began at col
			p.lines[p.pos] = fastLine{indent: col, text: content}
			v, ok := p.block(col)
			if !ok {
				return nil, false
			}
			out = append(out, v)
			continue
		}
		p.pos++
		v, ok := p.value(content, indent, false)
		if !ok {
			return nil, false
		}
		out = append(out, v)
	}
	if out == nil {
		out = []any{}
	}
	return out, true
}

func isSeqItem(s string) bool {
	return s[0] == '-' && (len(s) == 1 || s[1] == ' ')
}

// splitKey splits "key: rest" (or "key:" at the end of the line); the key
// is returned as written (quoted or plain).
func splitKey(s string) (key, rest string, ok bool) {
	switch s[0] {
	case '"', '\'':
		end := quotedEnd(s)
		if end < 0 || end >= len(s) || s[end] != ':' {
			return "", "", false
		}
		if end+1 < len(s) && s[end+1] != ' ' {
			return "", "", false
		}
		return s[:end], s[end+1:], true
	case '?', '[', ']', '{', '}', ',', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return "", "", false
	case '-':
		if isSeqItem(s) {
			return "", "", false
		}
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return s[:i], s[i+1:], true
			}
		case '#':
			if i > 0 && s[i-1] == ' ' {
				return "", "", false
			}
		}
	}
	return "", "", false
}

// quotedEnd returns the index just past the closing quote of the quoted
// scalar s starts with, -1 when it does not end on this line.
func quotedEnd(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch {
		case q == '\'' && s[i] == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				i++
				continue
			}
			return i + 1
		case q == '"' && s[i] == '\\':
			i++
		case q == '"' && s[i] == '"':
			return i + 1
		}
	}
	return -1
}

// trimComment drops a trailing comment and the spaces around the value.
func trimComment(s string) string {
	i := 0
	for i < len(s) && s[i] == ' ' {
		i++
	}
	s = s[i:]
	if s == "" || s[0] == '#' {
		return ""
	}
	if s[0] == '"' || s[0] == '\'' {
		end := quotedEnd(s)
		if end < 0 {
			return s // left to fastScalar, which gives up
		}
		tail := s[end:]
		j := 0
		for j < len(tail) && tail[j] == ' ' {
			j++
		}
		if j == len(tail) || (j > 0 && tail[j] == '#') {
			return s[:end]
		}
		return s // something after the closing quote
	}
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && s[i-1] == ' ' {
			s = s[:i]
			break
		}
	}
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		end--
	}
	return s[:end]
}

// fastKey decodes a key: quoted, or a plain scalar that resolves to a
// string.
func fastKey(s string) (string, bool) {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		end--
	}
	s = s[:end]
	// YAML limits implicit keys to 1024 characters (yaml.v2 rejects longer
	// ones): long keys are left to the general path
	if s == "" || len(s) > 1000 {
		return "", false
	}
	v, ok := fastScalar(s)
	if !ok {
		return "", false
	}
	str, isString := v.(string)
	return str, isString
}

// fastScalar decodes a one-line scalar (comments removed).
func fastScalar(s string) (any, bool) {
	switch s[0] {
	case '"':
		return doubleQuoted(s)
	case '\'':
		return singleQuoted(s)
	case '{':
		if s == "{}" {
			return map[string]any{}, true
		}
		return nil, false
	case '[':
		if s == "[]" {
			return []any{}, true
		}
		return nil, false
	case '-', '+':
		if len(s) > 1 && (s[1] == '(' || isLetter(s[1])) {
			// "+(key)": not a number, a date nor a special float
			return plainString(s)
		}
		return fastNumber(s)
	case '.', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return fastNumber(s)
	case '~':
		if s == "~" {
			return nil, true
		}
		return nil, false
	case '?', ':', ',', ']', '}', '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, false
	}
	return plainString(s)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// plainString resolves a plain scalar that is not a number: null, a
// boolean or a string.
func plainString(s string) (any, bool) {
	// a plain scalar may not hold ": " or end with ":"
	for i := 0; i < len(s); i++ {
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return nil, false
		}
	}
	switch s {
	case "null", "Null", "NULL":
		return nil, true
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return true, true
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return false, true
	case "<<":
		return nil, false
	}
	return s, true
}

// fastNumber decodes -?(0|[1-9][0-9]*) with at most 15 digits, optionally
// followed by a fraction, as float64; anything else is left to yaml.v2.
func fastNumber(s string) (any, bool) {
	i := 0
	if s[0] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	digits := i - start
	if digits == 0 || digits > 15 || (digits > 1 && s[start] == '0') {
		return nil, false
	}
	if i < len(s) {
		if s[i] != '.' {
			return nil, false
		}
		i++
		fstart := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == fstart || i != len(s) || i-start > 16 {
			return nil, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	if f == 0 {
		// yaml.v2 reads -0 as the integer 0, and -0.0 as -0 (a float)
		if digits > 0 && len(s) == start+digits {
			return float64(0), true
		}
	}
	return f, true
}

func singleQuoted(s string) (any, bool) {
	if quotedEnd(s) != len(s) {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if strings.IndexByte(body, '\'') < 0 {
		return body, true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		if body[i] == '\'' {
			i++ // '' is one quote
		}
		out = append(out, body[i])
	}
	return string(out), true
}

func doubleQuoted(s string) (any, bool) {
	if quotedEnd(s) != len(s) {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, true
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(body) {
			return nil, false
		}
		switch body[i] {
		case '\\', '"':
			out = append(out, body[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'u':
			if i+4 >= len(body) {
				return nil, false
			}
			n, err := strconv.ParseUint(body[i+1:i+5], 16, 32)
			// as for raw text, only printable ASCII, tab and line breaks
			// are decoded here (yaml.v2 refuses some other characters)
			if err != nil || n >= 0x7f || (n < 0x20 && n != '\t' && n != '\n' && n != '\r') {
				return nil, false
			}
			out = append(out, byte(n))
			i += 4
		default:
			return nil, false
		}
	}
	return string(out), true
}
