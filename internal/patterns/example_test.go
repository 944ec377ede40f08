package patterns_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gavelpolicy/gavel/internal/patterns"
)

func decode(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	return v
}

func ExamplePattern_Match() {
	p, err := patterns.Compile(decode(`{
		"spec": {"containers": [{"name": "*", "resources": {
			"requests": {"memory": "?*", "cpu": "?*"},
			"limits": {"memory": "<=1Gi"}}}]}}`))
	if err != nil {
		panic(err)
	}
	pod := decode(`{"spec": {"containers": [{"name": "web", "resources": {
		"requests": {"memory": "256Mi", "cpu": "100m"},
		"limits": {"memory": "2Gi"}}}]}}`)

	var pe *patterns.Error
	if err := p.Match(pod); errors.As(err, &pe) {
		fmt.Println(pe.Status(), pe.Path)
		fmt.Println(pe)
	}
	// Output:
	// fail /spec/containers/0/resources/limits/memory/
	// resource value '2Gi' does not match '<=1Gi' at path /spec/containers/0/resources/limits/memory/
}

func ExamplePattern_Match_anchors() {
	// If an image uses the latest tag (or no tag), it must be pulled always.
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
		var pe *patterns.Error
		if err := p.Match(decode(pod)); errors.As(err, &pe) {
			fmt.Println(pe.Status()+":", pe)
		} else {
			fmt.Println("pass")
		}
	}
	// Output:
	// skip: conditional anchor mismatch: resource value 'nginx:1.25' does not match '*:latest | !*:*' at path /spec/containers/0/image/
	// pass
	// fail: resource value '<nil>' does not match 'Always' at path /spec/containers/0/imagePullPolicy/
}

func ExampleMatchValue() {
	fmt.Println(patterns.MatchValue("1536Mi", "128Mi-512Mi | >=1Gi & <=2Gi"))
	fmt.Println(patterns.MatchValue("90s", ">1m"))
	fmt.Println(patterns.MatchValue(3.0, "!1-2"))
	fmt.Println(patterns.MatchValue(3.0, "1!-2"))
	fmt.Println(patterns.MatchValue("registry.io/app:v1", "!*:latest"))
	fmt.Println(patterns.MatchValue(nil, false))
	fmt.Println(patterns.MatchValue("8080", 8080))
	// Output:
	// true
	// true
	// true
	// true
	// true
	// false
	// true
}

func ExampleParseAnchor() {
	for _, key := range []string{"=(hostPath)", "X(hostNetwork)", "<(image)", "name"} {
		a, ok := patterns.ParseAnchor(key)
		fmt.Printf("%q anchor=%v type=%q key=%q\n", key, ok, a.Type, a.Key)
	}
	// Output:
	// "=(hostPath)" anchor=true type="=" key="hostPath"
	// "X(hostNetwork)" anchor=true type="X" key="hostNetwork"
	// "<(image)" anchor=true type="<" key="image"
	// "name" anchor=false type="" key=""
}
