package engine

import (
	"context"
	"fmt"
	"github.com/gavelpolicy/gavel/internal/polex"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/images"
	jpcore "github.com/gavelpolicy/gavel/internal/jmespath"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/mutate"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
)

// reqState is the per-request state shared by every rule of one call.
type reqState struct {
	e   *Engine
	ctx context.Context
	req *Request
	op  api.AdmissionOperation

	obj  map[string]any // the resource rules look at (old object for DELETE)
	gvk  schema.GroupVersionKind
	base map[string]any // request, serviceAccount*, images, variables
	// object and oldObject are the request's objects in canonical form
	object, oldObject map[string]any

	matchRes match.Resource
	matchReq match.Request

	needsImages bool
	// pod is rs.obj decoded for Pod Security checks (podOf is the object it
	// was decoded from).
	pod          *podsecurity.Decoded
	podOf        map[string]any
	podErr       error
	nsLabels     map[string]string
	nsLabelsDone bool
	nsLabelsErr  error

	// gen counts the rebuilds of base; memo holds the results of pure
	// queries on base for generation gen (rules without context entries
	// share them: "request.operation || 'BACKGROUND'" runs once).
	gen  int
	memo queryMemo
	// condMemo holds the outcomes of preconditions blocks for generation
	// gen (see rulePreconditions).
	condMemo []condMemo
	condBuf  [4]condMemo

	// excSet is the host's exceptions, read once (see exceptions).
	excSet  *polex.Set
	excErr  error
	excDone bool

	// spare is a scope released by the last rule, reused by the next;
	// spareChildren are element scopes of validate foreach loops that
	// ended (see recycledChild).
	spare         *scope
	spareChildren []*scope

	// celIn is the request's data for CEL rules (see celData).
	celIn *celInput
	// kinds is the request's data for CEL policy kinds (see kindData).
	kinds *kindData

	// results backs the rule results of the request's policies (see
	// runPolicy).
	results []RuleResult
	// canon caches mutate.CanonicalTree(obj): 0 unknown, 1 yes, -1 no
	canon int8
	// mergeMemo remembers what strategic merges learn about the object
	// (it starts over when given another one)
	mergeMemo mutate.Memo
	// verified holds the outcomes of verifyImages rules by image, for
	// the verify-images annotation (see noteImage).
	verified map[string]string
	// images is what the request's ImageValidatingPolicies share
	// (imagepolicyhost.go).
	images *imagePolicyState
	// deferSeq numbers the context entries registered (see loadContext),
	// which deferSlab holds; listSlab backs the scopes' lists of them.
	deferSeq  int
	deferSlab []deferredEntry
	listSlab  []*deferredEntry
}

// canonical reports mutate.CanonicalTree(m), remembered for the request's
// object (several patches may apply to it).
func (rs *reqState) canonical(m map[string]any) bool {
	if !sameMap(m, rs.obj) {
		return mutate.CanonicalTree(m)
	}
	if rs.canon == 0 {
		rs.canon = -1
		if mutate.CanonicalTree(m) {
			rs.canon = 1
		}
	}
	return rs.canon > 0
}

// single appends res to the request's results and returns it as a
// one-element slice of them: runPolicy finds it in place (see adopt), other
// callers copy it right away and truncate.
func (rs *reqState) single(res RuleResult) []RuleResult {
	*rs.nextResult() = res
	return rs.last()
}

// singleResult is single for r.result(status, msg), written in place; the
// caller may set more fields through the pointer before returning
// rs.last().
func (rs *reqState) singleResult(r *rule, status Status, msg string) *RuleResult {
	res := rs.nextResult()
	*res = RuleResult{Name: r.name, Type: r.typ, Status: status, Message: msg, Properties: r.properties}
	return res
}

// nextResult appends a result slot to the request's results: results are
// written where they are kept, not copied there (a RuleResult is large).
func (rs *reqState) nextResult() *RuleResult {
	rs.results = append(rs.results, RuleResult{})
	return &rs.results[len(rs.results)-1]
}

// last returns the last result as a one-element slice.
func (rs *reqState) last() []RuleResult {
	n := len(rs.results)
	return rs.results[n-1 : n : n]
}

