// Package quantity parses Kubernetes resource quantities ("500m", "1Gi",
// "1e3") with bounded cost. apimachinery's parse and comparison cost grows
// with the length of the string and, steeply, with the size of a decimal
// exponent: comparing "1e1000000" with "1" takes a quarter of a second and
// "1e999999999" never finishes. Resource data reaches these comparisons
// (validate patterns, condition operators, JMESPath arithmetic), so gavel
// treats strings beyond the bounds as not being quantities at all; no value
// a real policy or resource uses is affected. Upstream has no bound.
package quantity

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds of the strings treated as quantities.
const (
	MaxLen      = 1024
	MaxExponent = 10000
)

// Parse is resource.ParseQuantity within the bounds: a string that is
// longer than MaxLen, does not start like a number, or has a decimal
// exponent beyond ±MaxExponent is not a quantity.
func Parse(s string) (resource.Quantity, bool) {
	if len(s) > MaxLen || !numberStart(s) {
		return resource.Quantity{}, false
	}
	if i := strings.LastIndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err == nil && (e > MaxExponent || e < -MaxExponent) {
			return resource.Quantity{}, false
		}
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return resource.Quantity{}, false
		}
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

func numberStart(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9')
}
