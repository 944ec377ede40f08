// Package kmsproviders registers cosign's KMS providers with sigstore's
// KMS registry, for verifyImages attestors whose keys.kms names a key in
// AWS KMS (awskms://), Google Cloud KMS (gcpkms://), Azure Key Vault
// (azurekms://) or HashiCorp Vault (hashivault://). Import it for its
// side effect in the program that builds a verify.Verifier:
//
//	import _ "github.com/gavelpolicy/gavel/verify/kmsproviders"
//
// Package verify links none of these providers: each brings its cloud's
// SDK (tens of megabytes), and a program that verifies with inline keys,
// Secrets or keyless certificates does not need them. A program may
// register only the providers it wants by importing sigstore's provider
// packages (github.com/sigstore/sigstore/pkg/signature/kms/aws and so on)
// itself, or its own with kms.AddProvider.
//
// The providers read their credentials as cosign does: from the process
// environment and the clouds' usual configuration files (AWS_REGION,
// GOOGLE_APPLICATION_CREDENTIALS, AZURE_*, VAULT_ADDR and VAULT_TOKEN),
// which is the program's choice, not the library's.
package kmsproviders

import (
	// each registers its scheme with sigstore's KMS registry in init
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/azure"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
)
