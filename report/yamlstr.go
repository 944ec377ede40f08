package report

import "github.com/gavelpolicy/gavel/internal/yamltext"

// appendKeyString is yamltext.AppendKeyString.
func appendKeyString(dst []byte, keyCol int, key, value string) ([]byte, bool) {
	return yamltext.AppendKeyString(dst, keyCol, key, value)
}
