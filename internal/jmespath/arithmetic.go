package jmespath

import (
	"fmt"
	"math"
	"math/big"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gavelpolicy/gavel/internal/quantity"
)

// Arithmetic follows the upstream engine's operand rules. Each argument is
// classified as a scalar (a JSON number), a quantity (a string that
// resource.ParseQuantity accepts, tried first) or a duration (a string that
// time.ParseDuration accepts). Anything else is an "invalid operands" error.
// Quantities and durations are returned as strings in their canonical form.
//
//	add, subtract, sum:  Q±Q -> Q   D±D -> D   S±S -> S   any other mix -> error
//	multiply:            Q*S, S*Q -> Q   D*S, S*D -> D   S*S -> S   others -> error
//	divide:              Q/Q -> S   Q/S -> Q   D/D -> S   D/S -> D   S/S -> S   others -> error
//	modulo:              Q%Q -> Q   D%D -> D   S%S -> S (integers only)   others -> error
//
// Because "m" is the milli suffix of quantities, "5m" is a quantity, never
// five minutes.

type operandKind int

const (
	kindScalar operandKind = iota
	kindQuantity
	kindDuration
)

type operand struct {
	kind operandKind
	f    float64
	q    resource.Quantity
	d    time.Duration
}

func parseOperand(v any) (operand, bool) {
	switch t := v.(type) {
	case float64:
		return operand{kind: kindScalar, f: t}, true
	case string:
		if q, ok := quantity.Parse(t); ok {
			return operand{kind: kindQuantity, q: q}, true
		}
		if d, err := time.ParseDuration(t); err == nil {
			return operand{kind: kindDuration, d: d}, true
		}
	}
	return operand{}, false
}

func parseOperands(name string, args []any) (operand, operand, error) {
	a, okA := parseOperand(args[0])
	b, okB := parseOperand(args[1])
	if !okA || !okB {
		return operand{}, operand{}, fnErr(name, 0, "%s", msgInvalidOperands)
	}
	return a, b, nil
}

// scalarQuantity converts a number to a quantity the way upstream does (via
// its %v text).
func scalarQuantity(f float64) (resource.Quantity, error) {
	return resource.ParseQuantity(fmt.Sprintf("%v", f))
}

func addOperands(name string, a, b operand) (any, error) {
	if a.kind != b.kind {
		return nil, fnErr(name, 0, "%s", msgTypeMismatch)
	}
	switch a.kind {
	case kindQuantity:
		q := a.q.DeepCopy()
		q.Add(b.q)
		return q.String(), nil
	case kindDuration:
		return (a.d + b.d).String(), nil
	default:
		return a.f + b.f, nil
	}
}

func jpAdd(args []any) (any, error) {
	a, b, err := parseOperands("add", args)
	if err != nil {
		return nil, err
	}
	return addOperands("add", a, b)
}

// jpSum folds add over the array. A one-element array is returned unchanged
// (upstream does not validate it).
func jpSum(args []any) (any, error) {
	items, ok := args[0].([]any)
	if !ok {
		return nil, fnErr("sum", 1, "%s", msgTypeMismatch)
	}
	if len(items) == 0 {
		return nil, fnErr("sum", 1, "at least one element in the array is required")
	}
	result := items[0]
	for _, item := range items[1:] {
		a, b, err := parseOperands("sum", []any{result, item})
		if err != nil {
			return nil, err
		}
		if result, err = addOperands("sum", a, b); err != nil {
			return nil, err
		}
	}
	return result, nil
}

func jpSubtract(args []any) (any, error) {
	a, b, err := parseOperands("subtract", args)
	if err != nil {
		return nil, err
	}
	if a.kind != b.kind {
		return nil, fnErr("subtract", 0, "%s", msgTypeMismatch)
	}
	switch a.kind {
	case kindQuantity:
		q := a.q.DeepCopy()
		q.Sub(b.q)
		return q.String(), nil
	case kindDuration:
		return (a.d - b.d).String(), nil
	default:
		return a.f - b.f, nil
	}
}

func jpMultiply(args []any) (any, error) {
	a, b, err := parseOperands("multiply", args)
	if err != nil {
		return nil, err
	}
	if a.kind == kindScalar && b.kind != kindScalar {
		a, b = b, a
	}
	if b.kind != kindScalar {
		return nil, fnErr("multiply", 0, "%s", msgTypeMismatch)
	}
	switch a.kind {
	case kindQuantity:
		sq, err := scalarQuantity(b.f)
		if err != nil {
			return nil, fnWrap("multiply", 2, err)
		}
		x := a.q.DeepCopy()
		prod := x.AsDec()
		prod.Mul(prod, sq.AsDec())
		return resource.NewDecimalQuantity(*prod, a.q.Format).String(), nil
	case kindDuration:
		seconds := a.d.Seconds() * b.f
		return time.Duration(seconds * float64(time.Second)).String(), nil
	default:
		return a.f * b.f, nil
	}
}

