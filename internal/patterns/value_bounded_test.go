package patterns_test

import (
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/internal/patterns"
)

// TestHugeQuantitiesAreBounded: a resource value with a huge decimal
// exponent must not make a comparison run away (apimachinery would never
// finish comparing 1e999999999).
func TestHugeQuantitiesAreBounded(t *testing.T) {
	start := time.Now()
	for _, c := range [][2]string{{"1e999999999", ">1"}, {"5", ">1e999999999"}, {"1e999999999", "1-10"}, {"9e10000", "<1"}} {
		patterns.MatchValue(c[0], c[1])
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("comparisons took %v", d)
	}
	if !patterns.MatchValue("2Gi", ">1Gi") || patterns.MatchValue("512Mi", ">1Gi") {
		t.Error("ordinary quantities still compare")
	}
}
