package engine

import (
	"errors"
	"reflect"
	"testing"
)

// TestConditionOrder checks which conditions a block asks about, in which
// order, and what it decides: upstream's lazy evaluation.
func TestConditionOrder(t *testing.T) {
	c := func(name string) *cond { return &cond{message: name} }
	a1, a2, l1, l2 := c("a1"), c("a2"), c("l1"), c("l2")
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		cs      *condSet
		truth   map[*cond]bool // absent: an error
		asked   []string
		ok      bool
		msg     string
		wantErr bool
	}{
		{"any stops at first true", &condSet{any: []*cond{a1, a2}, anyPresent: true},
			map[*cond]bool{a1: true}, []string{"a1"}, true, "a1", false},
		{"any all false", &condSet{any: []*cond{a1, a2}, anyPresent: true},
			map[*cond]bool{a1: false, a2: false}, []string{"a1", "a2"}, false, "a1; a2", false},
		{"all stops at first false", &condSet{all: []*cond{l1, l2}},
			map[*cond]bool{l1: false}, []string{"l1"}, false, "l1", false},
		{"all after failed any", &condSet{any: []*cond{a1}, anyPresent: true, all: []*cond{l1}},
			map[*cond]bool{a1: false, l1: true}, []string{"a1", "l1"}, false, "a1", false},
		{"error in a reached condition", &condSet{any: []*cond{a1, a2}, anyPresent: true},
			map[*cond]bool{a1: false}, []string{"a1", "a2"}, false, "", true},
		{"empty any block fails", &condSet{anyPresent: true, all: []*cond{l1}},
			map[*cond]bool{l1: true}, []string{"l1"}, false, "", false},
		{"true messages when the block holds", &condSet{any: []*cond{a1, a2}, anyPresent: true, all: []*cond{l1}},
			map[*cond]bool{a1: false, a2: true, l1: true}, []string{"a1", "a2", "l1"}, true, "a2; l1", false},
		{"legacy list joins with ;", &condSet{all: []*cond{l1, l2}, legacy: true},
			map[*cond]bool{l1: true, l2: true}, []string{"l1", "l2"}, true, "l1;l2", false},
		{"exception: all first, any never reached", &condSet{exception: true, any: []*cond{a1}, all: []*cond{l1}},
			map[*cond]bool{l1: false}, []string{"l1"}, false, "", false},
		{"exception: any up to first true", &condSet{exception: true, any: []*cond{a1, a2}, all: []*cond{l1}},
			map[*cond]bool{l1: true, a1: true}, []string{"l1", "a1"}, true, "", false},
		{"exception: no any conditions hold", &condSet{exception: true, anyPresent: true, all: []*cond{l1}},
			map[*cond]bool{l1: true}, []string{"l1"}, true, "", false},
		{"exception: error", &condSet{exception: true, any: []*cond{a1}},
			map[*cond]bool{}, []string{"a1"}, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked []string
			ok, msgs, err := tt.cs.evaluate(func(c *cond) (bool, error) {
				asked = append(asked, c.message)
				v, found := tt.truth[c]
				if !found {
					return false, errBoom
				}
				return v, nil
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(asked, tt.asked) {
				t.Errorf("asked %v, want %v", asked, tt.asked)
			}
			if err == nil && (ok != tt.ok || msgs.raw() != tt.msg) {
				t.Errorf("got %v %q, want %v %q", ok, msgs.raw(), tt.ok, tt.msg)
			}
		})
	}
}
