package registryauth_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gavelpolicy/gavel/verify"
	"github.com/gavelpolicy/gavel/verify/registryauth"
)

// The Verifier of a program that serves upstream's
// imageRegistryCredentials.providers.
func ExampleKeychains() {
	kcs := registryauth.Keychains()
	v := verify.New(verify.WithCredentialProviders(kcs))
	fmt.Println(v != nil, slices.Sorted(maps.Keys(kcs)))
	// Output: true [amazon azure default github google]
}