// adopt makes results, which a rule returned when the request had at
// results, the request's results from at: nothing to do when the rule
// wrote its one result in place (single), a copy otherwise (results the
// rule made itself, or written in place and then dropped).
func (rs *reqState) adopt(at int, results []RuleResult) {
	if len(results) == 1 && len(rs.results) == at+1 && &results[0] == &rs.results[at] {
		return
	}
	rs.results = append(rs.results[:at], results...)
}

// memoResult is a remembered query result. Query results are shared, never
// modified: every consumer treats variables' values as read-only.
type memoResult struct {
	expr string
	v    any
	err  error
}

// queryMemo remembers the results of a few queries: a rule or an element
// evaluates a handful of distinct expressions, which a linear search finds
// faster than a map.
type queryMemo []memoResult

func (m queryMemo) get(expr string) (memoResult, bool) {
	for i := range m {
		if m[i].expr == expr {
			return m[i], true
		}
	}
	return memoResult{}, false
}

// maxMemo bounds a queryMemo: past it, results are not remembered.
const maxMemo = 32

func (e *Engine) newReqState(ctx context.Context, req *Request) *reqState {
	return e.newReqStateImages(ctx, req, true)
}

// newReqStateImages builds the request state; images are extracted only
// when needsImages is set (a rule of the set reads them).
func (e *Engine) newReqStateImages(ctx context.Context, req *Request, needsImages bool) *reqState {
	object, _ := normalize(req.Object).(map[string]any)
	oldObject, _ := normalize(req.OldObject).(map[string]any)
	return e.newReqStateFrom(ctx, req, needsImages, object, oldObject)
}

// newReqStateFrom builds the request state from the request's object and
// old object already in canonical form (as Request.check returns them).
func (e *Engine) newReqStateFrom(ctx context.Context, req *Request, needsImages bool, object, oldObject map[string]any) *reqState {
	return e.initReqState(new(reqState), ctx, req, needsImages, object, oldObject)
}

// initReqState is newReqStateFrom on rs, a new request state or one that
// was released (see release): only its spare scopes and the arrays of its
// query memo and of its context entries (emptied) are kept.
func (e *Engine) initReqState(rs *reqState, ctx context.Context, req *Request, needsImages bool, object, oldObject map[string]any) *reqState {
	*rs = reqState{e: e, ctx: ctx, req: req, op: req.operation(), nsLabels: req.NamespaceLabels, nsLabelsDone: req.NamespaceLabels != nil, needsImages: needsImages,
		object: object, oldObject: oldObject, spare: rs.spare, spareChildren: rs.spareChildren, memo: rs.memo,
		deferSlab: rs.deferSlab, listSlab: rs.listSlab}
	rs.condMemo = rs.condBuf[:0]
	rs.matchReq = match.Request{
		Operation:       string(rs.op),
		Username:        req.UserInfo.Username,
		Groups:          req.UserInfo.Groups,
		Roles:           req.Roles,
		ClusterRoles:    req.ClusterRoles,
		NamespaceLabels: rs.namespaceLabels,
	}
	if req.Background {
		rs.matchReq.Operation = ""
	}
	// the resource rules look at: the new object, or the old one for
	// DELETE (see Request.resourceObject)
	obj := rs.object
	if rs.op == api.Delete || req.Object == nil {
		if req.OldObject != nil {
			obj = rs.oldObject
		}
	}
	rs.setNormalized(obj)
	return rs
}

// release forgets everything the request referred to, for initReqState to
// reuse rs and its spare scopes in another request: nothing may refer to
// rs any more (the request's results belong to its response). The spare
// scopes keep their memo arrays and the variable maps of recycled element
// scopes, emptied, as the request keeps its own memo array.
func (rs *reqState) release() {
	spare, children := rs.spare, rs.spareChildren
	if spare != nil {
		*spare = scope{memo: spare.memo[:0]}
	}
	for _, c := range children {
		clear(c.spareData)
		*c = scope{memo: c.memo[:0], spareData: c.spareData}
	}
	clear(rs.memo)
	clear(rs.deferSlab)
	clear(rs.listSlab)
	*rs = reqState{spare: spare, spareChildren: children, memo: rs.memo[:0],
		deferSlab: rs.deferSlab[:0], listSlab: rs.listSlab[:0]}
}

// setObject (re)builds everything derived from the resource after a
// mutation. Only the parts of obj that are not shared with the current
// object are normalized: those are canonical already.
func (rs *reqState) setObject(obj map[string]any) {
	rs.setNormalized(normalizeChanged(obj, rs.obj))
}

