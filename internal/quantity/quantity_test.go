package quantity

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ok   bool
		want string
	}{
		{"500m", true, "500m"},
		{"1Gi", true, "1Gi"},
		{"1e3", true, "1e3"},
		{"-2", true, "-2"},
		{".5", true, "500m"},
		{"1e10000", true, "10e9999"},
		{"1e10001", false, ""},
		{"1e-10001", false, ""},
		{"1e999999999", false, ""},
		{"1e99999999999999999999", false, ""},
		{"abc", false, ""},
		{"", false, ""},
		{"Gi", false, ""},
	} {
		q, ok := Parse(tt.in)
		if ok != tt.ok {
			t.Errorf("Parse(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if ok && q.String() != tt.want {
			t.Errorf("Parse(%q) = %s, want %s", tt.in, q.String(), tt.want)
		}
	}
	long := make([]byte, MaxLen+1)
	for i := range long {
		long[i] = '1'
	}
	if _, ok := Parse(string(long)); ok {
		t.Error("a string longer than MaxLen must not be a quantity")
	}
}

func TestParseIsBounded(t *testing.T) {
	start := time.Now()
	for i := 0; i < 100; i++ {
		Parse("1e999999999")
		Parse("9e10000")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("bounded parsing took %v", d)
	}
}
