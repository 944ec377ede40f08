package kmsproviders_test

import (
	"fmt"
	"slices"

	"github.com/sigstore/sigstore/pkg/signature/kms"

	// registers cosign's KMS providers for keys.kms
	_ "github.com/gavelpolicy/gavel/verify/kmsproviders"
)

// A program imports the package for its side effect; keys.kms references
// with these schemes then reach their KMS.
func Example() {
	schemes := kms.SupportedProviders()
	slices.Sort(schemes)
	fmt.Println(schemes)
	// Output: [awskms:// azurekms:// gcpkms:// hashivault://]
}
