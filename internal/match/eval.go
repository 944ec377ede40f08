package match

// Reasons, worded as upstream words them in its (log-only) match errors.
const (
	reasonNoResourceMatched  = "no resource matched"
	reasonEmptyMatch         = "match cannot be empty"
	reasonOperation          = "operation does not match"
	reasonName               = "name does not match"
	reasonNames              = "none of the names match"
	reasonNamespace          = "namespace does not match"
	reasonAnnotations        = "annotations does not match"
	reasonSelector           = "selector does not match"
	reasonSelectorParse      = "failed to parse selector: "
	reasonNsSelectorOnNs     = "namespace selector is not applicable for namespace resource"
	reasonNsSelector         = "namespace selector does not match labels"
	reasonNsSelectorParse    = "failed to parse namespace selector: "
	reasonRoles              = "user info does not match roles for the given conditionBlock"
	reasonClusterRoles       = "user info does not match clustersRoles for the given conditionBlock"
	reasonSubjects           = "user info does not match subject for the given conditionBlock"
	reasonExcludedByOne      = "resource excluded since one of the criteria excluded it"
	reasonExcludedByAll      = "resource excluded since the combination of all criteria exclude it"
	reasonNamespaceLabelsErr = "failed to get namespace labels"
)

// evalCtx carries one evaluation; it lives on the caller's stack.
// It holds no pointer to the resource or the request, which keeps them on
// the stack (the evaluation is allocation free).
type evalCtx struct {
	opBit    uint8
	nsLoaded bool
	nsLabels map[string]string
}

func (c *evalCtx) namespaceLabels(req *Request) (map[string]string, error) {
	if c.nsLoaded {
		return c.nsLabels, nil
	}
	if req.NamespaceLabels != nil {
		l, err := req.NamespaceLabels()
		if err != nil {
			return nil, err
		}
		c.nsLabels = l
	}
	c.nsLoaded = true
	return c.nsLabels, nil
}

// Matches reports whether the rule applies to the resource for this request:
// the match block selects it and the exclude block does not. When it does not
// apply, the second result says why, in upstream's words. An error is
// returned only when Request.NamespaceLabels fails.
//
// Semantics follow upstream's engine: in match blocks user criteria are
// ignored when the request carries no user information (background and CLI
// processing), in exclude blocks they are always checked; an empty filter
// never matches and never excludes; a namespaceSelector never holds for a
// Namespace object.
func (r *Rule) Matches(res Resource, req Request) (bool, string, error) {
	c := evalCtx{opBit: operationBit(req.Operation)}
	ok, reason, err := r.match.ruleMatch(&c, &res, &req)
	if err != nil || !ok {
		return false, reason, err
	}
	excluded, reason, err := r.exclude.ruleExclude(&c, &res, &req)
	if err != nil {
		return false, "", err
	}
	if excluded {
		return false, reason, nil
	}
	return true, "", nil
}

