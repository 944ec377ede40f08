package cel_test

import (
	"context"
	"fmt"
	"reflect"

	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apiserver/pkg/cel/mutation"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Mutations of a MutatingAdmissionPolicy: without WithPatchTypes only the
// expressions of the ApplyConfiguration and JSONPatch kinds see the Object
// and JSONPatch types, as in the API server. SetObject hands the next
// mutation the object the previous one left; variables keep the value of
// their first use.
func ExampleWithPatchTypes() {
	env, err := cel.NewEnv()
	if err != nil {
		panic(err)
	}
	c := env.NewCompiler(false)
	if _, err := c.AddVariable("patched", "Object{}"); err != nil {
		fmt.Println("variable:", err != nil)
	}
	if _, err := c.AddVariable("replicas", "object.spec.replicas"); err != nil {
		panic(err)
	}
	apply, err := c.Compile(`Object{spec: Object.spec{replicas: variables.replicas + 1}}`, cel.ApplyConfiguration)
	if err != nil {
		panic(err)
	}
	patch, err := c.Compile(`[JSONPatch{op: "add", path: "/metadata/labels", value: {"replicas": string(object.spec.replicas)}}]`, cel.JSONPatch)
	if err != nil {
		panic(err)
	}
	fmt.Println(apply.OutputType(), patch.OutputType())

	deploy := map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 2.0}}
	ev := c.NewEvaluation(context.Background(), &cel.Input{Object: deploy}, nil)
	v, err := ev.Eval(apply)
	if err != nil {
		panic(err)
	}
	obj, _ := v.ConvertToNative(reflect.TypeOf(map[string]any{}))
	fmt.Println(obj)
	// the merge is the caller's: here, the next mutation sees 5 replicas
	ev.SetObject(map[string]any{"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"replicas": 5.0}})
	v, err = ev.Eval(patch)
	if err != nil {
		panic(err)
	}
	for _, op := range v.Value().([]ref.Val) {
		jp := op.Value().(*mutation.JSONPatchVal)
		fmt.Println(jp.Op, jp.Path, jp.Val.Value())
	}
	// Output:
	// variable: true
	// Object list(JSONPatch)
	// map[spec:map[replicas:3]]
	// add /metadata/labels map[replicas:5]
}
