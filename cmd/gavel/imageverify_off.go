//go:build !verifyimages

package main

import "github.com/gavelpolicy/gavel/engine"

// imageVerifierOption is nil in the default build: verifyImages rules that
// check signatures and validate.manifests rules give "not configured"
// errors (build with -tags verifyimages to verify them).
func imageVerifierOption() engine.Option { return nil }