// setNormalized (re)builds everything derived from the resource, given in
// canonical form.
func (rs *reqState) setNormalized(obj map[string]any) {
	rs.obj = obj
	rs.canon = 0
	rs.gvk = rs.req.gvk(obj)
	// name (metadata.generateName when there is no name, as upstream
	// matches a Pod its controller creates), namespace, labels and
	// annotations (absent when one of them is not a string, as
	// unstructured reads them) from the object; the kind of the request
	rs.matchRes = match.ResourceFromObject(obj, rs.req.SubResource)
	rs.matchRes.Group, rs.matchRes.Version, rs.matchRes.Kind = rs.gvk.Group, rs.gvk.Version, rs.gvk.Kind
	if rs.req.Name != "" && rs.matchRes.Name == "" {
		rs.matchRes.Name = rs.req.Name
	}
	if rs.matchRes.Namespace == "" && rs.req.Namespace != "" {
		rs.matchRes.Namespace = rs.req.Namespace
	}
	rs.base = rs.buildBase()
	rs.gen++
	clear(rs.memo)
	rs.memo = rs.memo[:0]
	rs.condMemo = rs.condMemo[:0]
}

func (rs *reqState) buildBase() map[string]any {
	req := rs.req
	r := map[string]any{"operation": string(rs.op)}
	if rs.op == api.Delete {
		if req.OldObject != nil {
			r["oldObject"] = rs.oldObject
		} else {
			r["oldObject"] = rs.obj
		}
		if req.Object != nil {
			r["object"] = rs.object
		}
	} else {
		r["object"] = rs.obj
		if req.OldObject != nil {
			r["oldObject"] = rs.oldObject
		}
	}
	r["namespace"] = rs.matchRes.Namespace
	if req.Name != "" {
		r["name"] = req.Name
	}
	if req.UID != "" {
		r["uid"] = req.UID
	}
	if req.Kind.Kind != "" {
		r["kind"] = map[string]any{"group": req.Kind.Group, "version": req.Kind.Version, "kind": req.Kind.Kind}
	}
	if req.Resource.Resource != "" {
		r["resource"] = map[string]any{"group": req.Resource.Group, "version": req.Resource.Version, "resource": req.Resource.Resource}
	}
	if req.SubResource != "" {
		r["subResource"] = req.SubResource
	}
	if req.DryRun {
		r["dryRun"] = true
	}
	base := map[string]any{"request": r}
	if hasUserInfo(req) {
		ui := map[string]any{"username": req.UserInfo.Username}
		if req.UserInfo.UID != "" {
			ui["uid"] = req.UserInfo.UID
		}
		if req.UserInfo.Groups != nil {
			ui["groups"] = stringsToAny(req.UserInfo.Groups)
		}
		if len(req.UserInfo.Extra) > 0 {
			extra := map[string]any{}
			for k, v := range req.UserInfo.Extra {
				extra[k] = stringsToAny(v)
			}
			ui["extra"] = extra
		}
		r["userInfo"] = ui
		// as upstream's request info (omitempty): no roles is null, not []
		if len(req.Roles) > 0 {
			r["roles"] = stringsToAny(req.Roles)
		}
		if len(req.ClusterRoles) > 0 {
			r["clusterRoles"] = stringsToAny(req.ClusterRoles)
		}
		saName, saNamespace := serviceAccount(req.UserInfo.Username)
		base["serviceAccountName"] = saName
		base["serviceAccountNamespace"] = saNamespace
	}
	if !rs.needsImages {
		// no rule reads images
	} else if infos, err := images.Extract(rs.obj, images.Config{DefaultRegistry: rs.e.cfg.defaultRegistry, EnableDefaultRegistryMutation: rs.e.cfg.registryMutation}); err == nil && len(infos) > 0 {
		base["images"] = images.Variable(infos)
	}
	for k, v := range req.Variables {
		setPath(base, k, normalize(v))
	}
	return base
}

func hasUserInfo(req *Request) bool {
	u := req.UserInfo
	return u.Username != "" || u.UID != "" || len(u.Groups) > 0 || len(req.Roles) > 0 || len(req.ClusterRoles) > 0
}

