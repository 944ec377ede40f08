package mutate

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors wrapped by *Error; match them with errors.Is.
var (
	// ErrUnsupportedValue reports a value that is not JSON-like (a struct, a
	// channel, NaN, a map with non-string keys...).
	ErrUnsupportedValue = errors.New("unsupported value")
	// ErrInvalidPatch reports a patch document that cannot be compiled.
	ErrInvalidPatch = errors.New("invalid patch")
	// ErrKindMismatch reports a merge between values of different kinds, for
	// example a map in the patch where the resource holds a list.
	ErrKindMismatch = errors.New("wrong node kind")
	// ErrDirective reports an unknown "$patch" directive value.
	ErrDirective = errors.New("unknown patch strategy")
	// ErrPreprocess reports a patch that upstream rejects while processing its
	// anchors (for example a list in the patch where the resource has a map).
	ErrPreprocess = errors.New("failed to preprocess patch")
	// ErrApply reports a failure while applying a patch to a resource.
	ErrApply = errors.New("failed to apply patch")
)

// Error is an error raised while compiling or applying a patch. Path is the
// location in the patch or resource where it happened, written as
// "spec.containers[0].image"; it is empty for errors about the whole
// document.
type Error struct {
	Path string
	Err  error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Path == "" {
		return "mutate: " + e.Err.Error()
	}
	return "mutate: " + e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ConditionError reports an anchor condition of a strategic merge patch that
// does not hold for the resource. Upstream turns the patch into an empty
// patch in that case, so the rule is reported as skipped; Mutate exposes the
// failed condition in [Result.Condition].
type ConditionError struct {
	// Global is true for a global anchor "<(key)", false for a conditional
	// anchor "(key)".
	Global bool
	// Path locates the anchor in the patch.
	Path string
	// Reason is the upstream-compatible description of the mismatch.
	Reason string
}

// Error implements error with upstream's wording.
func (e *ConditionError) Error() string {
	if e.Global {
		return "global condition failed: " + e.Reason
	}
	return "condition failed: " + e.Reason
}

// segment is one step of a path: a map key, a list index or a list element
// selected by its merge keys.
type segment struct {
	kind   uint8 // segKey, segIndex or segSelect
	key    string
	index  int
	keys   []string
	values []string
}

const (
	segKey uint8 = iota
	segIndex
	segSelect
)

// path is a JSON path used for error messages. Extending a path appends to
// the parent's backing array, so building paths costs nothing on the happy
// path; a path must therefore be turned into a string (errAt) before a
// sibling is walked.
type path []segment

func (p path) key(k string) path { return append(p, segment{kind: segKey, key: k}) }

func (p path) index(i int) path { return append(p, segment{kind: segIndex, index: i}) }

func (p path) sel(keys, values []string) path {
	return append(p, segment{kind: segSelect, keys: keys, values: values})
}

func (p path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s.kind {
		case segIndex:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case segSelect:
			b.WriteString("[")
			for i, k := range s.keys {
				if i > 0 {
					b.WriteString(",")
				}
				v := ""
				if i < len(s.values) {
					v = s.values[i]
				}
				b.WriteString(k + "=" + v)
			}
			b.WriteString("]")
		default:
			if s.key == "" || strings.ContainsAny(s.key, ".[]\" ") {
				b.WriteString("[" + strconv.Quote(s.key) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

func errAt(p path, err error) error {
	return &Error{Path: p.String(), Err: err}
}

// rootPath returns an empty path with room for deep documents, so that
// extending it does not allocate.
func rootPath() path { return make(path, 0, 32) }
