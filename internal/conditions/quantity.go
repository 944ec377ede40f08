package conditions

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gavelpolicy/gavel/internal/quantity"
)

// parseQuantity is quantity.Parse: bounded, so resource data cannot make a
// comparison run away.
func parseQuantity(s string) (resource.Quantity, bool) { return quantity.Parse(s) }