// serviceAccount splits a service account user name as upstream does: it
// drops the length of "system:serviceaccount:" and splits the rest at ":".
func serviceAccount(username string) (name, namespace string) {
	const prefix = "system:serviceaccount:"
	sa := ""
	if len(username) > len(prefix) {
		sa = username[len(prefix):]
	}
	parts := strings.Split(sa, ":")
	if len(parts) >= 2 {
		return parts[1], parts[0]
	}
	return "", ""
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func (rs *reqState) namespaceLabels() (map[string]string, error) {
	if rs.nsLabelsDone {
		return rs.nsLabels, rs.nsLabelsErr
	}
	rs.nsLabelsDone = true
	ns := rs.matchRes.Namespace
	if ns == "" || rs.e.cfg.namespaces == nil {
		return nil, nil
	}
	ctx, done := rs.hostContext()
	rs.nsLabels, rs.nsLabelsErr = callNamespaceLabeler(ctx, rs.e.cfg.namespaces, ns)
	rs.nsLabelsErr = done(rs.nsLabelsErr)
	if rs.nsLabelsErr != nil {
		rs.nsLabelsErr = fmt.Errorf("namespace labels of %q: %w", ns, rs.nsLabelsErr)
	}
	return rs.nsLabels, rs.nsLabelsErr
}

// callNamespaceLabeler turns a panic of the host's NamespaceLabeler into an
// error, so that the failure is remembered for every later rule of the
// request (failure actions are computed outside any rule).
func callNamespaceLabeler(ctx context.Context, n NamespaceLabeler, ns string) (labels map[string]string, err error) {
	defer func() {
		if v := recover(); v != nil {
			labels, err = nil, fmt.Errorf("namespace labeler panicked: %v", v)
		}
	}()
	return n.NamespaceLabels(ctx, ns)
}

// scope is the variable context of one rule (or one foreach element). Its
// data map is copied on write: children never change their parent's map.
type scope struct {
	rs            *reqState
	data          map[string]any
	deleteRequest bool
	// element is the foreach element a validate pattern applies to when
	// element scope is on.
	element map[string]any
	nesting int
	// owned is set once data is this scope's own copy (copy on write).
	owned bool
	// base is set while data is the request's base of generation gen.
	base bool
	gen  int
	// memo holds the results of pure queries on data while owned (reset
	// on every write).
	memo queryMemo
	// pending is a foreach element not yet written into data (see
	// addElement): the variable map is copied only when something reads
	// or writes a variable, which the many bodies that only match a
	// pattern against the element never do.
	pending pendingElement
	// target is a "target" variable not yet written into data when
	// hasTarget is set (see setTarget), for the same reason.
	target    map[string]any
	hasTarget bool
	// recycled is set on the scopes of validate foreach elements whose
	// bodies load no context (foreachValidate.recycle): their variables
	// are read only while the element is evaluated, and a validate body
	// produces a status and texts, never a value that holds them. own then
	// refills spareData, the map this scope owned for an earlier element,
	// instead of allocating one per element.
	recycled  bool
	spareData map[string]any
	// foreachValues are the host's values for the rule's foreach
	// elements (see ruleValues), nil for most rules.
	foreachValues map[string][]any
	// deferred are the context entries registered on this scope (and its
	// parents) not yet applied to it (see loadContext); deferredOwned is
	// set while no other scope shares the list; loadLimit bounds the
	// entries a query may load while an entry loads (0: none).
	deferred      []*deferredEntry
	deferredOwned bool
	loadLimit     int
}

// pendingElement is a foreach element addElement has yet to write.
type pendingElement struct {
	set            bool
	el             any
	index, nesting int
}

func (rs *reqState) newScope() *scope {
	if sc := rs.spare; sc != nil {
		rs.spare = nil
		*sc = scope{rs: rs, data: rs.base, deleteRequest: rs.op == api.Delete, base: true, gen: rs.gen, memo: sc.memo[:0]}
		return sc
	}
	return &scope{rs: rs, data: rs.base, deleteRequest: rs.op == api.Delete, base: true, gen: rs.gen}
}

// releaseScope gives back a scope of newScope that nothing refers to any
// more, for the next newScope.
func (rs *reqState) releaseScope(sc *scope) {
	clear(sc.memo)
	rs.spare = sc
}

// child returns a scope that shares this scope's variables until it sets
// one of its own.
func (s *scope) child() *scope {
	s.deferredOwned = false // the child shares the list
	c := *s
	c.owned = false
	c.memo = nil
	c.recycled, c.spareData = false, nil
	return &c
}

// childInto makes c, a scope that nothing refers to any more, a new child
// of s: its memo keeps its capacity (not its results), and its spare map
// stays its own.
func (s *scope) childInto(c *scope) {
	memo, spare := c.memo, c.spareData
	clear(memo)
	s.deferredOwned = false // the child shares the list
	*c = *s
	c.owned = false
	c.memo = memo[:0]
	c.recycled, c.spareData = false, spare
}

// recycledChild returns a child of s for the elements of a validate
// foreach whose body loads no context (see scope.recycled), from the
// request's spare scopes when there is one; give it back with
// releaseChild once the last element is evaluated.
func (rs *reqState) recycledChild(s *scope) *scope {
	var c *scope
	if n := len(rs.spareChildren); n > 0 {
		c, rs.spareChildren = rs.spareChildren[n-1], rs.spareChildren[:n-1]
		s.childInto(c)
	} else {
		c = s.child()
	}
	c.recycled = true
	return c
}

func (rs *reqState) releaseChild(c *scope) {
	clear(c.memo)
	c.data, c.element, c.pending = nil, nil, pendingElement{}
	rs.spareChildren = append(rs.spareChildren, c)
}

// own copies the shared variable map before the first write, and writes
// into it the pending target and foreach element.
func (s *scope) own() {
	if !s.owned {
		var data map[string]any
		if s.recycled && s.spareData != nil {
			data = s.spareData
			clear(data)
		} else {
			data = make(map[string]any, len(s.data)+4)
			if s.recycled {
				s.spareData = data
			}
		}
		for k, v := range s.data {
			data[k] = v
		}
		s.data = data
		s.owned = true
		s.base = false
	}
	if s.hasTarget {
		s.data["target"] = s.target
		s.target, s.hasTarget = nil, false
		s.memo = nil
	}
	if p := s.pending; p.set {
		s.pending = pendingElement{}
		s.data["element"] = p.el
		s.data[nestedName("element", elementNames[:], p.nesting)] = p.el
		s.data["elementIndex"] = float64(p.index)
		s.data[nestedName("elementIndex", elementIndexNames[:], p.nesting)] = float64(p.index)
		s.resetMemo()
	}
}

// query evaluates expr, compiled once in the engine's cache of compiled
// queries, on the scope's data.
func (s *scope) query(expr string) (any, error) {
	if err := s.rs.ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.deferred) > 0 {
		if err := s.loadDeferred(expr); err != nil {
			return nil, err
		}
	}
	if s.pending.set || s.hasTarget {
		s.own()
	}
	q, err := s.rs.e.jp.Compile(expr)
	if err != nil {
		return nil, err
	}
	if !q.Memoizable() {
		return q.SearchCanonical(s.data)
	}
	// Pure queries are remembered while the data does not change: on the
	// request's base (shared by every rule of the request) or on this
	// scope's own data.
	var memo *queryMemo
	switch {
	case s.base && s.gen == s.rs.gen:
		memo = &s.rs.memo
	case s.owned:
		memo = &s.memo
	default:
		return q.SearchCanonical(s.data)
	}
	if r, ok := memo.get(expr); ok {
		return r.v, r.err
	}
	v, err := q.SearchCanonical(s.data)
	switch n := len(*memo); {
	case n == 0 && cap(*memo) == 0:
		// a few results per scope: one allocation instead of growing
		*memo = append(make(queryMemo, 0, 4), memoResult{expr, v, err})
	case n < maxMemo:
		*memo = append(*memo, memoResult{expr, v, err})
	}
	return v, err
}

