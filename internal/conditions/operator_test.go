package conditions

import (
	"errors"
	"strings"
	"testing"
)

func TestParseOperator(t *testing.T) {
	tests := []struct {
		in   string
		want Operator
		err  bool
	}{
		{in: "Equals", want: Equals},
		{in: "Equal", want: Equals},
		{in: "NotEquals", want: NotEquals},
		{in: "NotEqual", want: NotEquals},
		{in: "In", want: In},
		{in: "NotIn", want: NotIn},
		{in: "AnyIn", want: AnyIn},
		{in: "AllIn", want: AllIn},
		{in: "AnyNotIn", want: AnyNotIn},
		{in: "AllNotIn", want: AllNotIn},
		{in: "GreaterThan", want: GreaterThan},
		{in: "GreaterThanOrEquals", want: GreaterThanOrEquals},
		{in: "LessThan", want: LessThan},
		{in: "LessThanOrEquals", want: LessThanOrEquals},
		{in: "DurationGreaterThan", want: DurationGreaterThan},
		{in: "DurationGreaterThanOrEquals", want: DurationGreaterThanOrEquals},
		{in: "DurationLessThan", want: DurationLessThan},
		{in: "DurationLessThanOrEquals", want: DurationLessThanOrEquals},
		{in: "equals", err: true},
		{in: "EQUALS", err: true},
		{in: " Equals", err: true},
		{in: "GreaterThanOrEqual", err: true},
		{in: "Contains", err: true},
		{in: "", err: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseOperator(tc.in)
			if tc.err {
				var oe *OperatorError
				if !errors.As(err, &oe) || oe.Name != tc.in {
					t.Fatalf("ParseOperator(%q) = %v, %v; want *OperatorError", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseOperator(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestOperatorStringRoundTrip(t *testing.T) {
	for op := Equals; op < operatorCount; op++ {
		back, err := ParseOperator(op.String())
		if err != nil || back != op {
			t.Errorf("%d: String %q parses to %v, %v", int(op), op.String(), back, err)
		}
		text, err := op.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var u Operator
		if err := u.UnmarshalText(text); err != nil || u != op {
			t.Errorf("text round trip of %v gives %v, %v", op, u, err)
		}
	}
	if s := Operator(0).String(); s != "Operator(0)" {
		t.Errorf("invalid operator String = %q", s)
	}
	if _, err := Operator(0).MarshalText(); err == nil {
		t.Error("MarshalText of invalid operator succeeded")
	}
	var u Operator
	if err := u.UnmarshalText([]byte("nope")); err == nil {
		t.Error("UnmarshalText of unknown name succeeded")
	}
}

func TestOperatorDeprecated(t *testing.T) {
	for op := Equals; op < operatorCount; op++ {
		want := op == In || op == NotIn
		if op.Deprecated() != want {
			t.Errorf("%v.Deprecated() = %v", op, !want)
		}
	}
}

func TestOperatorErrorMessage(t *testing.T) {
	_, err := ParseOperator("Contains")
	if !strings.Contains(err.Error(), `"Contains"`) || !strings.Contains(err.Error(), "AnyNotIn") {
		t.Errorf("message does not name the input and the valid names: %v", err)
	}
	_, err = ParseOperator("")
	if !strings.Contains(err.Error(), "missing") {
		t.Errorf("empty operator message: %v", err)
	}
	if n := len(OperatorNames()); n != 18 {
		t.Errorf("OperatorNames has %d names, want 18", n)
	}
}
