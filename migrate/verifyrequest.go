package migrate

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/variables"
)

// convertedRequest is the request an output is verified with: the
// source's request, with the test's values of the request and of the
// variables Kyverno derives from it (a kyverno-test.yaml's
// request.namespace, request.object.spec.x, serviceAccountName) applied
// to the request itself, since an output reads the request, not
// variables. The values of the output's rules apply when every rule of
// the output gives the same one; the resource's own values (own, the
// Variables of the source's request) apply over them.
func convertedRequest(cfg *verifyConfig, policy string, o *Output, req *engine.Request, own map[string]any) *engine.Request {
	vals := map[string]any{}
	if cfg.values != nil {
		for i, rule := range o.Rules {
			rv := cfg.values(policy, rule)
			if i == 0 {
				for k, v := range rv {
					if requestValue(k) {
						vals[k] = v
					}
				}
				continue
			}
			for k, v := range vals {
				if w, ok := rv[k]; !ok || !reflect.DeepEqual(v, w) {
					delete(vals, k)
				}
			}
		}
	}
	for k, v := range own {
		if requestValue(k) {
			vals[k] = v
		}
	}
	if len(vals) == 0 {
		return req
	}
	out := *req
	copied := false
	for k, v := range vals {
		rest, ok := strings.CutPrefix(k, "request.object.")
		if !ok || out.Object == nil {
			continue
		}
		if !copied {
			// the object is shared with the source's request
			out.Object, copied = copyJSON(out.Object), true
		}
		setField(out.Object, variables.KeyPath(rest), v)
	}
	if ns, ok := vals["request.namespace"].(string); ok {
		out.Namespace = ns
	}
	if op, ok := vals["request.operation"].(string); ok && op != string(out.Operation) {
		obj := out.Object
		if obj == nil {
			obj = out.OldObject
		}
		switch op {
		case "DELETE":
			out.Operation, out.Object, out.OldObject = api.Delete, nil, obj
		case "UPDATE":
			out.Operation, out.Object, out.OldObject = api.Update, obj, obj
		case "CREATE":
			out.Operation, out.Object, out.OldObject = api.Create, obj, nil
		}
	}
	if name, ok := vals["serviceAccountName"].(string); ok {
		ns, _ := vals["serviceAccountNamespace"].(string)
		if ns == "" {
			ns = out.Namespace
		}
		if ns == "" {
			ns = namespaceOf(out.Object, out.OldObject)
		}
		out.UserInfo.Username = fmt.Sprintf("system:serviceaccount:%s:%s", ns, name)
	}
	return &out
}

// requestValue tells the values that stand for the request or a variable
// Kyverno derives from it.
func requestValue(k string) bool {
	switch k {
	case "request.namespace", "request.operation", "serviceAccountName", "serviceAccountNamespace":
		return true
	}
	return strings.HasPrefix(k, "request.object.")
}

// setField sets the field at path in m, making the maps on the way.
func setField(m map[string]any, path []string, v any) {
	for i, p := range path {
		if i == len(path)-1 {
			m[p] = v
			return
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
}

// namespaceOf is the namespace of the first object that has one.
func namespaceOf(objs ...map[string]any) string {
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		if ns, _ := md["namespace"].(string); ns != "" {
			return ns
		}
	}
	return ""
}
