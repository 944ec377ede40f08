package variables

import "errors"

// evalState is the per-call state of one Render or Substitute.
type evalState struct {
	ev  Evaluator
	cfg evalConfig

	prefix      string
	prefixKnown bool
}

func newEvalState(ev Evaluator, cfg evalConfig) evalState {
	st := evalState{ev: ev, cfg: cfg}
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
	return st.ev.Lookup(expr)
}

// resolve evaluates expr for the string at path.
func (st *evalState) resolve(expr string, path string) (any, error) {
	v, found, err := st.find(expr)
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
