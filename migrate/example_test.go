package migrate_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/migrate"
)

const policy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team-label
spec:
  validationFailureAction: Enforce
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds:
          - Pod
    validate:
      message: "The label team is required."
      pattern:
        metadata:
          labels:
            team: "?*"
`

const pods = `
apiVersion: v1
kind: Pod
metadata:
  name: labelled
  namespace: default
  labels:
    team: payments
spec:
  containers:
  - name: app
    image: nginx:1.25
---
apiVersion: v1
kind: Pod
metadata:
  name: unlabelled
  namespace: default
spec:
  containers:
  - name: app
    image: nginx:1.25
`

// Convert a ClusterPolicy, write its ValidatingPolicy and prove, on two
// Pods, that both decide the same.
func Example() {
	docs, err := api.ReadDocuments(strings.NewReader(policy), "policy.yaml")
	if err != nil {
		panic(err)
	}
	conv, err := migrate.Convert(docs[0])
	if err != nil {
		panic(err)
	}
	for _, r := range conv.Rules {
		fmt.Printf("%s %s: converted into %s\n", r.Type, r.Rule, r.Policy)
	}
	if err := conv.WriteYAML(os.Stdout); err != nil {
		panic(err)
	}

	resources, err := api.ReadDocuments(strings.NewReader(pods), "pods.yaml")
	if err != nil {
		panic(err)
	}
	var objs []map[string]any
	for _, d := range resources {
		objs = append(objs, d.Object)
	}
	v, err := migrate.Verify(context.Background(), []*migrate.Conversion{conv}, objs)
	if err != nil {
		panic(err)
	}
	for _, p := range v.Policies {
		fmt.Printf("%s: %d evaluations, %d differences\n", p.Policy, p.Evaluations, len(p.Differences))
	}
	// Output:
	// validate check-team: converted into require-team-label
	// # converted from ClusterPolicy require-team-label by gavel migrate
	// # rules: check-team
	// apiVersion: policies.kyverno.io/v1
	// kind: ValidatingPolicy
	// metadata:
	//   name: require-team-label
	// spec:
	//   # the kinds and operations the rules match
	//   matchConstraints:
	//     resourceRules:
	//       - apiGroups:
	//           - ""
	//         apiVersions:
	//           - v1
	//         operations:
	//           - CREATE
	//           - UPDATE
	//         resources:
	//           - pods
	//   # validationFailureAction Enforce
	//   validationActions:
	//     - Deny
	//   validations:
	//     - expression: |-
	//         has(object.metadata.labels) &&
	//         has(object.metadata.labels.team) &&
	//         object.metadata.labels.team != ''
	//       message: The label team is required.
	// ClusterPolicy require-team-label: 2 evaluations, 0 differences
}
