package api_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// ExampleDocumentReader reads a stream one document at a time, decoding
// only the documents that may be PolicyExceptions.
func ExampleDocumentReader() {
	stream := `apiVersion: v1
kind: Pod
metadata:
  name: web
---
# a comment only: not a document
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata:
  name: allow-web
`
	dr := api.NewDocumentReader(strings.NewReader(stream), "stream.yaml")
	for {
		raw, err := dr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		if !raw.MayBeKind("PolicyException") {
			fmt.Printf("%s[%d]: skipped\n", raw.Source, raw.Index)
			continue
		}
		docs, err := raw.Decode()
		if err != nil {
			panic(err)
		}
		for _, d := range docs {
			fmt.Println(d)
		}
	}
	// Output:
	// stream.yaml[0]: skipped
	// stream.yaml[1] PolicyException/allow-web
}

// DecodePolicy reads every policy kind into its Go type; a document of a
// policy group with a kind gavel does not know is an error.
func ExampleDecodePolicy() {
	docs, err := api.ReadDocuments(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata:
  name: replicas
  namespace: shop
spec:
  validations:
  - expression: "object.spec.replicas <= 5"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicyy
metadata:
  name: typo
`), "policies.yaml")
	if err != nil {
		panic(err)
	}
	p, err := api.DecodePolicy(docs[0])
	if err != nil {
		panic(err)
	}
	vp := p.(*api.ValidatingPolicy)
	fmt.Println(api.KindOf(vp), vp.GetNamespace()+"/"+vp.GetName(), api.IsNamespaced(vp), vp.Spec.Validations[0].Expression)
	fmt.Println(api.DecodeObject(docs[1]))
	// Output:
	// NamespacedValidatingPolicy shop/replicas true object.spec.replicas <= 5
	// <nil> policies.yaml[1]: unknown kind "ClusterPolicyy" of apiVersion "kyverno.io/v1"
}

func ExampleParseKindSelector() {
	for _, s := range []string{"Pod", "apps/v1/Deployment", "Pod/exec", "*/scale", "v1/Pod.eviction", "*/*"} {
		g, v, k, sub := api.ParseKindSelector(s)
		fmt.Printf("%-20s group=%s version=%s kind=%s subresource=%q\n", s, g, v, k, sub)
	}
	// Output:
	// Pod                  group=* version=* kind=Pod subresource=""
	// apps/v1/Deployment   group=apps version=v1 kind=Deployment subresource=""
	// Pod/exec             group=* version=* kind=Pod subresource="exec"
	// */scale              group=* version=* kind=* subresource="scale"
	// v1/Pod.eviction      group=* version=v1 kind=Pod subresource="eviction"
	// */*                  group=* version=* kind=* subresource="*"
}

// ExampleDecodeObject sorts the documents of a stream by what they are.
func ExampleDecodeObject() {
	docs, err := api.ReadDocuments(strings.NewReader(`apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec: {rules: []}
---
apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: allow-tools, namespace: ops}
spec: {exceptions: [], match: {any: []}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicys
metadata: {name: typo}
`), "mixed.yaml")
	if err != nil {
		panic(err)
	}
	for _, d := range docs {
		obj, err := api.DecodeObject(d)
		switch o := obj.(type) {
		case *api.PolicyException: // before PolicyObject: an exception has its methods
			fmt.Println("exception", o.Namespace+"/"+o.Name)
		case *api.CELPolicyException:
			fmt.Println("CEL exception", o.Name)
		case api.PolicyObject:
			fmt.Println("policy", api.KindOf(o), o.GetName())
		default:
			if err != nil {
				fmt.Println("error:", err)
				continue
			}
			fmt.Println("resource", d.Kind(), d.Name())
		}
	}
	// Output:
	// policy ClusterPolicy require-team
	// exception ops/allow-tools
	// resource ConfigMap settings
	// error: mixed.yaml[3]: unknown kind "ValidatingPolicys" of apiVersion "policies.kyverno.io/v1"
}
