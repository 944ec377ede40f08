package conditions

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource quantities are parsed and compared with apimachinery, whose cost
// grows with the length of the string and, steeply, with the size of a
// decimal exponent: comparing "1e1000000" with "1" takes a quarter of a
// second and "1e999999999" never finishes. Upstream has no bound; gavel
// treats strings beyond these bounds as not being quantities at all, which
// changes no result for any value a real policy or resource uses.
const (
	maxQuantityLen      = 1024
	maxQuantityExponent = 10000
)

// parseQuantity is resource.ParseQuantity within the bounds above.
// TODO(lead): share with patterns.
func parseQuantity(s string) (resource.Quantity, bool) {
	if len(s) > maxQuantityLen || !numberStart(s) {
		return resource.Quantity{}, false
	}
	if i := strings.LastIndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.ParseInt(s[i+1:], 10, 64); err == nil && (e > maxQuantityExponent || e < -maxQuantityExponent) {
			return resource.Quantity{}, false
		} else if err != nil && isOutOfRange(err) {
			return resource.Quantity{}, false
		}
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

func isOutOfRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
