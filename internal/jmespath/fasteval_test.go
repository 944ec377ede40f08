package jmespath

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jmespath-community/go-jmespath/pkg/interpreter"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// The compiled evaluator must give exactly what the library's interpreter
// gives: every expression below, and every expression of the policies of
// the shared corpus, is evaluated both ways on several documents
// (including typed slices and structs, which the library reads through
// reflection) and the results and errors are compared.

var fastCases = []string{
	"a", "a.b", "a.b.c", "a[0]", "a[-1]", "a[5]", "list[0].name", "list[-2].name",
	"list[].name", "list[*].name", "list[].tags[]", "list[].tags[][]", "list[].tags[0]",
	"nested[]", "nested[][]", "nested[].x", "obj.*", "obj.*.name",
	"list[?name == 'a']", "list[?name != 'a'].name", "list[?n > `1`].n", "list[?n >= `1`].n", "list[?n < `2`]", "list[?n <= `2`].name",
	"list[?tags].name", "list[?!tags].name", "list[?tags && n].name", "list[?tags || n].name",
	"a || b", "missing || 'x'", "empty || `[]`", "emptymap || `{}`", "f || t", "t && f", "f && t", "!t", "!missing", "!empty",
	"[a, b, missing]", "{x: a, y: list[0].name}", "list[].{n: name, t: tags[0]}",
	"list | [0]", "list[].name | [1]", "list[].name | length(@)", "length(list)", "keys(obj)", "values(obj)",
	"sort_by(list, &name)[].name", "max_by(list, &n).name", "map(&name, list)", "sort(list[].name)",
	"to_upper(list[0].name)", "list[].name.to_upper(@)", "list[].tags[].to_upper(@) || `[]`",
	"contains(list[].name, 'a')", "join(',', list[].name)", "starts_with(list[0].name, 'a')",
	"length(missing)", "to_upper(`1`)", "unknown_fn(a)", "sum(list[].n)", "abs(`-1`)",
	"a == b", "a != b", "list[0] == list[0]", "`1` < `2`", "'a' < 'b'",
	"s[0]", "typed[0]", "typed[]", "typed[].x", "typed[-1]", "st.Name", "st.name", "ptr.name", "nilptr.name",
	"list[?contains(tags, 'x')].name", "list[].tags | [0]", "request.operation || 'BACKGROUND'",
	"`\"lit\"`", "@", "@.a", "a.@", "list[].[name, n]", "list[][name, n][]",
	"mixed[]", "mixed[][]", "[missing, nested, b][]", "s[]", "missing[]", "typedmix[]",
	"keys(list)", "keys(@)", "keys(emptymap)", "keys(missing)", "keys(st)", "list[].keys(@)", "obj.*.keys(@)",
	"to_lower(s)", "to_lower(missing)", "to_lower(`1`)", "to_upper(list)", "list[].tags[].to_lower(@)", "to_upper('ﬀ ß ǆ')",
	// flattening a multi-select, projecting a flattening
	"[list, nested][]", "a.[b, c][]", "@.[list, nested][]", "missing.[a, b][]", "[b, s][]", "[b, s, t, f, list, nested][]",
	"[list, nested][].name", "[nested, mixed][][]", "[typed, list][]", "[typed, list][].x", "[typedmix][]", "[typedmix, nested][].x",
	"[list][]", "[empty, list, empty][]", "[missing, list][]", "[mixed][]", "[list, list][].name", "[a, b][][]", "[a, b][].c",
	"list[].tags[] | [0]", "nested[][].to_string(@)", "[list[0].tags, missing][]", "[s, list[0].tags][]", "typedmix[].x",
	"list[].[tags, name][]", "list[].[tags][][]", "[b, empty][]",
	// projections that give elements back
	"[request.operation, request.operation][].to_upper(@)", "list[].n.abs(@)", "list[].n[].abs(@)", "list[].tags[].not_null(@)",
	"[b, s, missing][].not_null(@)", "mixed[].not_null(@)", "[`-0`, `0`, `1`][].abs(@)", "[t, f][].not_null(@)",
	"list[*].not_null(@)", "nested[*][].not_null(@)",
}

type fastStruct struct{ Name string }

