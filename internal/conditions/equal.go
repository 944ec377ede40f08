package conditions

import (
	"strconv"
	"time"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// equals implements Equals on normalized operands.
func equals(key, value any) bool {
	switch k := key.(type) {
	case bool:
		v, ok := value.(bool)
		return ok && k == v
	case float64:
		switch v := value.(type) {
		case float64:
			return k == v
		case string:
			f, err := strconv.ParseFloat(v, 64)
			return err == nil && f == k
		}
		return false
	case string:
		return equalString(k, value)
	case map[string]any:
		v, ok := value.(map[string]any)
		return ok && deepEqual(k, v)
	case []any:
		v, ok := value.([]any)
		return ok && deepEqual(k, v)
	}
	return false
}

// equalString implements Equals for a string key: durations first (the only
// comparison across types), then resource quantities, then wildcards.
func equalString(key string, value any) bool {
	if kd, vd, ok := durations(key, value); ok {
		return kd.Seconds() == vd.Seconds()
	}
	if kq, ok := parseQuantity(key); ok {
		if v, ok := value.(string); ok {
			vq, ok := parseQuantity(v)
			return ok && kq.Cmp(vq) == 0
		}
	}
	if v, ok := value.(string); ok {
		return wildcard.Match(v, key)
	}
	return false
}

// notEquals implements NotEquals on normalized operands. It is not the
// negation of equals: upstream answers true on most type mismatches, false for
// a nil key, and false when a quantity key meets a non-quantity string.
func notEquals(key, value any) bool {
	switch k := key.(type) {
	case bool:
		v, ok := value.(bool)
		return !ok || k != v
	case float64:
		switch v := value.(type) {
		case float64:
			return k != v
		case string:
			f, err := strconv.ParseFloat(v, 64)
			return err != nil || f != k
		}
		return true
	case string:
		return notEqualString(k, value)
	case map[string]any:
		v, ok := value.(map[string]any)
		return !ok || !deepEqual(k, v)
	case []any:
		v, ok := value.([]any)
		return !ok || !deepEqual(k, v)
	}
	return false
}

func notEqualString(key string, value any) bool {
	if kd, vd, ok := durations(key, value); ok {
		return kd.Seconds() != vd.Seconds()
	}
	if kq, ok := parseQuantity(key); ok {
		if v, ok := value.(string); ok {
			if v == "" {
				return !wildcard.Match(v, key)
			}
			vq, ok := parseQuantity(v)
			return ok && kq.Cmp(vq) != 0
		}
	}
	if v, ok := value.(string); ok {
		return !wildcard.Match(v, key)
	}
	return true
}

// durations converts the key and value to durations when at least one of them
// is a Go duration string other than "0"; the other one may then be a number
// of seconds. ok is false otherwise.
func durations(key, value any) (kd, vd time.Duration, ok bool) {
	kd, kok := durationString(key)
	vd, vok := durationString(value)
	if !kok && !vok {
		return 0, 0, false
	}
	if !kok {
		if kd, kok = seconds(key); !kok {
			return 0, 0, false
		}
	}
	if !vok {
		if vd, vok = seconds(value); !vok {
			return 0, 0, false
		}
	}
	return kd, vd, true
}

func durationString(v any) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok || s == "0" || !numberStart(s) {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// seconds converts a number of seconds to a duration the way upstream does:
// the float is truncated to whole nanoseconds first, then multiplied, so
// fractions of a second are lost and huge values wrap around.
func seconds(v any) (time.Duration, bool) {
	f, ok := v.(float64)
	if !ok {
		return 0, false
	}
	return floatDuration(f) * time.Second, true
}

// floatDuration converts like Go's time.Duration(f), but deterministically.
// Go leaves out-of-range conversions implementation-defined; values outside
// the int64 range (and NaN) give math.MinInt64 here, as on amd64.
func floatDuration(f float64) time.Duration {
	if f != f || f >= 1<<63 || f < -(1<<63) {
		return time.Duration(-1 << 63)
	}
	return time.Duration(f)
}
