package jmespath

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// faultsFatal makes FuzzSearch fail on panics that Search recovered from
// (set GAVEL_FUZZ_FAULTS=1), to find evaluator bugs hidden by the recovery.
// Expressions using "let" are skipped: the JMESPath parser builds malformed
// trees for some incomplete let expressions (for example "let$0 in$"), a
// library bug that Search reports as an *EvalError.
var faultsFatal = os.Getenv("GAVEL_FUZZ_FAULTS") != ""

// FuzzSearch checks that no expression and no JSON input makes Compile or
// Search panic.
func FuzzSearch(f *testing.F) {
	seeds := []struct{ expr, data string }{
		{"request.object.spec.containers[].image", `{"request":{"object":{"spec":{"containers":[{"image":"nginx"}]}}}}`},
		{"add('12Ki', '13Ki')", `null`},
		{"sum(@)", `[1,2,3]`},
		{"sum(@)", `["1Ki","2h"]`},
		{"divide(a, b)", `{"a":"10Mi","b":0}`},
		{"modulo(a, b)", `{"a":-9223372036854775808,"b":-1}`},
		{"items(@, 'k', 'v')", `{"a":1}`},
		{"lookup(@, `1e30`)", `[1]`},
		{"random('[a-z]{3}')", `{}`},
		{"semver_compare('1.2.3', @)", `">=1.x.x || !2.x"`},
		{"pattern_match('a*?b', @)", `"axxb"`},
		{"regex_replace_all('(a)(b)?', @, '$2$1')", `"abab"`},
		{"time_since('', '2020-01-01T00:00:00Z', '')", `{}`},
		{"x509_decode(@)", `"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"`},
		{"image_normalize(@)", `"localhost:5000/a/b:c@sha256:aaaa"`},
		{"is_external_url(@)", `"http://[::ffff:127.0.0.1]"`},
		{"label_match(a, b)", `{"a":{"x":[1]},"b":{"x":[1]}}`},
		{"[?a > `1`].b | sort(@)", `[{"a":2,"b":"x"}]`},
		{"let $x = a in $x", `{"a":1}`},
		{"a[::-1]", `{"a":[1,2,3]}`},
		{"round(@, `400`)", `1.5`},
		{"truncate(@, `1e300`)", `"abc"`},
		{"pad_left(@, `1e12`, 'x')", `"abc"`},
		{"join('', [@, @, @, @])", `"abc"`},
		{"replace_all(@, '', @)", `"abcdef"`},
		{"to_string(@ | [@, @] | [@, @] | [@, @])", `{"a":[1]}`},
		{"@ | [@, @][] | [@, @][] | [@, @][]", `[1]`},
		{"base64_encode(@)", `"abc"`},
	}
	for _, s := range seeds {
		f.Add(s.expr, []byte(s.data))
	}
	intr, err := New(WithRandom(seeded(1)), WithCacheSize(16), WithMaxRandomLength(4096), WithMaxResultSize(1<<20))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, data []byte) {
		if len(expr) > 4096 {
			return
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			v = string(data)
		}
		q, err := intr.Compile(expr)
		if err != nil {
			return
		}
		if _, err := q.Search(v); err != nil && faultsFatal && strings.Contains(err.Error(), "fault") && !strings.Contains(expr, "let") {
			t.Fatalf("recovered fault for %q: %v", expr, err)
		}
		_, _ = intr.Search(expr, v)
	})
}
