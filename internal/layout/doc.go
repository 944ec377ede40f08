// Package layout holds the tests of the repository's layout rules, which
// no single package can check for itself:
//
//   - internal/ is below the engine: no package under the root module's
//     internal/ imports a public package of gavel but api (nor, in its
//     tests, anything else);
//   - the other modules (verify, cluster, the CLI, the cluster example,
//     e2e) use the library's public API only: none of their packages
//     imports the root module's internal/ packages;
//   - the public surface, the exported functions, methods and types of
//     the root module's packages, is recorded per package in
//     testdata/surface.golden, so that it grows only on purpose
//     (go test ./internal/layout -run TestPublicSurface -update rewrites
//     it), and its total may not exceed a budget (surfaceBudget) that
//     only goes down.
//
// The rules are checked on the source files, whatever their build tags.
package layout
