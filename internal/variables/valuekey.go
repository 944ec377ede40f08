package variables

import (
	"encoding/csv"
	"strings"
)

// KeyPath splits a variable's key, as the values of a test or a run
// name it, into fields as upstream's AddVariable does: separated by dots,
// a field in double quotes taken as is
// (metadata.annotations."example.com/owner").
func KeyPath(key string) []string {
	if !strings.Contains(key, `"`) {
		return strings.Split(key, ".")
	}
	r := csv.NewReader(strings.NewReader(key))
	r.Comma = '.'
	fields, err := r.Read()
	if err != nil {
		return strings.Split(key, ".")
	}
	return fields
}
