package jmespath

import (
	"errors"
	"strings"
	"testing"
)

// TestCompileChecksCalls: a call that fails on every evaluation (unknown
// function, wrong number of arguments, literal argument of a wrong type)
// fails at Compile; calls whose arguments are known only from the data
// compile.
func TestCompileChecksCalls(t *testing.T) {
	intr := mustNew(t)
	for _, tc := range []struct {
		expr string
		err  string // "" when the expression compiles
	}{
		{"nope(@)", "unknown function: nope"},
		{"a[?nope(@)].b", "unknown function: nope"},
		{"{x: a, y: b | nope2(@, `1`)}", "unknown function: nope2"},
		{"to_upper(@, 'x')", "invalid arity, the function 'to_upper' expects at most 1 arguments but 2 were supplied"},
		{"to_upper()", "invalid arity, the function 'to_upper' expects 1 argument but none were supplied"},
		{"to_upper(@)", ""},
		{"to_upper('x')", ""},
		{"to_upper(`1`)", "JMESPath function 'to_upper': argument #1 is not of type string (got number)"},
		{"truncate('abc', '1')", "argument #2 is not of type number (got string)"},
		{"truncate(@, `1`)", ""},
		{"compare('a')", "invalid arity"},
		{"regex_match('a', @, 'c')", "invalid arity"},
		// standard functions: arity, optional and variadic arguments, types
		{"length(`5`)", "argument #1 is not of type string or array or object (got number)"},
		{"length(@)", ""},
		{"length('abc')", ""},
		{"not_null()", "invalid arity, the function 'not_null' expects 1 argument or more but none were supplied"},
		{"not_null(a, b, c, `null`)", ""},
		{"find_first('abc', 'b')", ""},
		{"find_first('abc', 'b', `0`, `2`)", ""},
		{"find_first('abc', 'b', `0`, `2`, `3`)", "invalid arity"},
		{"sort_by(@, &a)", ""},
		{"sort_by(@, 'a')", "argument #2 is not of type expref (got string)"},
		{"sort_by(&a, &a)", "argument #1 is not of type array (got expref)"},
		{"max_by(items, &to_number(a))", ""},
		{"max_by(items, &nope(a))", "unknown function: nope"},
		{"sum(`[1, 2]`)", ""},
		{"abs(`null`)", "argument #1 is not of type number (got null)"},
		// Kyverno's versions of standard names replace them
		{"items(@)", "invalid arity, the function 'items' expects 3 arguments but 1 were supplied"},
		{"items(@, 'k', 'v')", ""},
		{"split('a,b', ',')", ""},
		// arguments inside let and pipes
		{"let $x = a in to_upper($x)", ""},
		{"let $x = a in to_upper($x, $x)", "invalid arity"},
		{"a | to_lower(@) | to_lower(@, @)", "invalid arity"},
	} {
		_, err := intr.Compile(tc.expr)
		if tc.err == "" {
			if err != nil {
				t.Errorf("Compile(%q): %v", tc.expr, err)
			}
			continue
		}
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Expression != tc.expr || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Compile(%q) = %v, want a *CompileError containing %q", tc.expr, err, tc.err)
		}
	}
}

// TestCompileKnowsEveryFunction: every function of the interpreter, custom
// or standard, compiles with the number of arguments it takes and fails
// with one too many (unless variadic) and one too few (unless it takes
// none).
func TestCompileKnowsEveryFunction(t *testing.T) {
	intr := mustNew(t)
	call := func(name string, n int) string {
		args := make([]string, n)
		for k := range args {
			args[k] = "@"
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	}
	infos := intr.Functions()
	if len(infos) < 80 {
		t.Fatalf("%d functions", len(infos))
	}
	for _, f := range infos {
		required, variadic := 0, false
		for _, a := range f.Arguments {
			if !strings.HasSuffix(a, "?") {
				required++
			}
			variadic = variadic || strings.HasSuffix(a, "...")
		}
		if _, err := intr.Compile(call(f.Name, required)); err != nil {
			t.Errorf("%s: %v", f.Signature(), err)
		}
		if _, err := intr.Compile(call(f.Name, len(f.Arguments)+1)); !variadic && err == nil {
			t.Errorf("%s: compiles with %d arguments", f.Signature(), len(f.Arguments)+1)
		}
		if required > 0 {
			if _, err := intr.Compile(call(f.Name, required-1)); err == nil {
				t.Errorf("%s: compiles with %d arguments", f.Signature(), required-1)
			}
		}
	}
}
