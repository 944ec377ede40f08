package conditions

import (
	"strconv"
	"time"

	"github.com/blang/semver/v4"
)

// numeric implements GreaterThan, GreaterThanOrEquals, LessThan and
// LessThanOrEquals on normalized operands.
func numeric(key, value any, op Operator) bool {
	switch k := key.(type) {
	case float64:
		return numericFloat(k, value, op)
	case string:
		return numericString(k, value, op)
	}
	return false
}

func numericFloat(key float64, value any, op Operator) bool {
	switch v := value.(type) {
	case float64:
		return compareFloats(key, v, op)
	case string:
		if kd, vd, ok := durations(key, v); ok {
			return compareFloats(kd.Seconds(), vd.Seconds(), op)
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return compareFloats(key, f, op)
		}
	}
	return false
}

// numericString tries, in upstream's order, durations, resource quantities,
// numbers and semantic versions.
func numericString(key string, value any, op Operator) bool {
	if kd, vd, ok := durations(key, value); ok {
		return compareFloats(kd.Seconds(), vd.Seconds(), op)
	}
	if v, ok := value.(string); ok {
		if kq, ok := parseQuantity(key); ok {
			if vq, ok := parseQuantity(v); ok {
				return compareFloats(float64(kq.Cmp(vq)), 0, op)
			}
		}
	}
	if f, err := strconv.ParseFloat(key, 64); err == nil {
		return numericFloat(f, value, op)
	}
	// semantic versions as upstream parses them (blang/semver: strict
	// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], no "v" prefix)
	if kv, err := semver.Parse(key); err == nil {
		v, ok := value.(string)
		if !ok {
			return false
		}
		vv, err := semver.Parse(v)
		if err != nil {
			return false
		}
		return compareFloats(float64(kv.Compare(vv)), 0, op)
	}
	return false
}

func compareFloats(a, b float64, op Operator) bool {
	switch op {
	case GreaterThan, DurationGreaterThan:
		return a > b
	case GreaterThanOrEquals, DurationGreaterThanOrEquals:
		return a >= b
	case LessThan, DurationLessThan:
		return a < b
	case LessThanOrEquals, DurationLessThanOrEquals:
		return a <= b
	}
	return false
}

// durationOp implements the deprecated Duration* operators: both sides must be
// Go durations ("0" included) or numbers of seconds.
func durationOp(key, value any, op Operator) bool {
	kd, ok := durationOperand(key)
	if !ok {
		return false
	}
	vd, ok := durationOperand(value)
	if !ok {
		return false
	}
	switch op {
	case DurationGreaterThan:
		return kd > vd
	case DurationGreaterThanOrEquals:
		return kd >= vd
	case DurationLessThan:
		return kd < vd
	case DurationLessThanOrEquals:
		return kd <= vd
	}
	return false
}

func durationOperand(v any) (time.Duration, bool) {
	switch t := v.(type) {
	case float64:
		return floatDuration(t) * time.Second, true
	case string:
		d, err := time.ParseDuration(t)
		return d, err == nil
	}
	return 0, false
}
