package jmespath

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestBoundedCacheModel runs random insertions and reads on caches of
// several bounds and checks them against what a bounded map must give: a
// read finds only the value inserted for its key, an entry just inserted
// is found, the bound holds after every operation, and an entry read
// often is eventually settled (read without the mutex).
func TestBoundedCacheModel(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, max := range []int{0, 1, 2, 3, 7, 8, 9, 16, 64, 512} {
		c := newBoundedCache[string](max)
		for op := 0; op < 20000; op++ {
			k := fmt.Sprint(r.Intn(2*max + 3))
			if r.Intn(3) == 0 {
				c.put(k, "v"+k)
				if v, ok := c.get(k); max > 0 && (!ok || v != "v"+k) {
					t.Fatalf("max %d: %s just inserted: %q, %v", max, k, v, ok)
				}
			} else if v, ok := c.get(k); ok && v != "v"+k {
				t.Fatalf("max %d: %s = %q", max, k, v)
			}
			if n := c.size(); n > max {
				t.Fatalf("max %d: %d entries after %d operations", max, n, op)
			}
		}
		if max == 0 {
			continue
		}
		c.put("hot", "vhot")
		for i := 0; i < c.batch; i++ {
			c.get("hot")
		}
		if m := c.settled.Load(); m == nil || (*m)["hot"] != "vhot" {
			t.Errorf("max %d: an entry read %d times is not settled", max, c.batch)
		}
	}
}
