package conditions

import (
	"strconv"
	"strings"
)

// Operator is a parsed condition operator. The zero value is not a valid
// operator; obtain one with ParseOperator or use the constants.
type Operator int

// The condition operators. Equal and NotEqual, the deprecated spellings that
// upstream still accepts, parse to Equals and NotEquals.
const (
	invalidOperator Operator = iota
	Equals
	NotEquals
	In
	NotIn
	AnyIn
	AllIn
	AnyNotIn
	AllNotIn
	GreaterThan
	GreaterThanOrEquals
	LessThan
	LessThanOrEquals
	DurationGreaterThan
	DurationGreaterThanOrEquals
	DurationLessThan
	DurationLessThanOrEquals
	operatorCount
)

var operatorNames = [operatorCount]string{
	Equals:                      "Equals",
	NotEquals:                   "NotEquals",
	In:                          "In",
	NotIn:                       "NotIn",
	AnyIn:                       "AnyIn",
	AllIn:                       "AllIn",
	AnyNotIn:                    "AnyNotIn",
	AllNotIn:                    "AllNotIn",
	GreaterThan:                 "GreaterThan",
	GreaterThanOrEquals:         "GreaterThanOrEquals",
	LessThan:                    "LessThan",
	LessThanOrEquals:            "LessThanOrEquals",
	DurationGreaterThan:         "DurationGreaterThan",
	DurationGreaterThanOrEquals: "DurationGreaterThanOrEquals",
	DurationLessThan:            "DurationLessThan",
	DurationLessThanOrEquals:    "DurationLessThanOrEquals",
}

// ParseOperator parses an operator name as written in a policy.
//
// The names are those of upstream's kyverno.io/v1 API, which also accepts the
// deprecated spellings "Equal" and "NotEqual". Matching is case-sensitive, as
// upstream policy validation is: upstream's evaluator lower-cases the name,
// but a policy spelling it "equals" is rejected before it is ever evaluated
// ("entered value of `operator` is invalid"), and an empty operator is
// rejected as missing. Unknown names give an *OperatorError.
func ParseOperator(s string) (Operator, error) {
	switch s {
	case "Equal":
		return Equals, nil
	case "NotEqual":
		return NotEquals, nil
	}
	for op := Equals; op < operatorCount; op++ {
		if operatorNames[op] == s {
			return op, nil
		}
	}
	return invalidOperator, &OperatorError{Name: s}
}

// String returns the canonical name of the operator, or "Operator(n)" for an
// invalid value.
func (o Operator) String() string {
	if o.valid() {
		return operatorNames[o]
	}
	return "Operator(" + strconv.Itoa(int(o)) + ")"
}

// Deprecated reports whether upstream flags the operator as deprecated in
// favour of the Any/All set operators: In (use AllIn or AnyIn) and NotIn (use
// AllNotIn or AnyNotIn). The Duration* operators still work upstream but are
// only logged as superseded by the plain comparison operators; they are not
// reported here, matching upstream's list.
func (o Operator) Deprecated() bool { return o == In || o == NotIn }

// MarshalText implements encoding.TextMarshaler with the canonical name.
func (o Operator) MarshalText() ([]byte, error) {
	if !o.valid() {
		return nil, &OperatorError{Name: o.String()}
	}
	return []byte(operatorNames[o]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseOperator.
func (o *Operator) UnmarshalText(b []byte) error {
	op, err := ParseOperator(string(b))
	if err != nil {
		return err
	}
	*o = op
	return nil
}

func (o Operator) valid() bool { return o > invalidOperator && o < operatorCount }

// OperatorNames returns the names ParseOperator accepts, canonical names
// first, in a fixed order.
func OperatorNames() []string {
	names := make([]string, 0, int(operatorCount)+1)
	for op := Equals; op < operatorCount; op++ {
		names = append(names, operatorNames[op])
	}
	return append(names, "Equal", "NotEqual")
}

// OperatorError reports an operator name that ParseOperator does not accept, or
// an Operator value that is not one of the constants.
type OperatorError struct {
	Name string
}

func (e *OperatorError) Error() string {
	if e.Name == "" {
		return "conditions: operator is missing"
	}
	return "conditions: invalid operator " + strconv.Quote(e.Name) + "; valid operators are " + strings.Join(OperatorNames(), ", ")
}
