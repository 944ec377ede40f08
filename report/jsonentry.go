package report

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gavelpolicy/gavel/api"
)

// appendEntryJSON appends the JSON encoding/json writes for a report entry
// (json.Marshal(e)), without reflection. It returns false, appending
// nothing, for an entry with a resource selector, which the caller leaves
// to encoding/json (report entries of the CLI have none).
func appendEntryJSON(b []byte, e *api.PolicyReportResult) ([]byte, bool) {
	if e.ResourceSelector != nil {
		return b, false
	}
	b = append(b, `{"source":`...)
	b = appendJSONString(b, e.Source)
	b = append(b, `,"policy":`...)
	b = appendJSONString(b, e.Policy)
	b = appendJSONField(b, "rule", e.Rule)
	b = appendJSONField(b, "category", e.Category)
	b = appendJSONField(b, "severity", string(e.Severity))
	b = append(b, `,"timestamp":{"seconds":`...)
	b = strconv.AppendInt(b, e.Timestamp.Seconds, 10)
	b = append(b, `,"nanos":`...)
	b = strconv.AppendInt(b, int64(e.Timestamp.Nanos), 10)
	b = append(b, '}')
	b = appendJSONField(b, "result", string(e.Result))
	if e.Scored {
		b = append(b, `,"scored":true`...)
	}
	if len(e.Resources) > 0 {
		b = append(b, `,"resources":[`...)
		for i := range e.Resources {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRefJSON(b, &e.Resources[i])
		}
		b = append(b, ']')
	}
	b = appendJSONField(b, "message", e.Message)
	if len(e.Properties) > 0 {
		b = append(b, `,"properties":{`...)
		keys := make([]string, 0, len(e.Properties))
		for k := range e.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, e.Properties[k])
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendRefJSON appends an ObjectReference, every field omitted when empty.
func appendRefJSON(b []byte, r *api.ObjectReference) []byte {
	b = append(b, '{')
	n := len(b)
	for _, f := range [...]struct{ key, value string }{
		{"kind", r.Kind}, {"namespace", r.Namespace}, {"name", r.Name}, {"uid", r.UID},
		{"apiVersion", r.APIVersion}, {"resourceVersion", r.ResourceVersion}, {"fieldPath", r.FieldPath},
	} {
		if f.value == "" {
			continue
		}
		if len(b) > n {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), f.key...), `":`...)
		b = appendJSONString(b, f.value)
	}
	return append(b, '}')
}

// appendJSONField appends `,"key":value` for a non-empty value (a string
// field with omitempty).
func appendJSONField(b []byte, key, value string) []byte {
	if value == "" {
		return b
	}
	b = append(append(append(b, ',', '"'), key...), `":`...)
	return appendJSONString(b, value)
}

// appendJSONString appends s quoted as encoding/json quotes strings: with
// HTML escaping, short escapes for \b \f \n \r \t, \u00XX for the other
// control characters, \u2028 and \u2029 escaped, and invalid UTF-8 as
// \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
