package conditions

import (
	"fmt"
	"math/rand"
	"testing"
)

// refSetIn is the Any/All operators on two lists, as upstream writes them:
// both lists turned into texts, then every key looked up in the set with
// wildcards both ways.
func refSetIn(keys, set []any, all, not bool) bool {
	found := func(k any) bool {
		for _, e := range set {
			if matchEither(text(k), text(e)) {
				return true
			}
		}
		return false
	}
	for _, k := range keys {
		if all && found(k) == not {
			return false
		}
		if !all && found(k) != not {
			return true
		}
	}
	return all
}

// TestSetInLongLists compares the set operators, which write the texts of
// short lists in an array on their stack, with refSetIn on lists shorter
// than, as long as and longer than that array, holding strings, numbers,
// booleans and wildcards.
func TestSetInLongLists(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	atoms := []any{"a", "b", "c*", "?", "x1", 1.0, 2.5, 1e6, true, false, "1", "2.5", "true"}
	list := func(n int) []any {
		l := make([]any, n)
		for i := range l {
			l[i] = atoms[rng.Intn(len(atoms))]
		}
		return l
	}
	lengths := []int{0, 1, 2, textsBuf - 1, textsBuf, textsBuf + 1, 3 * textsBuf}
	ops := []struct {
		op       Operator
		all, not bool
	}{{AnyIn, false, false}, {AnyNotIn, false, true}, {AllIn, true, false}, {AllNotIn, true, true}}
	checked := map[bool]int{}
	for _, nk := range lengths {
		for _, nv := range lengths {
			for range 50 {
				keys, set := list(nk), list(nv)
				if nk == 1 && rng.Intn(2) == 0 {
					keys = []any{fmt.Sprint(set)} // not a wildcard match, nor a scalar key
				}
				for _, o := range ops {
					got, err := Evaluate(keys, o.op, set)
					if err != nil {
						t.Fatal(err)
					}
					if want := refSetIn(keys, set, o.all, o.not); got != want {
						t.Fatalf("Evaluate(%v, %v, %v) = %v, want %v", keys, o.op, set, got, want)
					}
					checked[got]++
				}
			}
		}
	}
	if checked[true] == 0 || checked[false] == 0 {
		t.Fatalf("outcomes not varied: %v", checked)
	}
}
