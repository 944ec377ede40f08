//go:build gavel_chainsaw_patch

// This file is not part of this module: build.sh copies it into the vendored
// github.com/kyverno/chainsaw/pkg/runner/internal and builds with the tag
// gavel_chainsaw_patch. chainsaw v0.2.12 (and v0.2.14, the newest release)
// drives Go's testing package through testing.MainStart with a TestDeps of
// its own, written before the testing package's unexported testDeps
// interface gained ModulePath (Go 1.26 requires it): without this method
// chainsaw does not compile. Go's testing package uses the module path only
// to name the directories of test artifacts, which chainsaw does not make.
package internal

// ModulePath is the path of the module under test: chainsaw tests no Go
// module.
func (*TestDeps) ModulePath() string { return "" }