func fastDocs() []any {
	base := map[string]any{
		"a": map[string]any{"b": map[string]any{"c": "deep"}}, "b": "bee",
		"list": []any{
			map[string]any{"name": "a", "n": 1.0, "tags": []any{"x", "y"}},
			map[string]any{"name": "b", "n": 2.0, "tags": []any{}},
			map[string]any{"name": "c", "n": 3.0},
			nil, "str",
		},
		"nested": []any{[]any{1.0, 2.0}, []any{[]any{3.0}}, 4.0, nil},
		"obj":    map[string]any{"k1": map[string]any{"name": "one"}, "k2": "two"},
		"empty":  []any{}, "emptymap": map[string]any{}, "t": true, "f": false, "s": "string",
		"typed":    []string{"p", "q"},
		"mixed":    []any{[]any{nil, 1.0, []any{nil}}, nil, "z", []any{}, map[string]any{"k": nil}},
		"typedmix": []any{[]any{"a"}, []string{"p"}, nil},
		"st":       fastStruct{Name: "struct"},
		"ptr":      &fastStruct{Name: "pointer"},
		"nilptr":   (*fastStruct)(nil),
		"request":  map[string]any{"operation": "CREATE"},
	}
	docs := []any{base, nil, "text", 1.0, []any{base, base}}
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 40; i++ {
		docs = append(docs, randomJSON(r, 4))
	}
	return docs
}

func randomJSON(r *rand.Rand, depth int) any {
	keys := []string{"a", "b", "list", "name", "n", "tags", "obj", "x", "empty", "t"}
	switch k := r.Intn(8); {
	case depth == 0 || k == 0:
		return []any{nil, true, false, "a", "b", 1.0, 2.0, ""}[r.Intn(8)]
	case k < 5:
		m := map[string]any{}
		for j := r.Intn(5); j >= 0; j-- {
			m[keys[r.Intn(len(keys))]] = randomJSON(r, depth-1)
		}
		return m
	default:
		var l []any
		for j := r.Intn(4); j >= 0; j-- {
			l = append(l, randomJSON(r, depth-1))
		}
		return l
	}
}

// corpusExpressions collects the expressions of the policies of the
// shared corpus (GAVEL_SHARED): plain lists and jmesPath fields, and {{ }}
// contents.
func corpusExpressions(t *testing.T) []string {
	seen := map[string]bool{}
	var out []string
	tmpl := regexp.MustCompile(`\{\{-?\s*([^{}]+?)\s*\}\}`)
	plain := regexp.MustCompile(`(?m)^\s*-?\s*(?:list|jmesPath):\s*"?([^"\n]+)"?\s*$`)
	root, ok := testshared.Optional(t, ".")
	if !ok {
		return nil
	}
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, re := range []*regexp.Regexp{tmpl, plain} {
			for _, m := range re.FindAllStringSubmatch(string(data), -1) {
				if e := strings.TrimSpace(m[1]); e != "" && !seen[e] {
					seen[e] = true
					out = append(out, e)
				}
			}
		}
		return nil
	})
	return out
}

func TestFastEvalMatchesLibrary(t *testing.T) {
	intr := mustNew(t, WithClock(fixedClock))
	exprs := append(append([]string(nil), fastCases...), corpusExpressions(t)...)
	docs := fastDocs()
	if pod, err := os.ReadFile(filepath.Join("testdata", "admission-pod.json")); err == nil {
		_ = pod
		docs = append(docs, readJSON(t, "admission-pod.json"))
	}
	compiled := 0
	for _, expr := range exprs {
		q, err := intr.Compile(expr)
		if err != nil || q.fast == nil || !q.pure {
			continue
		}
		compiled++
		lib := *q
		lib.fast = nil
		for i, doc := range docs {
			got, gerr := q.SearchCanonical(doc)
			want, werr := lib.SearchCanonical(doc)
			ge, we := errText(gerr), errText(werr)
			if unordered(expr) {
				// keys, values and object projections follow map order,
				// which also shows in the values errors print
				got, want = sortedLists(got), sortedLists(want)
				ge, we = sortedText(ge), sortedText(we)
			}
			if ge != we || !sameResult(got, want) {
				t.Fatalf("%q on document %d: compiled %#v (%v), library %#v (%v)", expr, i, got, gerr, want, werr)
			}
		}
	}
	if compiled < len(fastCases)/2 {
		t.Fatalf("only %d expressions compiled", compiled)
	}
	t.Logf("%d of %d expressions compiled and compared", compiled, len(exprs))
}

