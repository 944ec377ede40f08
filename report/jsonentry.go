package report

import (
	"slices"
	"strconv"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/jsontext"
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

// appendJSONString is jsontext.AppendString.
func appendJSONString(b []byte, s string) []byte { return jsontext.AppendString(b, s) }
