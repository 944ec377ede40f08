//go:build tools

package main

// The API types controller-gen reads: their module's version is the one
// go.mod requires.
import (
	_ "github.com/kyverno/api/api/policies.kyverno.io/v1"
	_ "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	_ "github.com/kyverno/api/api/policies.kyverno.io/v1beta1"
)