func unordered(expr string) bool {
	return strings.Contains(expr, "keys(") || strings.Contains(expr, "values(") || strings.Contains(expr, ".*") || strings.Contains(expr, "items(")
}

// sortedLists sorts every list of v by the text of its elements.
func sortedLists(v any) any {
	switch t := v.(type) {
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = sortedLists(x)
		}
		sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = sortedLists(x)
		}
		return out
	}
	return v
}

// FuzzFastEval compares the compiled evaluator with the library's
// interpreter on arbitrary expressions.
func FuzzFastEval(f *testing.F) {
	for _, e := range fastCases {
		f.Add(e)
	}
	intr, err := New(WithClock(fixedClock))
	if err != nil {
		f.Fatal(err)
	}
	docs := fastDocs()
	f.Fuzz(func(t *testing.T, expr string) {
		q, err := intr.Compile(expr)
		if err != nil || q.fast == nil || !q.pure {
			return
		}
		lib := *q
		lib.fast = nil
		for i, doc := range docs {
			got, gerr := q.SearchCanonical(doc)
			want, werr := lib.SearchCanonical(doc)
			ge, we := errText(gerr), errText(werr)
			if unordered(expr) {
				// keys, values and object projections follow map order,
				// which also shows in the values errors print
				got, want = sortedLists(got), sortedLists(want)
				ge, we = sortedText(ge), sortedText(we)
			}
			if ge != we || !sameResult(got, want) {
				t.Fatalf("%q on document %d: compiled %#v (%v), library %#v (%v)", expr, i, got, gerr, want, werr)
			}
		}
	})
}

// sameResult is reflect.DeepEqual, with any two functions (the values of
// expression references) equal.
func sameResult(a, b any) bool {
	if a != nil && b != nil && reflect.TypeOf(a).Kind() == reflect.Func {
		return reflect.TypeOf(b).Kind() == reflect.Func
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameResult(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameResult(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

var pointerText = regexp.MustCompile(`0x[0-9a-f]+`)

// errText is the text of an error without the addresses of the function
// values (expression references) it may print.
func errText(err error) string { return pointerText.ReplaceAllString(fmt.Sprint(err), "0x") }

// sortedText sorts the bytes of s: two texts that list the same items in
// another order compare equal.
func sortedText(s string) string {
	b := []byte(s)
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return string(b)
}

// TestFlattenProjectionAllocations checks that "x[]" builds its result in
// one pass: the list and its interface value, not an intermediate list
// (the multi-select is gathered on the stack).
func TestFlattenProjectionAllocations(t *testing.T) {
	intr := mustNew(t)
	q, err := intr.Compile("spec.[initContainers, containers][]")
	if err != nil || q.fast == nil {
		t.Fatalf("not compiled: %v", err)
	}
	doc := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "a"}, nil}}}
	got, err := q.SearchCanonical(doc)
	if err != nil || !reflect.DeepEqual(got, []any{map[string]any{"name": "a"}}) {
		t.Fatalf("got %#v, %v", got, err)
	}
	// the result and its interface value
	if n := testing.AllocsPerRun(100, func() { _, _ = q.SearchCanonical(doc) }); n != 2 {
		t.Errorf("%v allocations, want 2", n)
	}
}

// TestEmptyResultsAreShared: projections, filters and flattening that keep
// nothing evaluate to the library's empty list without allocating it.
func TestEmptyResultsAreShared(t *testing.T) {
	intr := mustNew(t)
	doc := map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
		"empty":      []any{},
		"nulls":      []any{nil, []any{}, nil},
	}}
	for expr, allocs := range map[string]float64{
		// the containers are projected where they are, the empty ports
		// make nothing
		"spec.containers[].ports[].hostPort": 0,
		"spec.containers[].ports[]":          0,
		"spec.containers[*].hostPort":        0,
		"spec.containers[?name == 'z'].name": 0,
		"spec.empty[]":                       0,
		"spec.nulls[]":                       0,
		"spec.nulls[][]":                     0,
	} {
		q, err := intr.Compile(expr)
		if err != nil || q.fast == nil {
			t.Fatalf("%s: not compiled: %v", expr, err)
		}
		got, err := q.SearchCanonical(doc)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		lib, err := interpreter.NewInterpreter(doc, intr.caller, nil).Execute(q.node, doc)
		if err != nil {
			t.Fatalf("%s: library: %v", expr, err)
		}
		if !reflect.DeepEqual(got, []any{}) || !reflect.DeepEqual(got, lib) {
			t.Errorf("%s = %#v, library %#v, want []", expr, got, lib)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = q.SearchCanonical(doc) }); n != allocs {
			t.Errorf("%s: %v allocations, want %v", expr, n, allocs)
		}
	}
}

