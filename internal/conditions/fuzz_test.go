package conditions

import (
	"encoding/json"
	"testing"
)

// FuzzEvaluate feeds arbitrary JSON keys and values to every operator. It
// checks that Evaluate never panics, is deterministic, and only fails for the
// documented reasons.
func FuzzEvaluate(f *testing.F) {
	seeds := []struct{ key, op, value string }{
		{`"backend"`, "Equals", `"backend"`},
		{`"foo.mycompany.com"`, "NotEquals", `"*.mycompany.com"`},
		{`["str1","str4"]`, "NotIn", `["str1","str2","str3"]`},
		{`"build-default"`, "In", `"[\"build-default\"]"`},
		{`5`, "AnyIn", `"1-10"`},
		{`["0"]`, "AnyNotIn", `"-5-5"`},
		{`[1,15]`, "AllNotIn", `"1-10"`},
		{`"500Mi"`, "LessThan", `"1Gi"`},
		{`"1h"`, "GreaterThanOrEquals", `1800`},
		{`"1.10.0"`, "GreaterThan", `"1.9.2-rc.1+b"`},
		{`1e300`, "DurationLessThan", `"1h"`},
		{`{"a":[1,{"b":null}]}`, "Equals", `{"a":[1,{"b":null}]}`},
		{`[1,"a",true,null]`, "In", `"a"`},
		{`"|5-10"`, "AllIn", `"|5-10"`},
		{`"a*b?c"`, "AnyIn", `["*","??"]`},
	}
	for _, s := range seeds {
		f.Add(s.key, s.op, s.value)
	}
	f.Fuzz(func(t *testing.T, keyJSON, opName, valueJSON string) {
		var key, value any
		if json.Unmarshal([]byte(keyJSON), &key) != nil || json.Unmarshal([]byte(valueJSON), &value) != nil {
			return
		}
		ops := []Operator{}
		if op, err := ParseOperator(opName); err == nil {
			ops = append(ops, op)
		} else {
			for op := Equals; op < operatorCount; op++ {
				ops = append(ops, op)
			}
		}
		for _, op := range ops {
			got, err := Evaluate(key, op, value)
			again, err2 := Evaluate(key, op, value)
			if got != again || (err == nil) != (err2 == nil) {
				t.Fatalf("non-deterministic: %v %v / %v %v", got, err, again, err2)
			}
			if err != nil {
				if _, isList := key.([]any); !isList || (op != In && op != NotIn) {
					t.Fatalf("Evaluate(%s, %v, %s): unexpected error %v", keyJSON, op, valueJSON, err)
				}
			}
		}
	})
}