// Matches reports whether the block selects the resource for this request,
// with PolicyException semantics (see CompileFilter). An error is returned
// only when Request.NamespaceLabels fails.
func (f *Filter) Matches(res Resource, req Request) (bool, error) {
	c := evalCtx{opBit: operationBit(req.Operation)}
	b := &f.block
	switch b.mode {
	case modeAny:
		for i := range b.filters {
			fl := &b.filters[i]
			if fl.descEmptyNoOps && fl.userEmpty {
				continue
			}
			ok, _, err := fl.check(&c, &res, &req, !fl.userEmpty, false)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case modeAll:
		for i := range b.filters {
			fl := &b.filters[i]
			if fl.descEmptyNoOps && fl.userEmpty {
				return false, nil
			}
			ok, _, err := fl.check(&c, &res, &req, !fl.userEmpty, false)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	default:
		return false, nil
	}
}

func (b *block) ruleMatch(c *evalCtx, res *Resource, req *Request) (bool, string, error) {
	switch b.mode {
	case modeAny:
		for i := range b.filters {
			ok, _, err := b.filters[i].ruleMatchOne(c, res, req)
			if err != nil || ok {
				return ok, "", err
			}
		}
		return false, reasonNoResourceMatched, nil
	case modeAll:
		for i := range b.filters {
			ok, reason, err := b.filters[i].ruleMatchOne(c, res, req)
			if err != nil || !ok {
				return false, reason, err
			}
		}
		return true, "", nil
	default:
		return b.filters[0].ruleMatchOne(c, res, req)
	}
}

// ruleMatchOne is upstream's match helper: user criteria are dropped when the
// request has no user information, and a filter left empty never matches.
func (f *filter) ruleMatchOne(c *evalCtx, res *Resource, req *Request) (bool, string, error) {
	checkUser := !f.userEmpty && req.hasUserInfo()
	if f.descEmpty && !checkUser {
		return false, reasonEmptyMatch, nil
	}
	return f.check(c, res, req, checkUser, true)
}

func (b *block) ruleExclude(c *evalCtx, res *Resource, req *Request) (bool, string, error) {
	switch b.mode {
	case modeAny:
		for i := range b.filters {
			f := &b.filters[i]
			if f.descEmpty && f.userEmpty {
				continue
			}
			ok, _, err := f.check(c, res, req, !f.userEmpty, true)
			if err != nil || ok {
				return ok, reasonExcludedByOne, err
			}
		}
		return false, "", nil
	case modeAll:
		for i := range b.filters {
			f := &b.filters[i]
			if f.descEmpty && f.userEmpty {
				return false, "", nil
			}
			ok, _, err := f.check(c, res, req, !f.userEmpty, true)
			if err != nil || !ok {
				return false, "", err
			}
		}
		return true, reasonExcludedByAll, nil
	default:
		f := &b.filters[0]
		if f.descEmpty && f.userEmpty {
			return false, "", nil
		}
		ok, _, err := f.check(c, res, req, !f.userEmpty, true)
		return ok, reasonExcludedByOne, err
	}
}

// check evaluates every criterion of the filter (AND across criteria, OR
// within a list). The namespaceSelector comes last since it may need host
// I/O. rule selects the engine's namespaceSelector semantics (a Namespace
// object never satisfies one) over the exceptions' (not evaluated for
// Namespace objects).
func (f *filter) check(c *evalCtx, res *Resource, req *Request, checkUser, rule bool) (bool, string, error) {
	if f.ops != 0 && f.ops&c.opBit == 0 {
		return false, reasonOperation, nil
	}
	if len(f.kinds) > 0 {
		found := false
		for i := range f.kinds {
			if f.kinds[i].matches(res) {
				found = true
				break
			}
		}
		if !found {
			return false, f.kindReason, nil
		}
	}
	if f.hasName && !f.name.Match(res.Name) {
		return false, reasonName, nil
	}
	if len(f.names) > 0 && !matchAny(f.names, res.Name) {
		return false, reasonNames, nil
	}
	if len(f.namespaces) > 0 {
		ns := res.Namespace
		if res.Kind == "Namespace" {
			ns = res.Name
		}
		if !matchAny(f.namespaces, ns) {
			return false, reasonNamespace, nil
		}
	}
	for i := range f.annotations {
		if !f.annotations[i].matches(res.Annotations) {
			return false, reasonAnnotations, nil
		}
	}
	if f.selector != nil {
		ok, err := f.selector.matches(res.Labels)
		if err != nil {
			return false, joinReason(reasonSelectorParse, err), nil
		}
		if !ok {
			return false, reasonSelector, nil
		}
	}
	if checkUser {
		if len(f.roles) > 0 && !containsAny(f.roles, req.Roles) {
			return false, reasonRoles, nil
		}
		if len(f.clusterRoles) > 0 && !containsAny(f.clusterRoles, req.ClusterRoles) {
			return false, reasonClusterRoles, nil
		}
		if len(f.subjects) > 0 && !f.subjectsMatch(req) {
			return false, reasonSubjects, nil
		}
	}
	if f.nsSelector != nil {
		evaluate := false
		if rule {
			if res.Kind == "Namespace" {
				return false, reasonNsSelectorOnNs, nil
			}
			evaluate = res.Kind != "" || f.kindStar
		} else {
			evaluate = res.Kind != "Namespace" && res.Kind != ""
		}
		if evaluate {
			nsLabels, err := c.namespaceLabels(req)
			if err != nil {
				return false, reasonNamespaceLabelsErr, &NamespaceLabelsError{Namespace: res.Namespace, Err: err}
			}
			ok, perr := f.nsSelector.matches(nsLabels)
			if perr != nil {
				return false, joinReason(reasonNsSelectorParse, perr), nil
			}
			if !ok {
				return false, reasonNsSelector, nil
			}
		}
	}
	return true, "", nil
}

func (a *annotationPattern) matches(set map[string]string) bool {
	if k, ok := a.key.Literal(); ok {
		v, ok := set[k]
		return ok && a.value.Match(v)
	}
	for k, v := range set {
		if a.key.Match(k) && a.value.Match(v) {
			return true
		}
	}
	return false
}

func (f *filter) subjectsMatch(req *Request) bool {
	for i := range f.subjects {
		s := &f.subjects[i]
		switch s.kind {
		case "User", "ServiceAccount":
			if s.pattern.Match(req.Username) {
				return true
			}
		case "Group":
			for _, g := range req.Groups {
				if s.pattern.Match(g) {
					return true
				}
			}
		}
	}
	return false
}

// containsAny reports whether one of values is in set (exact comparison).
func containsAny(set, values []string) bool {
	for _, v := range values {
		for _, s := range set {
			if s == v {
				return true
			}
		}
	}
	return false
}

// NamespaceLabelsError reports a failure of Request.NamespaceLabels.
type NamespaceLabelsError struct {
	Namespace string
	Err       error
}

func (e *NamespaceLabelsError) Error() string {
	return "match: labels of namespace " + e.Namespace + ": " + e.Err.Error()
}

func (e *NamespaceLabelsError) Unwrap() error { return e.Err }
