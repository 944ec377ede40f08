package jmespath_test

import (
	"fmt"
	"time"

	"github.com/gavelpolicy/gavel/jmespath"
)

func ExampleNew() {
	intr, err := jmespath.New(
		jmespath.WithClock(func() time.Time { return time.Date(2023, 1, 12, 19, 5, 59, 0, time.UTC) }),
	)
	if err != nil {
		panic(err)
	}
	now, _ := intr.Search("time_now_utc()", nil)
	fmt.Println(now)
	// Output: 2023-01-12T19:05:59Z
}

func ExampleInterpreter_Compile() {
	intr, _ := jmespath.New()
	q, err := intr.Compile("request.object.spec.containers[].image")
	if err != nil {
		panic(err)
	}
	pod := map[string]any{"request": map[string]any{"object": map[string]any{"spec": map[string]any{
		"containers": []any{
			map[string]any{"name": "web", "image": "nginx:1.25"},
			map[string]any{"name": "sidecar", "image": "envoy:v1"},
		},
	}}}}
	images, _ := q.Search(pod)
	fmt.Println(q, "=>", images)

	_, err = intr.Compile("request.object.spec.containers[")
	fmt.Println(err)
	// Output:
	// request.object.spec.containers[].image => [nginx:1.25 envoy:v1]
	// invalid JMESPath expression "request.object.spec.containers[" (offset 31): SyntaxError: Expected TOKStar, received: TOKEOF
}

func ExampleInterpreter_Search() {
	intr, _ := jmespath.New()
	// Integers from an unstructured object are read as numbers.
	deployment := map[string]any{"spec": map[string]any{"replicas": int64(3)}}
	doubled, _ := intr.Search("multiply(spec.replicas, `2`)", deployment)
	fmt.Println(doubled)
	// Output: 6
}

func ExampleQuery_Search_customFunctions() {
	intr, _ := jmespath.New()
	for _, expr := range []string{
		"add('100Mi', '1Gi')",
		"sum(['2h', '50s', '90s'])",
		"divide('10Mi', '5Ki')",
		"image_normalize('nginx')",
		"semver_compare('1.8.6', '>1.0.0 <2.0.0')",
		"divide(`1`, `0`)",
	} {
		q, _ := intr.Compile(expr)
		v, err := q.Search(nil)
		if err != nil {
			fmt.Println(expr, "error:", err)
			continue
		}
		fmt.Printf("%s = %v\n", expr, v)
	}
	// Output:
	// add('100Mi', '1Gi') = 1124Mi
	// sum(['2h', '50s', '90s']) = 2h2m20s
	// divide('10Mi', '5Ki') = 2048
	// image_normalize('nginx') = docker.io/nginx:latest
	// semver_compare('1.8.6', '>1.0.0 <2.0.0') = true
	// divide(`1`, `0`) error: JMESPath function 'divide': Zero divisor passed
}

func ExampleInterpreter_Functions() {
	intr, _ := jmespath.New()
	for _, f := range intr.Functions() {
		if f.Name == "truncate" || f.Name == "time_diff" {
			fmt.Println(f.Signature())
		}
	}
	// Output:
	// time_diff(string, string) string
	// truncate(string, number) string
}
