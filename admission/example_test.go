package admission_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/gavelpolicy/gavel/admission"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// A validating webhook's answer to an AdmissionReview: decode the review,
// let Validate decide, encode the review with the response.
func ExampleValidate() {
	set := exampleSet(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "label 'team' is required"
      pattern:
        metadata:
          labels:
            team: "?*"
`)
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
		"uid":"705ab4f5","operation":"CREATE","namespace":"shop",
		"kind":{"group":"","version":"v1","kind":"Pod"},
		"resource":{"group":"","version":"v1","resource":"pods"},
		"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"}}}}`

	var review admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(body), &review); err != nil {
		panic(err)
	}
	review.Response, _ = admission.Validate(context.Background(), set, review.Request)
	review.Request = nil
	out, _ := json.Marshal(&review)

	fmt.Println(string(out))
	// Output:
	// {"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"705ab4f5","allowed":false,"status":{"metadata":{},"status":"Failure","message":"\n\nresource Pod/shop/web was blocked due to the following policies \n\nrequire-team:\n  check-team: 'validation error: label ''team'' is required. rule check-team failed at path /metadata/labels/'\n"}}}
}

// A mutating webhook answers with the JSONPatch of the mutations.
func ExampleMutate() {
	set := exampleSet(`
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: add-env
spec:
  rules:
  - name: env-label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(env): dev
`)
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
		"uid":"9e1c","operation":"CREATE","namespace":"shop",
		"kind":{"group":"","version":"v1","kind":"Pod"},
		"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"team":"a"}}}}}`), &review); err != nil {
		panic(err)
	}
	resp, _ := admission.Mutate(context.Background(), set, review.Request)
	fmt.Println(resp.Allowed, *resp.PatchType, string(resp.Patch))
	// Output:
	// true JSONPatch [{"op":"add","path":"/metadata/labels/env","value":"dev"}]
}

func exampleSet(policies string) *engine.PolicySet {
	s := &loader.Set{}
	if err := s.Read(strings.NewReader(policies), "policies.yaml"); err != nil {
		panic(err)
	}
	eng, err := engine.New()
	if err != nil {
		panic(err)
	}
	set, err := eng.Compile(s.Policies...)
	if err != nil {
		panic(err)
	}
	return set
}
