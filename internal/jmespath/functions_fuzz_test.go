package jmespath

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// functionSeeds are realistic argument lists (JSON arrays) for every
// custom function; FuzzFunctions mutates them.
var functionSeeds = map[string][]string{
	"compare":                   {`["a","b"]`, `["",""]`},
	"equal_fold":                {`["Go","GO"]`, `["ß","SS"]`},
	"replace":                   {`["aaa","a","b",2]`, `["abc","","-",-1]`, `["x","x","y",1e300]`},
	"replace_all":               {`["a-b-c","-","+"]`, `["","","x"]`},
	"to_upper":                  {`["straße"]`},
	"to_lower":                  {`["İ"]`},
	"trim":                      {`["--a--","-"]`, `["a",""]`},
	"trim_prefix":               {`["prefix-a","prefix-"]`},
	"split":                     {`["a,b,c",","]`, `["abc",""]`},
	"regex_replace_all":         {`["(a+)(b)?","aab ab","$2$1"]`, `["[","x","y"]`, `["a",1,2]`},
	"regex_replace_all_literal": {`["a+","aaa","$1"]`, `["(?i)A","a",3.5]`},
	"regex_match":               {`["^[a-z]+$","abc"]`, `["\\d",1]`, `["(",""]`},
	"pattern_match":             {`["a*?b","axxb"]`, `["*",12]`, `["\\*","*"]`},
	"label_match":               {`[{"app":"web"},{"app":"web","x":"y"}]`, `[{"a":1},{"a":"1"}]`},
	"to_boolean":                {`["TruE"]`, `["yes"]`},
	"add":                       {`[1,2]`, `["12Ki","13Ki"]`, `["1h","30m"]`, `["1h",2]`, `[1e308,1e308]`},
	"sum":                       {`[[1,2,3]]`, `[["1Ki","2Mi"]]`, `[["1h","2s"]]`, `[[]]`, `[["1",1]]`},
	"subtract":                  {`[5,7]`, `["1Gi","1Mi"]`, `["2h","3h"]`},
	"multiply":                  {`[3,4]`, `["2Ki",3]`, `["1h",2.5]`, `["1Ki","1Ki"]`},
	"divide":                    {`[10,4]`, `["10Mi",0]`, `["1h","30m"]`, `["1Ki","3"]`, `[-9223372036854775808,-1]`},
	"modulo":                    {`[10,3]`, `["10Mi","3Mi"]`, `["1h","7m"]`, `[1.5,1]`, `[-9223372036854775808,-1]`},
	"round":                     {`[2.5,0]`, `[1.23456,3]`, `[1,400]`, `[1,-3]`, `[1e300,2]`},
	"base64_decode":             {`["aGVsbG8="]`, `["%%%"]`},
	"base64_encode":             {`["hello"]`},
	"time_since":                {`["","2020-01-01T00:00:00Z",""]`, `["2006-01-02","2020-01-01","2021-01-01"]`, `["x","y","z"]`},
	"time_now":                  {`[]`},
	"time_now_utc":              {`[]`},
	"path_canonicalize":         {`["/a//b/../c/."]`, `["../../x"]`, `[""]`},
	"truncate":                  {`["abcdef",3]`, `["abc",-1]`, `["héllo",2]`, `["abc",1e300]`},
	"semver_compare":            {`["1.2.3",">=1.0.0 <2.0.0"]`, `["1.2.3-beta","!1.x"]`, `["x","1"]`},
	"parse_json":                {`["{\"a\":[1,2]}"]`, `["[1,"]`, `["1e999"]`},
	"parse_yaml":                {`["a: [1, 2]\nb: x"]`, `["a: &a [*a]"]`, `["- !!binary aGk="]`},
	"lookup":                    {`[{"a":1},"a"]`, `[[1,2],1]`, `[[1,2],1.5]`, `[[1],-1]`, `[[1],1e30]`},
	"items":                     {`[{"a":1,"b":2},"k","v"]`, `[[1,2],"i","v"]`},
	"object_from_lists":         {`[["a","b"],[1,2]]`, `[["a"],[]]`, `[[1],[2]]`},
	"random":                    {`["[a-z]{5}"]`, `["[0-9]{1,6}"]`, `["(a|b)*"]`, `["x{1000,}"]`, `["\\p{L}"]`},
	"x509_decode":               {`["-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"]`, `[""]`},
	"time_to_cron":              {`["2023-02-02T15:04:05Z"]`, `["bad"]`},
	"time_add":                  {`["2023-01-01T00:00:00Z","1h30m"]`, `["2023-01-01T00:00:00Z","-9999999h"]`},
	"time_parse":                {`["2006-01-02","2023-01-02"]`, `["1136239445","1680000000"]`, `["",""]`},
	"time_utc":                  {`["2023-02-02T15:04:05+01:00"]`},
	"time_diff":                 {`["2023-01-01T00:00:00Z","2023-01-02T00:00:00Z"]`, `["0001-01-01T00:00:00Z","9999-12-31T23:59:59Z"]`},
	"time_before":               {`["2023-01-01T00:00:00Z","2023-01-02T00:00:00Z"]`},
	"time_after":                {`["2023-01-01T00:00:00Z","2023-01-02T00:00:00Z"]`},
	"time_between":              {`["2023-01-01T12:00:00Z","2023-01-01T00:00:00Z","2023-01-02T00:00:00Z"]`},
	"time_truncate":             {`["2023-01-01T12:34:56Z","1h"]`, `["2023-01-01T12:34:56Z","0s"]`, `["2023-01-01T12:34:56Z","-1h"]`},
	"image_normalize":           {`["nginx"]`, `["localhost:5000/a/b:c@sha256:aaaa"]`, `["UPPER/case"]`, `[""]`},
	"is_external_url":           {`["https://example.com"]`, `["http://[::ffff:127.0.0.1]"]`, `["http://0x7f.1"]`, `["%"]`},
	"sha256":                    {`["abc"]`},
	"md5":                       {`["abc"]`},
	"sha1":                      {`["abc"]`},
}

