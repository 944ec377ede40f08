package celpolicy

import (
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Templates that would make the compiler or the renderer loop, or blow
// up, are refused.
func TestTemplateRefusesRecursion(t *testing.T) {
	bomb := `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`
	env, err := cel.NewEnv(EnvOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		value string
		want  string
	}{
		"recursive alias":              {"a: &x [*x]\n", "refers to a node that contains it"},
		"recursive alias in a map":     {"a: &x {b: *x}\n", "refers to a node that contains it"},
		"alias bomb":                   {bomb, "excessive aliasing"},
		"alias bomb with placeholders": {strings.Replace(bomb, `["lol",`, `["((object.x))",`, 1), "expands to more than"},
		"deep":                         {strings.Repeat("[", 1200) + strings.Repeat("]", 1200), "nested more than"},
	} {
		for _, interpolate := range []bool{false, true} {
			want := c.want
			if !interpolate && strings.Contains(c.value, "((") {
				want = "excessive aliasing" // decoded as plain YAML
			}
			_, err := compileTemplate(env.NewCompiler(false), c.value, interpolate)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s (interpolate %v): %v, want an error containing %q", name, interpolate, err, want)
			}
		}
	}
}

func TestSplitPlaceholders(t *testing.T) {
	for in, want := range map[string][]string{
		"plain":                  {"plain"},
		"(( a ))":                {"{a}"},
		"x-(( f(y) ))-z":         {"x-", "{f(y)}", "-z"},
		`(( "))" + b ))`:         {`{"))" + b}`},
		`\(( lit )) and (( e ))`: {"(( lit )) and ", "{e}"},
		"((a))((b))":             {"{a}", "{b}"},
		`(( 'it\'s' ))`:          {`{'it\'s'}`},
	} {
		parts, exprs, err := splitPlaceholders(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		var got []string
		for i, p := range parts {
			if exprs[i] {
				p = "{" + p + "}"
			}
			got = append(got, p)
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"(( a", "(( ))", "(( a ) ))x", `(( "a ))`} {
		if _, _, err := splitPlaceholders(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