// TestFlattenReturnsUnchangedLists: a flattening that changes nothing
// evaluates to the list it read, without allocating.
func TestFlattenReturnsUnchangedLists(t *testing.T) {
	intr := mustNew(t)
	containers := []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}
	drop := []any{"ALL"}
	doc := map[string]any{"spec": map[string]any{"containers": containers},
		"c": map[string]any{"drop": drop}, "mixed": []any{"x", []any{"y"}, nil}}
	for expr, want := range map[string][]any{
		"spec.containers[]": containers,
		"spec.[ephemeralContainers, initContainers, containers][]": containers,
		"c.drop[]":     drop,
		"[c.drop][]":   drop,
		"c.drop[][]":   drop,
		"[c.drop][][]": drop,
	} {
		q, err := intr.Compile(expr)
		if err != nil || q.fast == nil {
			t.Fatalf("%s: not compiled: %v", expr, err)
		}
		got, err := q.SearchCanonical(doc)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if l, ok := got.([]any); !ok || len(l) != len(want) || &l[0] != &want[0] {
			t.Errorf("%s = %#v, want the list read", expr, got)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = q.SearchCanonical(doc) }); n != 0 {
			t.Errorf("%s: %v allocations, want 0", expr, n)
		}
	}
	// lists that change are copies
	for _, expr := range []string{"mixed[]", "[c.drop, c.drop][]", "[c.drop, 'x'][]", "['x', 'y'][]"} {
		q, err := intr.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := q.SearchCanonical(doc)
		lib, _ := interpreter.NewInterpreter(doc, intr.caller, nil).Execute(q.node, doc)
		if !reflect.DeepEqual(got, lib) {
			t.Errorf("%s = %#v, library %#v", expr, got, lib)
		}
		if l := got.([]any); &l[0] == &drop[0] {
			t.Errorf("%s: the list read, want a copy", expr)
		}
	}
}

// TestProjectionOnItself: a projection that gives every element back
// (to_upper of upper-case strings) evaluates to the list it read, without
// allocating one (only to_upper's interface values); one that changes or
// drops an element builds a new list.
func TestProjectionOnItself(t *testing.T) {
	intr := mustNew(t)
	upper := []any{"ALL", "NET_RAW"}
	doc := map[string]any{"c": map[string]any{"upper": upper, "mixed": []any{"ALL", "net_raw"},
		"holes": []any{"A", nil, "B"}, "nums": []any{1.0, math.Copysign(0, -1), 2.0}}}
	q, err := intr.Compile("c.upper[].to_upper(@)")
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.SearchCanonical(doc)
	if l, ok := got.([]any); err != nil || !ok || len(l) != 2 || &l[0] != &upper[0] {
		t.Fatalf("c.upper[].to_upper(@) = %#v, %v, want the list read", got, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = q.SearchCanonical(doc) }); n != float64(len(upper)) {
		t.Errorf("c.upper[].to_upper(@): %v allocations, want %d", n, len(upper))
	}
	for expr, want := range map[string][]any{
		"c.mixed[].to_upper(@)":  {"ALL", "NET_RAW"},
		"c.holes[].not_null(@)":  {"A", "B"},
		"c.nums[].abs(@)":        {1.0, 0.0, 2.0},
		"c.upper[*].to_upper(@)": upper,
	} {
		q, err := intr.Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := q.SearchCanonical(doc)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v, want %#v", expr, got, err, want)
		}
		if expr == "c.nums[].abs(@)" && math.Signbit(got.([]any)[1].(float64)) {
			t.Errorf("%s: abs(-0) kept as -0", expr)
		}
	}
}
