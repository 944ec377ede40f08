package mutate_test

import (
	"fmt"

	"github.com/gavelpolicy/gavel/internal/mutate"
	"sigs.k8s.io/yaml"
)

func mustYAML(s string) map[string]any {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func ExampleCompileStrategicMerge() {
	patch, err := mutate.CompileStrategicMerge(mustYAML(`
spec:
  containers:
  # only containers whose image ends with :latest
  - (image): "*:latest"
    imagePullPolicy: IfNotPresent
`))
	if err != nil {
		panic(err)
	}
	pod := mustYAML(`
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: nginx
    image: nginx:latest
  - name: sidecar
    image: busybox:1.36
`)
	res, err := patch.Mutate(pod)
	if err != nil {
		panic(err)
	}
	b, _ := yaml.Marshal(res.Object["spec"])
	fmt.Print(string(b))
	// Output:
	// containers:
	// - image: nginx:latest
	//   imagePullPolicy: IfNotPresent
	//   name: nginx
	// - image: busybox:1.36
	//   name: sidecar
}

func ExampleStrategicMerge_Mutate() {
	patch, _ := mutate.CompileStrategicMerge(mustYAML(`
metadata:
  labels:
    (tier): frontend
    exposed: "true"
`))
	res, err := patch.Mutate(mustYAML(`
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  labels:
    tier: backend
`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Skipped, res.Message)
	fmt.Println(res.Condition)
	// Output:
	// true no patches applied
	// condition failed: resource value 'backend' does not match 'frontend' at path /
}

func ExampleCompileJSONPatch() {
	patch, err := mutate.CompileJSONPatch(`
- op: add
  path: /metadata/annotations/config.linkerd.io~1skip-outbound-ports
  value: "8200"
- op: replace
  path: /spec/replicas
  value: 3
`)
	if err != nil {
		panic(err)
	}
	res, err := patch.Mutate(mustYAML(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
`))
	if err != nil {
		panic(err)
	}
	b, _ := yaml.Marshal(res.Object)
	fmt.Print(string(b))
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   annotations:
	//     config.linkerd.io/skip-outbound-ports: "8200"
	//   name: web
	// spec:
	//   replicas: 3
}

func ExampleDiffJSON() {
	original := mustYAML(`
metadata:
  name: web
spec:
  containers:
  - name: app
`)
	modified := mustYAML(`
metadata:
  name: web
  labels:
    a/b: x
spec:
  containers:
  - name: sidecar
  - name: app
`)
	patch, err := mutate.DiffJSON(original, modified)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(patch))
	// Output:
	// [{"op":"add","path":"/metadata/labels","value":{"a/b":"x"}},{"op":"add","path":"/spec/containers/0","value":{"name":"sidecar"}}]
}

// ExampleCanonicalMemo checks a decoded resource once and merges several
// patches into it with the Memo that check returns.
func ExampleCanonicalMemo() {
	pod := mustYAML(`
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  volumes:
  - name: data
    hostPath:
      path: /data
`)
	canonical, memo := mutate.CanonicalMemo(pod)
	fmt.Println("canonical:", canonical)
	for _, p := range []string{
		"metadata:\n  annotations:\n    +(safe-to-evict): \"true\"\nspec:\n  volumes:\n  - <(emptyDir): {}\n",
		"metadata:\n  annotations:\n    +(safe-to-evict): \"true\"\nspec:\n  volumes:\n  - hostPath:\n      <(path): \"*\"\n",
	} {
		patch, err := mutate.CompileStrategicMerge(mustYAML(p))
		if err != nil {
			panic(err)
		}
		res, err := patch.MutateCanonical(pod, &memo)
		if err != nil {
			panic(err)
		}
		ann, _ := res.Object["metadata"].(map[string]any)["annotations"].(map[string]any)
		fmt.Println(res.Skipped, ann)
	}
	// Output:
	// canonical: true
	// true map[]
	// false map[safe-to-evict:true]
}
