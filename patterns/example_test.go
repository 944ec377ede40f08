package patterns_test

import (
	"encoding/json"
	"fmt"

	"github.com/gavelpolicy/gavel/patterns"
)

func decode(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

// Limits must be set, and memory at most 1Gi.
func ExamplePattern_Match() {
	p, err := patterns.Compile(decode(`{"spec": {"containers": [{
		"name": "*",
		"resources": {"limits": {"memory": "<=1Gi", "cpu": "?*"}}}]}}`))
	if err != nil {
		panic(err)
	}
	for _, pod := range []string{
		`{"spec": {"containers": [{"name": "web", "resources": {"limits": {"memory": "512Mi", "cpu": "1"}}}]}}`,
		`{"spec": {"containers": [{"name": "web", "resources": {"limits": {"memory": "2Gi", "cpu": "1"}}}]}}`,
	} {
		if r := p.Match(decode(pod)); r.Matched {
			fmt.Println("matched")
		} else {
			fmt.Println(r.Path)
			fmt.Println(r.Reason)
		}
	}
	// Output:
	// matched
	// /spec/containers/0/resources/limits/memory/
	// resource value '2Gi' does not match '<=1Gi' at path /spec/containers/0/resources/limits/memory/
}

// A condition anchor makes the pattern apply only to the elements it
// selects: an image with the latest tag (or none) must be pulled always.
func ExamplePattern_Match_anchors() {
	p, err := patterns.Compile(decode(`{"spec": {"containers": [
		{"(image)": "*:latest | !*:*", "imagePullPolicy": "Always"}]}}`))
	if err != nil {
		panic(err)
	}
	for _, pod := range []string{
		`{"spec": {"containers": [{"image": "nginx:1.25"}]}}`,
		`{"spec": {"containers": [{"image": "nginx", "imagePullPolicy": "Always"}]}}`,
		`{"spec": {"containers": [{"image": "nginx:latest"}]}}`,
	} {
		r := p.Match(decode(pod))
		fmt.Printf("matched=%v skipped=%v path=%q\n", r.Matched, r.Skipped, r.Path)
	}
	// Output:
	// matched=false skipped=true path=""
	// matched=true skipped=false path=""
	// matched=false skipped=false path="/spec/containers/0/imagePullPolicy/"
}

// A scalar pattern checks one value with upstream's operators.
func ExampleCompile_operators() {
	for _, c := range []struct{ pattern, value any }{
		{"128Mi-512Mi | >=1Gi & <=2Gi", "1536Mi"},
		{">1m", "90s"},
		{"!*:latest", "registry.io/app:v1"},
		{"1!-2", 3.0},
		{8080, "8080"},
	} {
		p, err := patterns.Compile(c.pattern)
		if err != nil {
			panic(err)
		}
		fmt.Println(c.pattern, c.value, p.Match(c.value).Matched)
	}
	// Output:
	// 128Mi-512Mi | >=1Gi & <=2Gi 1536Mi true
	// >1m 90s true
	// !*:latest registry.io/app:v1 true
	// 1!-2 3 true
	// 8080 8080 true
}

func ExampleWildcard() {
	for _, c := range [][2]string{
		{"require-*", "require-labels"},
		{"require-*", "disallow-latest"},
		{"kube-?ublic", "kube-public"},
		{"*", ""},
		{"[ab]", "a"}, // no character classes
	} {
		fmt.Println(c[0], c[1], patterns.Wildcard(c[0], c[1]))
	}
	// Output:
	// require-* require-labels true
	// require-* disallow-latest false
	// kube-?ublic kube-public true
	// *  true
	// [ab] a false
}
