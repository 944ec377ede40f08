// Package jmespathx gives gavel's engine what package jmespath keeps
// unexported because only the engine's per-request fast path needs it:
// evaluating a query on data already in canonical form, and what a query
// is known to be. Package jmespath sets these functions when it is
// initialised; q is always a *jmespath.Query (an import of jmespath here
// would be a cycle).
package jmespathx

var (
	// SearchCanonical evaluates q on data in canonical form (float64
	// numbers, map[string]any and []any containers, as Canonical returns
	// them) without the conversion walk Query.Search makes of data at
	// each call, which dominates small queries on large documents.
	SearchCanonical func(q, data any) (any, error)
	// Pure reports whether q's result depends only on the data: it calls
	// no function that reads the clock or the source of randomness, so
	// that two evaluations on the same data may share one result.
	Pure func(q any) bool
	// Memoizable reports whether remembering q's results pays: q is pure
	// and not a plain field path (a.b[0]."c"), which SearchCanonical
	// evaluates by a direct walk without allocating.
	Memoizable func(q any) bool
	// Canonical returns data in canonical form: every Go number becomes a
	// float64, typed slices and maps []any and map[string]any; data is not
	// modified, and a tree already canonical is returned as it is.
	Canonical func(data any) (any, error)
)
