package conditions

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

type fileCase struct {
	Source   string `json:"source"`
	Name     string `json:"name"`
	Operator string `json:"operator"`
	Key      any    `json:"key"`
	Value    any    `json:"value"`
	Want     bool   `json:"want"`
	Error    bool   `json:"error"`
}

func loadCases(t *testing.T) []fileCase {
	t.Helper()
	raw, err := os.ReadFile("testdata/evaluate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cases []fileCase
	if err := yaml.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Fatalf("only %d cases loaded", len(cases))
	}
	return cases
}

// TestEvaluateFile runs the data-driven cases of testdata/evaluate.yaml, whose
// keys and values are decoded exactly as a policy's would be.
func TestEvaluateFile(t *testing.T) {
	for _, tc := range loadCases(t) {
		t.Run(tc.Operator+"/"+tc.Name, func(t *testing.T) {
			op, err := ParseOperator(tc.Operator)
			if err != nil {
				if !tc.Error {
					t.Fatalf("ParseOperator(%q): %v", tc.Operator, err)
				}
				return
			}
			before := deepCopy(t, tc.Key, tc.Value)
			got, err := Evaluate(tc.Key, op, tc.Value)
			if tc.Error {
				if err == nil {
					t.Fatalf("Evaluate(%#v, %s, %#v) = %v, want an error", tc.Key, op, tc.Value, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Evaluate(%#v, %s, %#v): %v", tc.Key, op, tc.Value, err)
			}
			if got != tc.Want {
				t.Errorf("[%s] Evaluate(%#v, %s, %#v) = %v, want %v", tc.Source, tc.Key, op, tc.Value, got, tc.Want)
			}
			if after := deepCopy(t, tc.Key, tc.Value); !reflect.DeepEqual(before, after) {
				t.Errorf("inputs were modified: %v -> %v", before, after)
			}
		})
	}
}

func deepCopy(t *testing.T, vs ...any) string {
	t.Helper()
	b, err := json.Marshal(vs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEvaluateGoTypes covers what an embedder passes that JSON decoding never
// produces: Go integers, json.Number, []string, map[string]string.
func TestEvaluateGoTypes(t *testing.T) {
	type embedded struct{ A int }
	tests := []struct {
		name  string
		key   any
		op    Operator
		value any
		want  bool
		err   string // non-empty: want a *ValueError with this Path
	}{
		{name: "int64 equals float", key: int64(5), op: Equals, value: 5.0, want: true},
		{name: "int equals numeric string", key: 5, op: Equals, value: "5", want: true},
		{name: "uint8 greater", key: uint8(7), op: GreaterThan, value: int32(3), want: true},
		{name: "float32", key: float32(1.5), op: LessThan, value: 2, want: true},
		{name: "json.Number", key: json.Number("5"), op: Equals, value: "5", want: true},
		{name: "json.Number float", key: json.Number("2.5"), op: GreaterThan, value: json.Number("2"), want: true},
		{name: "json.Number invalid", key: json.Number("five"), op: Equals, value: "5", err: "key"},
		{name: "json.Number out of range", key: "a", op: Equals, value: json.Number("1e400"), err: "value"},
		{name: "int64 formatted as JSON number", key: int64(1000000), op: AnyIn, value: []any{"1e+06"}, want: true},
		{name: "int64 list elements", key: []any{int64(1), int64(2)}, op: AllIn, value: []any{1.0, 2.0, 3.0}, want: true},
		{name: "json.Number list elements", key: []any{json.Number("2")}, op: AnyIn, value: []any{"2"}, want: true},
		{name: "[]string key", key: []string{"a", "b"}, op: AllIn, value: []string{"a", "b", "c"}, want: true},
		{name: "[]string legacy In", key: []string{"a"}, op: In, value: []any{"a"}, want: true},
		{name: "map[string]string equals", key: map[string]string{"a": "1"}, op: Equals, value: map[string]any{"a": "1"}, want: true},
		{name: "nested ints deep equal", key: map[string]any{"n": int64(1), "l": []any{int32(2)}}, op: Equals, value: map[string]any{"n": 1.0, "l": []any{2.0}}, want: true},
		{name: "nested []string deep equal", key: map[string]any{"l": []string{"x"}}, op: Equals, value: map[string]any{"l": []any{"x"}}, want: true},
		{name: "typed nil map is null", key: map[string]any(nil), op: NotEquals, value: "x", want: false},
		{name: "typed nil slice is null", key: []any(nil), op: Equals, value: []any{}, want: false},
		{name: "map element formatted with float", key: []any{map[string]any{"a": int64(1)}}, op: AnyIn, value: []any{"map[a:1]"}, want: true},
		{name: "legacy In int element", key: []any{"a", 1}, op: In, value: []any{"a"}, err: "key[1]"},
		{name: "struct key", key: embedded{A: 1}, op: Equals, value: "x", err: "key"},
		{name: "struct value", key: "x", op: Equals, value: &embedded{}, err: "value"},
		{name: "channel value", key: "x", op: AnyIn, value: make(chan int), err: "value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Evaluate(tc.key, tc.op, tc.value)
			if tc.err != "" {
				var ve *ValueError
				if !errors.As(err, &ve) {
					t.Fatalf("err = %v, want *ValueError", err)
				}
				if ve.Path != tc.err {
					t.Fatalf("Path = %q, want %q (%v)", ve.Path, tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Evaluate(%#v, %s, %#v) = %v, want %v", tc.key, tc.op, tc.value, got, tc.want)
			}
		})
	}
}

func TestEvaluateInvalidOperator(t *testing.T) {
	for _, op := range []Operator{0, -1, operatorCount, 99} {
		_, err := Evaluate("a", op, "a")
		var oe *OperatorError
		if !errors.As(err, &oe) {
			t.Errorf("Evaluate with %d: err = %v, want *OperatorError", int(op), err)
		}
	}
}

// TestNotEqualsComplement checks the cases where NotEquals is not the
// negation of Equals, which callers may find surprising.
func TestNotEqualsComplement(t *testing.T) {
	tests := []struct {
		key, value any
		eq, ne     bool
	}{
		{"5", "abc", false, false},
		{nil, "x", false, false},
		{"a", "a", true, false},
		{"a", 1.0, false, true},
		{1.0, "1.0", true, false},
		{true, nil, false, true},
	}
	for _, tc := range tests {
		eq, _ := Evaluate(tc.key, Equals, tc.value)
		ne, _ := Evaluate(tc.key, NotEquals, tc.value)
		if eq != tc.eq || ne != tc.ne {
			t.Errorf("%#v vs %#v: Equals=%v NotEquals=%v, want %v %v", tc.key, tc.value, eq, ne, tc.eq, tc.ne)
		}
	}
}

func TestEvaluateDoesNotMutate(t *testing.T) {
	key := []any{int64(1), map[string]any{"a": int64(2)}, []string{"x"}}
	value := map[string]any{"b": []any{json.Number("3")}}
	before := fmt.Sprintf("%#v %#v", key, value)
	for op := Equals; op < operatorCount; op++ {
		_, _ = Evaluate(key, op, value)
		_, _ = Evaluate(value, op, key)
		_, _ = Evaluate(key, op, key)
	}
	if after := fmt.Sprintf("%#v %#v", key, value); after != before {
		t.Fatalf("inputs modified:\n%s\n%s", before, after)
	}
}

// TestHostileInputsBounded checks that strings an attacker can put in a
// resource do not make evaluation expensive. Upstream hangs on the first two.
func TestHostileInputsBounded(t *testing.T) {
	long := strings.Repeat("9", 100000)
	inputs := []string{"1e999999999", "1e-999999999", "-1E2147483647", "1e99999999999999999999", long, "0." + long, long + "Mi", strings.Repeat("*a", 2000) + "b"}
	for _, in := range inputs {
		for op := Equals; op < operatorCount; op++ {
			start := time.Now()
			_, _ = Evaluate(in, op, "1")
			_, _ = Evaluate("1Gi", op, in)
			_, _ = Evaluate([]any{in}, op, "1-10")
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%v on %.20q took %v", op, in, d)
			}
		}
	}
	tests := []struct {
		key   string
		op    Operator
		value string
		want  bool
	}{
		{"1e10000", GreaterThan, "1", true},  // within bounds: a quantity
		{"1e10001", GreaterThan, "1", false}, // beyond: not a quantity, not a float
		{"1e-10000", Equals, "1n", true},     // tiny values round up to 1n
		{"1e10001", NotEquals, "abc", true},  // falls through to wildcards
		{"1e-10001", LessThan, "1", true},    // ParseFloat still reads it
	}
	for _, tc := range tests {
		got, err := Evaluate(tc.key, tc.op, tc.value)
		if err != nil || got != tc.want {
			t.Errorf("Evaluate(%q, %v, %q) = %v, %v; want %v", tc.key, tc.op, tc.value, got, err, tc.want)
		}
	}
}

func TestEvaluateConcurrent(t *testing.T) {
	cases := loadCases(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range cases {
				op, err := ParseOperator(tc.Operator)
				if err != nil {
					continue
				}
				got, err := Evaluate(tc.Key, op, tc.Value)
				if err == nil && got != tc.Want {
					t.Errorf("concurrent %s/%s = %v", tc.Operator, tc.Name, got)
				}
			}
		}()
	}
	wg.Wait()
}
