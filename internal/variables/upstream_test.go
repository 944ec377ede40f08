package variables

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A model of upstream's algorithm, written from its description: find the
// innermost templates with upstream's regular expression, evaluate them,
// splice the values back as text, and scan again until nothing is left; a
// string that is exactly one template yields the typed value; finally drop
// the backslash of escaped templates. For values without braces or
// backslashes, upstream's re-scanning cannot see anything new in the data,
// so gavel must give the same result.
var (
	modelVars    = regexp.MustCompile(`(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})`)
	modelEscaped = regexp.MustCompile(`\\\{\{(\{[^{}]*\}|[^{}])*\}\}`)
)

func modelSubstitute(value string, eval func(string) (any, error)) (any, error) {
	for {
		locs := modelVars.FindAllStringSubmatchIndex(value, -1)
		if len(locs) == 0 {
			break
		}
		var sb strings.Builder
		prev := 0
		for _, loc := range locs {
			start, end := loc[4], loc[5]
			v := value[start:end]
			expr := strings.ReplaceAll(v, "{{", "")
			expr = strings.ReplaceAll(expr, "}}", "")
			expr = strings.TrimSpace(expr)
			if strings.HasPrefix(expr, "-") {
				expr = strings.TrimSpace(expr[1:])
			}
			val, err := eval(expr)
			if err != nil {
				return nil, err
			}
			if v == value {
				return val, nil
			}
			var text string
			if s, ok := val.(string); ok {
				text = s
			} else {
				b, _ := json.Marshal(val)
				text = string(b)
			}
			sb.WriteString(value[prev:start])
			sb.WriteString(text)
			prev = end
		}
		sb.WriteString(value[prev:])
		value = sb.String()
	}
	for _, m := range modelEscaped.FindAllString(value, -1) {
		value = strings.ReplaceAll(value, m, m[1:])
	}
	return value, nil
}

// modelEval answers every expression with a value without braces or
// backslashes; expressions containing "n" give numbers, "e" gives an error.
func modelEval(expr string) (any, error) {
	switch {
	case strings.Contains(expr, "e"):
		return nil, errors.New("boom " + expr)
	case strings.Contains(expr, "n"):
		return float64(len(expr)), nil
	}
	return "v" + strconv.Itoa(len(expr)), nil
}

func gavelSubstitute(s string) (any, error) {
	tmpl, err := Parse(s, WithMaxNesting(1000))
	if err != nil {
		return nil, err
	}
	return tmpl.Render(EvaluatorFunc(modelEval))
}

func compareWithModel(t *testing.T, s string) {
	t.Helper()
	want, wantErr := modelSubstitute(s, modelEval)
	got, err := gavelSubstitute(s)
	if (wantErr != nil) != (err != nil) {
		t.Fatalf("%q: error %v, model error %v", s, err, wantErr)
	}
	if wantErr != nil {
		var re *ResolveError
		if !errors.As(err, &re) || re.Err.Error() != wantErr.Error() {
			t.Fatalf("%q: error %v, model error %v", s, err, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: got %#v, model %#v", s, got, want)
	}
}

func TestMatchesUpstreamModel(t *testing.T) {
	fixed := []string{
		"{{a}}", "x{{a}}y", "{{a}}{{b}}{{c}}{{d}}", "{{x.{{y}}}}", "{{x.{{y}}.{{z}}}}",
		`\{{a}}`, `\\{{a}}`, `\{{a.{{b}}}}`, "{{{a}}", "{{{a}}}", "{{ {a: b} }}", "{{{{a}}}}",
		"{{ a }}}", "{{ a }} }}", "{{ {a}{b} }}", "{{-a}}", "{{ - a }}", "{{}}", "{{ }}",
		"}}{{a}}{{", "{{a}}\\", "a{{\\{{b}}}}", "{{a\\}}", "{{n}}", "x{{n}}", "{{e}}",
		"{{ a.{{ n }} }}", "é{{a}}", "{{a}}é{{b}}", "{\n{{a}}\n}",
	}
	for _, s := range fixed {
		compareWithModel(t, s)
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{"{", "}", "{{", "}}", `\`, "a", "b", ".", " ", "-", "n", "x"}
	for i := 0; i < 20000*heavy(); i++ {
		var sb strings.Builder
		for j := rng.Intn(16 * heavy()); j >= 0; j-- {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		compareWithModel(t, sb.String())
	}
}

// findTemplates must find exactly what upstream's regular expression finds
// on plain text.
func TestFindTemplatesMatchesRegexp(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	alphabet := "{}\\ab"
	for i := 0; i < 20000*heavy(); i++ {
		b := make([]byte, rng.Intn(14))
		for j := range b {
			b[j] = alphabet[rng.Intn(len(alphabet))]
		}
		s := string(b)
		toks := make([]int32, len(s))
		for j := range s {
			toks[j] = int32(s[j])
		}
		var got []string
		for _, sp := range findTemplates(toks) {
			got = append(got, s[sp.start:sp.end])
		}
		var want []string
		for _, loc := range modelVars.FindAllStringSubmatchIndex(s, -1) {
			want = append(want, s[loc[4]:loc[5]])
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: found %q, regexp %q", s, got, want)
		}
		var gotEsc []int
		for _, sp := range findEscapes(toks) {
			gotEsc = append(gotEsc, sp.start)
		}
		var wantEsc []int
		for _, loc := range modelEscaped.FindAllStringIndex(s, -1) {
			wantEsc = append(wantEsc, loc[0])
		}
		if fmt.Sprint(gotEsc) != fmt.Sprint(wantEsc) {
			t.Fatalf("%q: escapes %v, regexp %v", s, gotEsc, wantEsc)
		}
	}
}

// heavy scales the randomized comparisons (GAVEL_HEAVY=1 for a long run).
func heavy() int {
	if os.Getenv("GAVEL_HEAVY") != "" {
		return 10
	}
	return 1
}