func jpDivide(args []any) (any, error) {
	a, b, err := parseOperands("divide", args)
	if err != nil {
		return nil, err
	}
	zero := fnErr("divide", 2, "%s", msgZeroDivision)
	mismatch := fnErr("divide", 0, "%s", msgTypeMismatch)
	switch a.kind {
	case kindQuantity:
		switch b.kind {
		case kindQuantity:
			divisor := b.q.AsApproximateFloat64()
			if divisor == 0 {
				return nil, zero
			}
			return a.q.AsApproximateFloat64() / divisor, nil
		case kindScalar:
			if b.f == 0 {
				return nil, zero
			}
			sq, err := scalarQuantity(b.f)
			if err != nil {
				return nil, fnWrap("divide", 2, err)
			}
			if sq.Sign() == 0 {
				return nil, zero
			}
			return divideQuantity(a.q, sq), nil
		}
	case kindDuration:
		switch b.kind {
		case kindDuration:
			if b.d.Seconds() == 0 {
				return nil, zero
			}
			return a.d.Seconds() / b.d.Seconds(), nil
		case kindScalar:
			if b.f == 0 {
				return nil, zero
			}
			seconds := a.d.Seconds() / b.f
			return time.Duration(seconds * float64(time.Second)).String(), nil
		}
	case kindScalar:
		if b.kind == kindScalar {
			if b.f == 0 {
				return nil, zero
			}
			return a.f / b.f, nil
		}
	}
	return nil, mismatch
}

func jpModulo(args []any) (any, error) {
	a, b, err := parseOperands("modulo", args)
	if err != nil {
		return nil, err
	}
	if a.kind != b.kind {
		return nil, fnErr("modulo", 0, "%s", msgTypeMismatch)
	}
	nonInt := fnErr("modulo", 0, "%s", msgNonIntModulo)
	zero := fnErr("modulo", 2, "%s", msgZeroDivision)
	switch a.kind {
	case kindQuantity:
		x, y := a.q.DeepCopy(), b.q.DeepCopy()
		f1, f2 := x.ToDec().AsApproximateFloat64(), y.ToDec().AsApproximateFloat64()
		i1, ok1 := exactInt64(f1)
		i2, ok2 := exactInt64(f2)
		if !ok1 || !ok2 {
			return nil, nonInt
		}
		if i2 == 0 {
			return nil, zero
		}
		return resource.NewQuantity(i1%i2, a.q.Format).String(), nil
	case kindDuration:
		if b.d == 0 {
			return nil, zero
		}
		return (a.d % b.d).String(), nil
	default:
		i1, ok1 := exactInt64(a.f)
		i2, ok2 := exactInt64(b.f)
		if !ok1 || !ok2 {
			return nil, nonInt
		}
		if i2 == 0 {
			return nil, zero
		}
		return float64(i1 % i2), nil
	}
}

// exactInt64 converts f to int64 when it is an integer within range.
func exactInt64(f float64) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	i := int64(f)
	return i, float64(i) == f
}

func jpRound(args []any) (any, error) {
	v, places := args[0].(float64), args[1].(float64)
	n, err := intNumber(places)
	if err != nil {
		return nil, fnErr("round", 2, "%s", msgNonIntRound)
	}
	if n < 0 {
		return nil, fnErr("round", 2, msgArgOutOfBounds, 2, n)
	}
	shift := math.Pow(10, float64(n))
	return math.Round(v*shift) / shift, nil
}

// divideQuantity divides q by the non-zero d as upstream does and
// returns the quotient's canonical form. The quotient is exact, then
// rounded toward zero at the larger of the two operands' decimal scales
// (upstream calls inf.Dec's QuoRound with RoundDown). With
// q = qu·10^-qs and d = du·10^-ds, the quotient's unscaled value at
// scale s is qu·10^(s-qs+ds) / du, and big.Int's Quo truncates toward
// zero as RoundDown does.
func divideQuantity(q, d resource.Quantity) string {
	x := q.DeepCopy()
	dividend, divisor := x.AsDec(), d.AsDec()
	scale := max(dividend.Scale(), divisor.Scale())
	num := new(big.Int).Set(dividend.UnscaledBig())
	den := new(big.Int).Set(divisor.UnscaledBig())
	if e := int64(scale) - int64(dividend.Scale()) + int64(divisor.Scale()); e >= 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(e), nil))
	} else {
		den.Mul(den, new(big.Int).Exp(big.NewInt(10), big.NewInt(-e), nil))
	}
	// dividend is x's own decimal: it takes the quotient's digits.
	dividend.SetUnscaledBig(num.Quo(num, den)).SetScale(scale)
	return resource.NewDecimalQuantity(*dividend, q.Format).String()
}
