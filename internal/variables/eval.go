package variables

import "errors"

// evalState is the per-call state of one Render or Substitute.
type evalState struct {
	ev       Evaluator
	lookup   LookupEvaluator
	prepared PreparedEvaluator
	cfg      evalConfig

	prefix      string
	prefixKnown bool
}

func newEvalState(ev Evaluator, cfg evalConfig) evalState {
	st := evalState{ev: ev, cfg: cfg}
	// one type assertion for an evaluator that has every method
	if pe, ok := ev.(PreparedEvaluator); ok {
		st.lookup, st.prepared = pe, pe
	} else if le, ok := ev.(LookupEvaluator); ok {
		st.lookup = le
	}
	if cfg.prefixSet {
		st.prefix, st.prefixKnown = cfg.currentPrefix, true
	}
	return st
}

// currentPrefix returns the prefix for `{{ @ }}`: "target" when the
// expression "target" resolves, otherwise "request.object" (upstream's rule).
func (st *evalState) currentPrefix() string {
	if !st.prefixKnown {
		st.prefix, st.prefixKnown = prefixRequestObject, true
		if _, found, err := st.find(prefixTarget); err == nil && found {
			st.prefix = prefixTarget
		}
	}
	return st.prefix
}

func (st *evalState) find(expr string) (any, bool, error) {
	if st.lookup != nil {
		return st.lookup.Lookup(expr)
	}
	v, err := st.ev.Evaluate(expr)
	return v, v != nil, err
}

// resolve evaluates expr for the string at path; prepared, when not nil,
// is what the compile-time preparation returned for expr.
func (st *evalState) resolve(expr string, prepared any, path string) (any, error) {
	var v any
	var found bool
	var err error
	if prepared != nil && st.prepared != nil {
		v, found, err = st.prepared.LookupPrepared(expr, prepared)
	} else {
		v, found, err = st.find(expr)
	}
	if err != nil {
		if st.cfg.unresolvedAsNil && errors.Is(err, ErrNotFound) {
			return nil, nil
		}
		return nil, &ResolveError{Variable: expr, Path: path, Err: err}
	}
	if !found {
		if st.cfg.unresolvedAsNil {
			return nil, nil
		}
		return nil, &UnresolvedError{Variable: expr, Path: path}
	}
	return v, nil
}
