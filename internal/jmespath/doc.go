// Package jmespath is the implementation of gavel's JMESPath layer, the
// JMESPath language of github.com/jmespath-community/go-jmespath with
// every custom function of Kyverno's policy language. The public package
// github.com/gavelpolicy/gavel/jmespath is its facade for embedders (see
// its documentation for the language, the options and the errors); the
// engine uses this package directly for what only its per-request fast
// path needs:
//
//   - Canonical converts a tree once to the form queries evaluate on
//     (float64 numbers, map[string]any and []any containers);
//   - Query.SearchCanonical evaluates on such a tree without the
//     conversion walk Query.Search makes at each call, which dominates
//     small queries on large documents;
//   - Query.Pure and Query.Memoizable tell whether a query's results may
//     be shared between evaluations on the same data, and whether that
//     pays.
package jmespath
