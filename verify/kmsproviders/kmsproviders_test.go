package kmsproviders_test

import (
	"slices"
	"testing"

	"github.com/sigstore/sigstore/pkg/signature/kms"

	_ "github.com/gavelpolicy/gavel/verify/kmsproviders"
)

// TestRegistered: importing the package registers cosign's four schemes.
func TestRegistered(t *testing.T) {
	got := kms.SupportedProviders()
	for _, scheme := range []string{"awskms://", "gcpkms://", "azurekms://", "hashivault://"} {
		if !slices.Contains(got, scheme) {
			t.Errorf("%s not registered (registered: %v)", scheme, got)
		}
	}
}
