package engine

import (
	"sync"
	"sync/atomic"

	"github.com/gavelpolicy/gavel/internal/match"
)

// kindKey is what the kind index is keyed by: the group, version, kind and
// subresource a request is matched with.
type kindKey struct {
	group, version, kind, sub string
}

func keyOf(r *match.Resource) kindKey {
	return kindKey{r.Group, r.Version, r.Kind, r.Subresource}
}

// kindCands says which rules of each policy of a set may match one kind
// (rules from off[i] on are those of policy i). Every match filter of a rule
// names kinds (Compile requires it), so a rule none of whose kind
// selectors selects the request's kind cannot match it, whatever the rest
// of its match block, and never reaches its exclude block: it is skipped
// without being evaluated, with the same outcome (no result).
type kindCands struct {
	key kindKey
	// next[off[i]+j] is the first rule of policy i, from rule j on, that
	// may match the kind (the number of its rules when none): the rules in
	// between are jumped over
	next []int32
	off  []int
}

// policyCands is the part of a kindCands about one policy.
type policyCands struct {
	key  kindKey
	next []int32 // nil: no index, every rule is evaluated
}

// policy returns the candidates among the rules of the set's policy i.
func (c *kindCands) policy(i int) policyCands {
	return policyCands{key: c.key, next: c.next[c.off[i]:c.off[i+1]]}
}

// maxKindEntries bounds the kinds a set remembers; past it, candidates are
// computed for each request (a set sees a handful of kinds in practice).
const maxKindEntries = 512

// kindIndex caches kindCands by kind for a PolicySet.
type kindIndex struct {
	m sync.Map // kindKey -> *kindCands
	n atomic.Int32
}

// candidates returns the rules of each policy of the set that may match
// the kind of res.
func (s *PolicySet) candidates(res *match.Resource) *kindCands {
	k := keyOf(res)
	if v, ok := s.kinds.m.Load(k); ok {
		return v.(*kindCands)
	}
	c := s.buildCandidates(k)
	if s.kinds.n.Load() < maxKindEntries {
		if _, loaded := s.kinds.m.LoadOrStore(k, c); !loaded {
			s.kinds.n.Add(1)
		}
	}
	return c
}

func (s *PolicySet) buildCandidates(k kindKey) *kindCands {
	c := &kindCands{key: k, off: make([]int, len(s.policies)+1)}
	n := 0
	for i, p := range s.policies {
		c.off[i] = n
		n += len(p.rules)
	}
	c.off[len(s.policies)] = n
	c.next = make([]int32, n)
	for i, p := range s.policies {
		next := c.next[c.off[i]:c.off[i+1]]
		following := int32(len(p.rules))
		for j := len(p.rules) - 1; j >= 0; j-- {
			if p.rules[j].mayMatchKind(k) {
				following = int32(j)
			}
			next[j] = following
		}
	}
	return c
}

// mayMatchKind reports whether one of the rule's kind selectors selects
// the kind (see kindCands). A rule without kinds is always a candidate.
func (r *rule) mayMatchKind(k kindKey) bool {
	if len(r.kinds) == 0 {
		return true
	}
	for _, ks := range r.kinds {
		if ks.Matches(k.group, k.version, k.kind, k.sub) {
			return true
		}
	}
	return false
}