// customSpecs returns the custom functions in name order.
func customSpecs(i *Interpreter) []fnSpec {
	specs := i.customFunctions()
	sort.Slice(specs, func(a, b int) bool { return specs[a].name < specs[b].name })
	return specs
}

// jsonLiteral writes v as a JMESPath JSON literal.
func jsonLiteral(v any) string {
	raw, _ := json.Marshal(v)
	return "`" + strings.ReplaceAll(string(raw), "`", "\\`") + "`"
}

// canonical reports whether v is a canonical JSON-like tree.
func canonical(v any) bool {
	switch t := v.(type) {
	case nil, string, bool, float64:
		return true
	case []any:
		for _, x := range t {
			if !canonical(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range t {
			if !canonical(x) {
				return false
			}
		}
		return true
	}
	return false
}

// TestFunctionSeedsCoverEveryFunction keeps the seeds of FuzzFunctions in
// step with the function table.
func TestFunctionSeedsCoverEveryFunction(t *testing.T) {
	intr, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range customSpecs(intr) {
		if len(functionSeeds[s.name]) == 0 {
			t.Errorf("no fuzz seed for %s", s.name)
		}
	}
}

// FuzzFunctions calls every custom function with fuzzed arguments passed
// as JSON literals: no call may panic (a recovered panic is reported as an
// "evaluation fault"), and a result must be a canonical JSON-like value of
// the declared return type.
func FuzzFunctions(f *testing.F) {
	intr, err := New(WithRandom(seeded(7)), WithMaxRandomLength(1024),
		WithClock(func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }))
	if err != nil {
		f.Fatal(err)
	}
	specs := customSpecs(intr)
	for n, s := range specs {
		for _, args := range functionSeeds[s.name] {
			f.Add(uint8(n), []byte(args))
		}
	}
	f.Fuzz(func(t *testing.T, n uint8, args []byte) {
		if len(args) > 4096 {
			return
		}
		s := specs[int(n)%len(specs)]
		var list []any
		if err := json.Unmarshal(args, &list); err != nil || len(list) > 6 {
			return
		}
		lits := make([]string, len(list))
		for i, a := range list {
			lits[i] = jsonLiteral(a)
		}
		expr := s.name + "(" + strings.Join(lits, ", ") + ")"
		q, err := intr.Compile(expr)
		if err != nil {
			// Compile rejects a call only when its evaluation fails too.
			node, perr := parsing.NewParser().Parse(expr)
			if perr != nil {
				t.Fatalf("compile %s: %v", expr, err)
			}
			unchecked := &Query{expr: expr, node: node, intr: intr}
			if _, everr := unchecked.Search(nil); everr == nil {
				t.Fatalf("%s: compile error %v, but its evaluation succeeds", expr, err)
			}
			return
		}
		start := time.Now()
		out, err := q.Search(nil)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s took %v", expr, d)
		}
		if err != nil {
			if strings.Contains(err.Error(), "evaluation fault") {
				t.Fatalf("%s panicked: %v", expr, err)
			}
			return
		}
		if !canonical(out) {
			t.Fatalf("%s returned a non-canonical %T: %#v", expr, out, out)
		}
		if out != nil && !matchesType(s.ret, out) {
			t.Fatalf("%s returned a %s, declared %s", expr, typeName(out), joinTypes(s.ret, "|"))
		}
	})
}
