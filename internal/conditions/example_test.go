package conditions_test

import (
	"fmt"

	"github.com/gavelpolicy/gavel/internal/conditions"
)

// Parse the operator once, when the policy is compiled, then evaluate it for
// every request with the substituted key and value.
func Example() {
	op, err := conditions.ParseOperator("AnyIn")
	if err != nil {
		panic(err)
	}
	containerNames := []any{"app", "debug"} // {{ request.object.spec.containers[].name }}
	ok, err := conditions.Evaluate(containerNames, op, []any{"app", "sidecar"})
	fmt.Println(ok, err)
	// Output: true <nil>
}

func ExampleEvaluate() {
	show := func(key any, name string, value any) {
		op, err := conditions.ParseOperator(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		ok, err := conditions.Evaluate(key, op, value)
		fmt.Printf("%v %s %v: %v %v\n", key, name, value, ok, err)
	}
	show("foo.mycompany.com", "NotEquals", "*.mycompany.com")
	show("500Mi", "LessThan", "1Gi")
	show("1h", "GreaterThan", "30m")
	show("1.10.0", "GreaterThan", "1.9.2")
	show(float64(5), "AnyIn", "1-10")
	show([]any{"str1", "str4"}, "NotIn", []any{"str1", "str2", "str3"})
	show("a", "equals", "a")
	// Output:
	// foo.mycompany.com NotEquals *.mycompany.com: false <nil>
	// 500Mi LessThan 1Gi: true <nil>
	// 1h GreaterThan 30m: true <nil>
	// 1.10.0 GreaterThan 1.9.2: true <nil>
	// 5 AnyIn 1-10: true <nil>
	// [str1 str4] NotIn [str1 str2 str3]: true <nil>
	// conditions: invalid operator "equals"; valid operators are Equals, NotEquals, In, NotIn, AnyIn, AllIn, AnyNotIn, AllNotIn, GreaterThan, GreaterThanOrEquals, LessThan, LessThanOrEquals, DurationGreaterThan, DurationGreaterThanOrEquals, DurationLessThan, DurationLessThanOrEquals, Equal, NotEqual
}

func ExampleParseOperator() {
	op, err := conditions.ParseOperator("Equal") // deprecated spelling
	fmt.Println(op, err, op.Deprecated())
	op, err = conditions.ParseOperator("NotIn")
	fmt.Println(op, err, op.Deprecated())
	// Output:
	// Equals <nil> false
	// NotIn <nil> true
}
