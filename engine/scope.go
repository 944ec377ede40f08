package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/images"
	"github.com/gavelpolicy/gavel/jmespath"
	"github.com/gavelpolicy/gavel/match"
	"github.com/gavelpolicy/gavel/podsecurity"
)

// reqState is the per-request state shared by every rule of one call.
type reqState struct {
	e   *Engine
	ctx context.Context
	req *Request
	op  api.AdmissionOperation

	obj  map[string]any // the resource rules look at (old object for DELETE)
	gvk  GroupVersionKind
	base map[string]any // request, serviceAccount*, images, variables

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
}

func (e *Engine) newReqState(ctx context.Context, req *Request) *reqState {
	return e.newReqStateImages(ctx, req, true)
}

// newReqStateImages builds the request state; images are extracted only
// when needsImages is set (a rule of the set reads them).
func (e *Engine) newReqStateImages(ctx context.Context, req *Request, needsImages bool) *reqState {
	rs := &reqState{e: e, ctx: ctx, req: req, op: req.operation(), nsLabels: req.NamespaceLabels, nsLabelsDone: req.NamespaceLabels != nil, needsImages: needsImages}
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
	rs.setObject(req.resourceObject())
	return rs
}

// setObject (re)builds everything derived from the resource: used at the
// start and after each mutation.
func (rs *reqState) setObject(obj map[string]any) {
	if n, ok := normalize(obj).(map[string]any); ok {
		obj = n
	}
	rs.obj = obj
	rs.gvk = rs.req.gvk(obj)
	name, ns, labels, annotations := objectMeta(obj)
	if rs.req.Name != "" && name == "" {
		name = rs.req.Name
	}
	if ns == "" && rs.req.Namespace != "" {
		ns = rs.req.Namespace
	}
	rs.matchRes = match.Resource{
		Group: rs.gvk.Group, Version: rs.gvk.Version, Kind: rs.gvk.Kind,
		Subresource: rs.req.SubResource,
		Name:        name, Namespace: ns,
		Labels: labels, Annotations: annotations,
	}
	rs.base = rs.buildBase()
}

func (rs *reqState) buildBase() map[string]any {
	req := rs.req
	r := map[string]any{"operation": string(rs.op)}
	if rs.op == api.Delete {
		if req.OldObject != nil {
			r["oldObject"] = normalize(req.OldObject)
		} else {
			r["oldObject"] = rs.obj
		}
		if req.Object != nil {
			r["object"] = normalize(req.Object)
		}
	} else {
		r["object"] = rs.obj
		if req.OldObject != nil {
			r["oldObject"] = normalize(req.OldObject)
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
		r["roles"] = stringsToAny(req.Roles)
		r["clusterRoles"] = stringsToAny(req.ClusterRoles)
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
	rs.nsLabels, rs.nsLabelsErr = callNamespaceLabeler(rs.ctx, rs.e.cfg.namespaces, ns)
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
}

func (rs *reqState) newScope() *scope {
	return &scope{rs: rs, data: rs.base, deleteRequest: rs.op == api.Delete}
}

// child returns a scope that shares this scope's variables until it sets
// one of its own.
func (s *scope) child() *scope {
	c := *s
	c.owned = false
	return &c
}

// own copies the shared variable map before the first write.
func (s *scope) own() {
	if s.owned {
		return
	}
	data := make(map[string]any, len(s.data)+4)
	for k, v := range s.data {
		data[k] = v
	}
	s.data = data
	s.owned = true
}

// Evaluate implements variables.Evaluator.
func (s *scope) Evaluate(expr string) (any, error) { return s.query(expr) }

func (s *scope) query(expr string) (any, error) {
	if err := s.rs.ctx.Err(); err != nil {
		return nil, err
	}
	return s.rs.e.jp.SearchNormalized(expr, s.data)
}

// set stores a variable; a dotted name creates nested objects without
// changing maps shared with other scopes.
func (s *scope) set(name string, v any) {
	s.own()
	setPath(s.data, name, normalize(v))
}

// normalize converts host data to the canonical JSON-like form (float64
// numbers) that queries run on; canonical data is returned as is.
func normalize(v any) any {
	n, err := jmespath.Normalize(v)
	if err != nil {
		return v
	}
	return n
}

func setPath(data map[string]any, name string, v any) {
	parts := strings.Split(name, ".")
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

// addElement adds a foreach element as upstream's AddElement does.
func (s *scope) addElement(el any, index, nesting int) {
	s.own()
	s.data["element"] = el
	s.data[fmt.Sprintf("element%d", nesting)] = el
	s.data["elementIndex"] = float64(index)
	s.data[fmt.Sprintf("elementIndex%d", nesting)] = float64(index)
}
