package jsonnum

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		v    any
		i    int64
		f    float64
		kind Kind
	}{
		{float64(1.5), 0, 1.5, Real},
		{float32(0.5), 0, 0.5, Real},
		{int(-3), -3, 0, Integer},
		{int8(-8), -8, 0, Integer},
		{int16(16), 16, 0, Integer},
		{int32(32), 32, 0, Integer},
		{int64(math.MaxInt64), math.MaxInt64, 0, Integer},
		{uint(7), 7, 0, Integer},
		{uint8(8), 8, 0, Integer},
		{uint16(16), 16, 0, Integer},
		{uint32(32), 32, 0, Integer},
		{uint64(64), 64, 0, Integer},
		{uint64(math.MaxUint64), 0, math.MaxUint64, Real},
		{uintptr(9), 9, 0, Integer},
		{json.Number("12"), 12, 0, Integer},
		{json.Number("-0"), 0, 0, Integer},
		{json.Number("1.25"), 0, 1.25, Real},
		{json.Number("1e2"), 0, 100, Real},
		{json.Number("9223372036854775808"), 0, 9223372036854775808, Real},
		{json.Number("12x"), 0, 0, Invalid},
		{json.Number("1e400"), 0, math.Inf(1), Invalid},
		{"1", 0, 0, NotNumber},
		{true, 0, 0, NotNumber},
		{nil, 0, 0, NotNumber},
		{[]any{1.0}, 0, 0, NotNumber},
	} {
		i, f, k := Read(tc.v)
		if i != tc.i || f != tc.f || k != tc.kind {
			t.Errorf("Read(%#v) = %v, %v, %v; want %v, %v, %v", tc.v, i, f, k, tc.i, tc.f, tc.kind)
		}
		if Is(tc.v) != (tc.kind != NotNumber) {
			t.Errorf("Is(%#v) = %v", tc.v, !Is(tc.v))
		}
	}
}

func TestFloat(t *testing.T) {
	for _, tc := range []struct {
		v   any
		f   float64
		ok  bool
		err string
	}{
		{int64(3), 3, true, ""},
		{json.Number("9007199254740993"), 9007199254740992, true, ""},
		{uint64(math.MaxUint64), math.MaxUint64, true, ""},
		{json.Number("0.1"), 0.1, true, ""},
		{json.Number("12x"), 0, true, `invalid number "12x"`},
		{json.Number("-1e400"), math.Inf(-1), true, `invalid number "-1e400"`},
		{"3", 0, false, ""},
	} {
		f, ok, err := Float(tc.v)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if f != tc.f || ok != tc.ok || gotErr != tc.err {
			t.Errorf("Float(%#v) = %v, %v, %q; want %v, %v, %q", tc.v, f, ok, gotErr, tc.f, tc.ok, tc.err)
		}
	}
}

// TestFloatIsEncodingJSON: a number read by Float is the float64
// encoding/json decodes from the number's text.
func TestFloatIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-17", "4.5", "1e3", "1E-3", "9007199254740993", "18446744073709551615", "123456789012345678901234567890", "0.30000000000000004"} {
		var want any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := Float(json.Number(s))
		if !ok || err != nil || got != want.(float64) || math.Signbit(got) != math.Signbit(want.(float64)) {
			t.Errorf("Float(%s) = %v, %v, %v; encoding/json %v", s, got, ok, err, want)
		}
	}
}
