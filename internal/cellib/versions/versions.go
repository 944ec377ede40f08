// Package versions holds the versions of Kyverno's CEL libraries: a
// library built for a version declares the functions of that version.
package versions

import "k8s.io/apimachinery/pkg/util/version"

// Latest is the version gavel follows: upstream Kyverno 1.18, whose
// libraries declare camelCase names (resource.get, http.post, ...) and
// prefixed ones (hash.sha256, user.parseServiceAccount, ...) next to the
// earlier PascalCase and unprefixed names.
func Latest() *version.Version { return version.MajorMinor(1, 18) }

// CamelCase is the version that introduced the camelCase and prefixed
// names.
func CamelCase() *version.Version { return version.MajorMinor(1, 18) }

// HasCamelCase tells whether libraries built for v declare the camelCase
// and prefixed names.
func HasCamelCase(v *version.Version) bool { return v.AtLeast(CamelCase()) }