// set stores a variable; a dotted name creates nested objects without
// changing maps shared with other scopes.
func (s *scope) set(name string, v any) {
	s.setCanonical(name, normalize(v))
}

// setTarget sets the variable "target" of a mutate rule to the object, a
// canonical tree; it is written by own, when a variable is first read or
// written (most patches read none).
func (s *scope) setTarget(obj map[string]any) {
	if s.pending.set {
		s.own() // keep the order of the writes
	}
	s.target, s.hasTarget = obj, true
	s.base = false
	s.memo = nil
}

// setCanonical is set for a value already in canonical form (the
// request's object).
func (s *scope) setCanonical(name string, v any) {
	s.own()
	setPath(s.data, name, v)
	s.memo = nil
}

// normalizeChanged is normalize for obj, a mutation of prev (canonical),
// which shares with prev the maps and lists the mutation did not change:
// those are not walked again. The result is normalize(obj).
func normalizeChanged(obj, prev map[string]any) map[string]any {
	out, _, err := normalizeAgainst(obj, prev)
	if err != nil {
		// as normalize: a tree that cannot be normalized is kept as is
		return obj
	}
	n, _ := out.(map[string]any)
	return n
}

// normalizeAgainst normalizes v, skipping the maps and lists it shares
// with prev at the same place. changed reports a copy.
func normalizeAgainst(v, prev any) (out any, changed bool, err error) {
	switch t := v.(type) {
	case map[string]any:
		pm, _ := prev.(map[string]any)
		if t != nil && pm != nil && sameMap(t, pm) {
			return v, false, nil
		}
		var cp map[string]any
		for k, c := range t {
			var pc any
			if pm != nil {
				pc = pm[k]
			}
			n, ch, err := normalizeAgainst(c, pc)
			if err != nil {
				return nil, false, err
			}
			if ch {
				if cp == nil {
					cp = make(map[string]any, len(t))
					for k2, v2 := range t {
						cp[k2] = v2
					}
				}
				cp[k] = n
			}
		}
		if cp != nil {
			return cp, true, nil
		}
		return v, false, nil
	case []any:
		pl, _ := prev.([]any)
		if len(t) > 0 && len(pl) == len(t) && &t[0] == &pl[0] {
			return v, false, nil
		}
		var cp []any
		for i, c := range t {
			var pc any
			if i < len(pl) {
				pc = pl[i]
			}
			n, ch, err := normalizeAgainst(c, pc)
			if err != nil {
				return nil, false, err
			}
			if ch {
				if cp == nil {
					cp = make([]any, len(t))
					copy(cp, t)
				}
				cp[i] = n
			}
		}
		if cp != nil {
			return cp, true, nil
		}
		return v, false, nil
	case nil, string, bool, float64:
		return v, false, nil
	}
	n, err := jpcore.Canonical(v)
	if err != nil {
		return nil, false, err
	}
	return n, !sameValue(n, v), nil
}

