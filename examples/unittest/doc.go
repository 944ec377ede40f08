// Package unittest shows how a policy author tests their own policies with
// go test and gavel, in two styles:
//
//   - table tests in Go (policies_test.go): compile the policy folder once
//     (sync.OnceValues) for the whole package, then run tables of resources
//     and check the status of each rule (pass, fail, skip; a rule that does
//     not apply is absent), whether the request would be blocked, the
//     messages and the mutated object;
//   - an upstream kyverno-test.yaml (testdata/kyverno-test.yaml), run with
//     the policytest package so that the same file also works with
//     "gavel test" and the upstream kyverno CLI.
//
// Copy the folder next to your policies and adapt the tables.
package unittest
