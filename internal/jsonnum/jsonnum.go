// Package jsonnum reads the numbers of JSON-like trees as hosts hand them
// over: float64 (what encoding/json decodes), any other Go integer or
// float type (Kubernetes' unstructured objects hold int64), and
// json.Number (a decoder's UseNumber). It is the one place that knows
// these types; the packages that normalise, compare or format numbers
// read them through it.
package jsonnum

import (
	"encoding/json"
	"math"
	"strconv"
)

// Kind tells what Read found.
type Kind uint8

const (
	// NotNumber: v is not a number.
	NotNumber Kind = iota
	// Integer: an integer type, or a json.Number written as an integer, whose
	// value fits an int64.
	Integer
	// Real: a float type, a uint64 above math.MaxInt64, or a json.Number
	// with a fraction or an exponent (or an integer too large for int64).
	Real
	// Invalid: a json.Number that is not a finite float64.
	Invalid
)

// Read returns the value of v, an integer in i (Kind Integer) or a float in f
// (Kind Real). It does not allocate.
func Read(v any) (i int64, f float64, k Kind) {
	switch t := v.(type) {
	case float64:
		return 0, t, Real
	case int64:
		return t, 0, Integer
	case int:
		return int64(t), 0, Integer
	case json.Number:
		return readNumber(string(t))
	case float32:
		return 0, float64(t), Real
	case int8:
		return int64(t), 0, Integer
	case int16:
		return int64(t), 0, Integer
	case int32:
		return int64(t), 0, Integer
	case uint:
		return readUint(uint64(t))
	case uint8:
		return int64(t), 0, Integer
	case uint16:
		return int64(t), 0, Integer
	case uint32:
		return int64(t), 0, Integer
	case uint64:
		return readUint(t)
	case uintptr:
		return readUint(uint64(t))
	}
	return 0, 0, NotNumber
}

func readUint(u uint64) (int64, float64, Kind) {
	if u > math.MaxInt64 {
		return 0, float64(u), Real
	}
	return int64(u), 0, Integer
}

func readNumber(s string) (int64, float64, Kind) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i, 0, Integer
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, f, Invalid
	}
	return 0, f, Real
}

// Is reports whether v is a number of one of the types Read reads (an
// invalid json.Number included).
func Is(v any) bool {
	_, _, k := Read(v)
	return k != NotNumber
}

// Float returns v as encoding/json decodes a number into an any: a
// float64. ok is false when v is not a number; err is set for a
// json.Number that is not a finite float64 (f is then what
// strconv.ParseFloat gave: 0 or an infinity).
func Float(v any) (f float64, ok bool, err error) {
	if n, isNum := v.(json.Number); isNum {
		// parsed as a float, not through Read's integers: "-0" is -0
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil || math.IsInf(f, 0) {
			return f, true, &Error{Text: string(n)}
		}
		return f, true, nil
	}
	i, f, k := Read(v)
	switch k {
	case Integer:
		return float64(i), true, nil
	case Real:
		return f, true, nil
	}
	return 0, false, nil
}

// Error reports a json.Number that is not a finite float64.
type Error struct{ Text string }

func (e *Error) Error() string { return "invalid number " + strconv.Quote(e.Text) }