// sameValue reports whether Normalize gave back v itself.
func sameValue(n, v any) bool {
	switch t := n.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		return ok && sameMap(t, m)
	case []any:
		l, ok := v.([]any)
		return ok && len(l) == len(t) && (len(t) == 0 || &l[0] == &t[0])
	}
	return false
}

// normalize converts host data to the canonical JSON-like form (float64
// numbers) that queries run on; canonical data is returned as is.
func normalize(v any) any {
	n, err := jpcore.Canonical(v)
	if err != nil {
		return v
	}
	return n
}

func setPath(data map[string]any, name string, v any) {
	parts := splitVariablePath(name)
	m := data
	for i, p := range parts {
		if i == len(parts)-1 {
			m[p] = v
			return
		}
		next, ok := m[p].(map[string]any)
		cp := make(map[string]any, len(next)+1)
		if ok {
			for k, x := range next {
				cp[k] = x
			}
		}
		m[p] = cp
		m = cp
	}
}

// addElement adds a foreach element as upstream's AddElement does: the
// variables element, elementN, elementIndex and elementIndexN. They are
// written by own, when a variable is first read or written.
func (s *scope) addElement(el any, index, nesting int) {
	if s.pending.set {
		s.own() // the element of an enclosing foreach goes first
	}
	s.pending = pendingElement{set: true, el: el, index: index, nesting: nesting}
	s.base = false
	s.resetMemo()
	if s.foreachValues != nil {
		s.setForeachValues(index)
	}
}

// resetMemo forgets the remembered query results, keeping the memo's
// capacity: a scope's memo is its own (child and childInto never share
// one).
func (s *scope) resetMemo() {
	clear(s.memo)
	s.memo = s.memo[:0]
}

// The variable names of the first nesting levels, to spare a Sprintf per
// element.
var (
	elementNames      = [...]string{"element0", "element1", "element2", "element3"}
	elementIndexNames = [...]string{"elementIndex0", "elementIndex1", "elementIndex2", "elementIndex3"}
)

func nestedName(prefix string, names []string, nesting int) string {
	if nesting >= 0 && nesting < len(names) {
		return names[nesting]
	}
	return prefix + strconv.Itoa(nesting)
}
