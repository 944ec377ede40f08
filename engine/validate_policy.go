package engine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/variables"
)

// checkExpressions compiles every JMESPath expression of a rule once, so
// that a malformed expression is reported when the policy is compiled, with
// the path of the field that holds it: {{ }} expressions anywhere but in
// match/exclude, foreach lists and context jmesPath fields.
//
// In background mode (the policy's default) it also rejects, as upstream,
// variables that only admission requests carry: serviceAccountName,
// serviceAccountNamespace, request.userInfo, request.roles,
// request.clusterRoles.
func (e *Engine) checkExpressions(r *api.Rule, ruleDoc map[string]any, docErr error, path *field.Path, background bool) field.ErrorList {
	if docErr != nil {
		return field.ErrorList{field.InternalError(path, docErr)}
	}
	// the rule without match and exclude (a copy of the top level only:
	// ruleDoc is shared)
	doc := make(map[string]any, len(ruleDoc))
	for k, v := range ruleDoc {
		if k != "match" && k != "exclude" {
			doc[k] = v
		}
	}
	var errs field.ErrorList
	vars, err := variables.Find(doc)
	if err != nil {
		return append(errs, field.Invalid(path, "", err.Error()))
	}
	for _, v := range vars {
		if background && !(r.Mutation != nil && len(r.Mutation.Targets) > 0) {
			if admissionOnly(v.Source) {
				// upstream names the variable as written, braces included
				errs = append(errs, field.Forbidden(pointerPath(path, v.Path),
					fmt.Sprintf("only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: variable %s is not allowed", v.Source)))
			}
		}
		if v.Nested || v.Expression == "@" {
			continue
		}
		expr := v.Expression
		if _, err := e.jp.Compile(expr); err != nil {
			errs = append(errs, field.Invalid(pointerPath(path, v.Path), v.Source, fmt.Sprintf("rule %s: %v", r.Name, err)))
		}
	}
	walkPlainExpressions(doc, "", func(p, expr string) {
		if strings.Contains(expr, "{{") {
			return
		}
		if _, err := e.jp.Compile(expr); err != nil {
			errs = append(errs, field.Invalid(pointerPath(path, p), expr, fmt.Sprintf("rule %s: %v", r.Name, err)))
		}
	})
	return errs
}

// walkPlainExpressions calls fn for every foreach "list" and context
// "jmesPath" value (plain JMESPath without braces).
func walkPlainExpressions(v any, p string, fn func(path, expr string)) {
	// the path is kept as steps and rendered only for the expressions
	var steps []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if s, ok := x.(string); ok && (k == "list" || k == "jmesPath") && s != "" {
					fn(p+"/"+strings.Join(append(steps, k), "/"), s)
					continue
				}
				steps = append(steps, k)
				walk(x)
				steps = steps[:len(steps)-1]
			}
		case []any:
			for i, x := range t {
				steps = append(steps, strconv.Itoa(i))
				walk(x)
				steps = steps[:len(steps)-1]
			}
		}
	}
	walk(v)
}

// pointerPath turns an upstream raw path ("/validate/pattern/spec") into
// a field path under base.
func pointerPath(base *field.Path, p string) *field.Path {
	out := base
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if part == "" {
			continue
		}
		if n, err := json.Number(part).Int64(); err == nil {
			out = out.Index(int(n))
			continue
		}
		out = out.Child(part)
	}
	return out
}

// admissionOnlyVariables are the variables upstream forbids in background
// mode; like upstream, a name preceded by "." (a field of another object,
// such as request.object.spec.serviceAccountName) is allowed.
var admissionOnlyVariables = []string{"serviceAccountName", "serviceAccountNamespace", "request.userInfo", "request.roles", "request.clusterRoles"}

func admissionOnly(src string) bool {
	for _, name := range admissionOnlyVariables {
		for i := 0; ; {
			j := strings.Index(src[i:], name)
			if j < 0 {
				break
			}
			at := i + j
			end := at + len(name)
			before := at > 0 && src[at-1] != '.'
			boundary := end == len(src) || !isWordByte(src[end])
			if before && boundary {
				return true
			}
			i = at + 1
		}
	}
	return false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
