package migrate

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// variable is a CEL variable made from a context entry.
type variable struct {
	name string
	expr ex
	// t and elem are what is known of its type
	t, elem vtype
	// key marks the value's shape (imageDataKey), if known
	key string
	// note says how the entry was rewritten, for a comment
	// builtin marks a variable of Kyverno's own context (images), not
	// of a context entry
	builtin bool
	note    string
}

// comment is the comment of the variable in the output.
func (v variable) comment() string {
	if v.builtin {
		return v.note
	}
	return "context entry " + v.note
}

// celName is a context entry's name as a CEL identifier.
func celName(name string) string {
	var b strings.Builder
	for i, r := range name {
		switch {
		case r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || celReserved[s] {
		s += "_"
	}
	return s
}

// contextEntry converts one context entry into the CEL expression of its
// value.
func (c *jp) contextEntry(ce api.ContextEntry, path string) (variable, error) {
	v := variable{name: celName(ce.Name)}
	switch {
	case ce.Variable != nil:
		e, t, err := c.contextVariable(ce.Variable)
		if err != nil {
			return v, at(path+".variable", err)
		}
		v.expr, v.t, v.elem = e, t.t, t.elem
	case ce.ConfigMap != nil:
		name, err := c.str(ce.ConfigMap.Name)
		if err != nil {
			return v, at(path+".configMap.name", err)
		}
		ns := jv{e: strLit("default"), t: tString}
		if ce.ConfigMap.Namespace != "" {
			if ns, err = c.str(ce.ConfigMap.Namespace); err != nil {
				return v, at(path+".configMap.namespace", err)
			}
		}
		v.expr = method(ident("resource"), "Get", strLit("v1"), strLit("configmaps"), ns.value(strLit("")), name.value(strLit("")))
		v.t = tMap
		v.note = "configMap " + ce.ConfigMap.Name + ": resource.Get"
	case ce.APICall != nil:
		e, note, t, err := c.apiCall(ce.APICall)
		if err != nil {
			return v, at(path+".apiCall", err)
		}
		v.expr, v.note, v.t, v.elem = e, note, t.t, t.elem
	case ce.GlobalReference != nil:
		name, err := c.str(ce.GlobalReference.Name)
		if err != nil {
			return v, at(path+".globalReference.name", err)
		}
		g := jv{e: method(ident("globalContext"), "Get", name.value(strLit("")), strLit(""))}
		if ce.GlobalReference.JMESPath != "" {
			if g, err = c.on(ce.GlobalReference.JMESPath, g); err != nil {
				return v, at(path+".globalReference.jmesPath", err)
			}
		}
		v.expr, v.t, v.elem = g.value(exNull), g.t, g.elem
		v.note = "globalReference " + ce.GlobalReference.Name + ": globalContext.Get"
	case ce.ImageRegistry != nil:
		e, t, err := c.imageRegistry(ce.ImageRegistry)
		if err != nil {
			return v, at(path+".imageRegistry", err)
		}
		v.expr, v.t, v.elem, v.key = e, t.t, t.elem, t.key
		v.note = "imageRegistry " + ce.ImageRegistry.Reference + ": image.GetMetadata (configData is config, manifestList imageIndex)"
	default:
		return v, unsupportedf("context entry", "at %s: no source", path)
	}
	return v, nil
}

// imageDataKey marks the value of image.GetMetadata: its fields are
// Kyverno's image data under the CEL library's names (imageDataField).
const imageDataKey = "\x00imageData"

// imageDataField is the field of image.GetMetadata's value that holds
// Kyverno's image data field name: the image's config (configData) and
// its index (manifestList) are named after the OCI documents there.
func imageDataField(name string) string {
	switch name {
	case "configData":
		return "config"
	case "manifestList":
		return "imageIndex"
	}
	return name
}

// imageRegistry converts an imageRegistry entry: image.GetMetadata of the
// reference, then the entry's jmesPath on it.
func (c *jp) imageRegistry(r *api.ImageRegistry) (ex, jv, error) {
	if r.ImageRegistryCredentials != nil {
		return ex{}, jv{}, unsupportedf("imageRegistryCredentials", "per-entry registry credentials (the CEL library uses the host's)")
	}
	ref, err := c.str(r.Reference)
	if err != nil {
		return ex{}, jv{}, at("reference", err)
	}
	out := jv{e: method(ident("image"), "GetMetadata", ref.value(strLit(""))), t: tMap, key: imageDataKey}
	if r.JMESPath != "" {
		if out, err = c.on(r.JMESPath, out); err != nil {
			return ex{}, jv{}, at("jmesPath", err)
		}
	}
	return out.value(exNull), out, nil
}

// contextVariable converts a variable entry: its value (or a JMESPath
// on the context), an optional jmesPath on it, and its default.
func (c *jp) contextVariable(v *api.Variable) (ex, jv, error) {
	var out jv
	switch {
	case v.Value != nil:
		val, err := c.document(v.Value)
		if err != nil {
			return ex{}, jv{}, at("value", err)
		}
		out = val
		if v.JMESPath != "" {
			if out, err = c.on(v.JMESPath, val); err != nil {
				return ex{}, jv{}, at("jmesPath", err)
			}
		}
	case v.JMESPath != "":
		// {{ }} in the expression read the values they name
		n, restore, err := c.parseWithTemplates(v.JMESPath)
		if err != nil {
			return ex{}, jv{}, err
		}
		out, err = c.node(n, jv{sym: symRoot}, needNullable)
		restore()
		if err != nil {
			return ex{}, jv{}, at("jmesPath", err)
		}
		if out.sym != symNone {
			return ex{}, jv{}, unsupportedf("jmesPath", "Kyverno's context itself")
		}
	default:
		if v.Default == nil {
			return ex{}, jv{}, unsupportedf("variable", "no value, jmesPath or default")
		}
	}
	if v.Default != nil {
		def, err := c.document(v.Default)
		if err != nil {
			return ex{}, jv{}, at("default", err)
		}
		if out.e.s == "" {
			return def.value(exNull), def, nil
		}
		if out.opt {
			return method(out.e, "orValue", def.value(exNull)), out, nil
		}
		return dynCond(rel(nullable(out.e, out), "!=", exNull), out, def), out, nil
	}
	return out.value(exNull), out, nil
}

// document converts a JSON value whose strings may hold {{ }}.
func (c *jp) document(x any) (jv, error) {
	switch t := x.(type) {
	case string:
		return c.str(t)
	case []any:
		parts := make([]ex, len(t))
		kinds := make([]string, len(t))
		for i, e := range t {
			v, err := c.document(e)
			if err != nil {
				return jv{}, err
			}
			parts[i], kinds[i] = v.value(exNull), kindOfValue(v)
			if c.dynAll && (v.t == tMap || v.t == tList || v.t == tAny) {
				parts[i], kinds[i] = call("dyn", parts[i]), "dyn"
			}
		}
		return jv{e: listOf(homogeneous(parts, kinds)...), t: tList}, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			if strings.Contains(k, "{{") {
				return jv{}, unsupportedf("variable value", "a map key with variables")
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		vals := make([]ex, len(keys))
		kinds := make([]string, len(keys))
		for i, k := range keys {
			v, err := c.document(t[k])
			if err != nil {
				return jv{}, err
			}
			vals[i], kinds[i] = v.value(exNull), kindOfValue(v)
			if c.dynAll && (v.t == tMap || v.t == tList || v.t == tAny) {
				vals[i], kinds[i] = call("dyn", vals[i]), "dyn"
			}
		}
		return jv{e: mapOf(keys, homogeneous(vals, kinds)), t: tMap}, nil
	}
	return literal(normalizeNumber(x)), nil
}

// apiCall converts an apiCall entry: a Kubernetes API path into the
// resource library, a service call into the http library.
func (c *jp) apiCall(a *api.APICall) (ex, string, jv, error) {
	var call jv
	var note string
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = "GET"
	}
	if a.Service != nil {
		u, err := c.str(a.Service.URL)
		if err != nil {
			return ex{}, "", jv{}, at("service.url", err)
		}
		if a.Service.CABundle != "" {
			return ex{}, "", jv{}, unsupportedf("service.caBundle", "a CA bundle (use http.Client)")
		}
		headers, err := c.headers(a.Service.Headers)
		if err != nil {
			return ex{}, "", jv{}, err
		}
		switch method {
		case "GET":
			args := []ex{u.value(strLit(""))}
			if headers.s != "" {
				args = append(args, headers)
			}
			call = jv{e: methodCall(ident("http"), "Get", args...)}
		case "POST":
			body, err := c.body(a.Data)
			if err != nil {
				return ex{}, "", jv{}, err
			}
			args := []ex{u.value(strLit("")), body}
			if headers.s != "" {
				args = append(args, headers)
			}
			call = jv{e: methodCall(ident("http"), "Post", args...)}
		default:
			return ex{}, "", jv{}, unsupportedf("method "+a.Method, "only GET and POST")
		}
		note = "apiCall service: http." + strings.ToLower(method[:1]) + strings.ToLower(method[1:])
	} else {
		e, n, err := c.urlPath(a, method)
		if err != nil {
			return ex{}, "", jv{}, err
		}
		call, note = jv{e: e}, n
	}
	out := call
	if a.JMESPath != "" {
		var err error
		if out, err = c.on(a.JMESPath, call); err != nil {
			return ex{}, "", jv{}, at("jmesPath", err)
		}
	}
	if a.Default != nil {
		def, err := c.document(a.Default)
		if err != nil {
			return ex{}, "", jv{}, at("default", err)
		}
		note += " (the default replaces only a null result)"
		return dynCond(rel(out.value(exNull), "!=", exNull), out, def), note, out, nil
	}
	return out.value(exNull), note, out, nil
}

func methodCall(recv ex, name string, args ...ex) ex { return method(recv, name, args...) }

// headers converts a service call's headers into a CEL map.
func (c *jp) headers(hs []api.HTTPHeader) (ex, error) {
	if len(hs) == 0 {
		return ex{}, nil
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		v, err := c.str(h.Value)
		if err != nil {
			return ex{}, at(fmt.Sprintf("service.headers[%d]", i), err)
		}
		parts[i] = strLit(h.Key).s + ": " + v.value(strLit("")).s
	}
	return ex{s: "{" + strings.Join(parts, ", ") + "}", prec: precPrimary}, nil
}

// body converts an apiCall's data into a CEL map.
func (c *jp) body(data []api.RequestData) (ex, error) {
	keys := make([]string, len(data))
	vals := make([]ex, len(data))
	kinds := make([]string, len(data))
	for i, d := range data {
		v, err := c.document(d.Value)
		if err != nil {
			return ex{}, at(fmt.Sprintf("data[%d]", i), err)
		}
		keys[i], vals[i], kinds[i] = d.Key, v.value(exNull), kindOfValue(v)
	}
	return mapOf(keys, homogeneous(vals, kinds)), nil
}

// urlPath converts a Kubernetes API path: a list or a get of the
// resource library (a label selector as its labels argument).
func (c *jp) urlPath(a *api.APICall, method string) (ex, string, error) {
	raw := a.URLPath
	query := ""
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		raw, query = raw[:i], raw[i+1:]
	}
	segs := strings.Split(strings.Trim(raw, "/"), "/")
	var apiVersion string
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		apiVersion, segs = segs[1], segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		apiVersion, segs = segs[1]+"/"+segs[2], segs[3:]
	default:
		return ex{}, "", unsupportedf("urlPath "+a.URLPath, "not a Kubernetes API path")
	}
	if strings.Contains(apiVersion, "{{") {
		return ex{}, "", unsupportedf("urlPath "+a.URLPath, "a group or version given by a variable")
	}
	ns := jv{e: strLit(""), t: tString}
	if len(segs) >= 2 && segs[0] == "namespaces" && len(segs) != 2 {
		v, err := c.str(segs[1])
		if err != nil {
			return ex{}, "", at("urlPath", err)
		}
		ns, segs = v, segs[2:]
	}
	if len(segs) == 0 || len(segs) > 3 {
		return ex{}, "", unsupportedf("urlPath "+a.URLPath, "not a resource or a resource's object")
	}
	resource := segs[0]
	res := strLit(resource)
	if strings.Contains(resource, "{{") {
		// a resource given by a variable: its value
		v, err := c.str(resource)
		if err != nil {
			return ex{}, "", at("urlPath", err)
		}
		res = v.value(strLit(""))
	}
	av := strLit(apiVersion)
	if method == "POST" {
		if len(segs) != 1 {
			return ex{}, "", unsupportedf("urlPath "+a.URLPath, "a POST to an object")
		}
		body, err := c.body(a.Data)
		if err != nil {
			return ex{}, "", err
		}
		if ns.e.s == "''" {
			return method2("Post", av, res, body), "apiCall " + a.URLPath + ": resource.Post", nil
		}
		return method2("Post", av, res, ns.value(strLit("")), body), "apiCall " + a.URLPath + ": resource.Post", nil
	}
	if method != "GET" {
		return ex{}, "", unsupportedf("method "+a.Method, "only GET and POST")
	}
	if len(segs) >= 2 {
		if len(segs) == 3 {
			return ex{}, "", unsupportedf("urlPath "+a.URLPath, "a subresource")
		}
		if query != "" {
			return ex{}, "", unsupportedf("urlPath "+a.URLPath, "query parameters on a get")
		}
		name, err := c.str(segs[1])
		if err != nil {
			return ex{}, "", at("urlPath", err)
		}
		return method2("Get", av, res, ns.value(strLit("")), name.value(strLit(""))), "apiCall " + a.URLPath + ": resource.Get", nil
	}
	args := []ex{av, res, ns.value(strLit(""))}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return ex{}, "", unsupportedf("urlPath query", "%v", err)
	}
	var fields []string
	if fs, ok := vals["fieldSelector"]; ok {
		fields = fs
		delete(vals, "fieldSelector")
	}
	if len(vals) > 0 {
		labels, err := c.labelQuery(vals)
		if err != nil {
			return ex{}, "", err
		}
		args = append(args, labels)
	}
	list := method2("List", args...)
	note := "apiCall " + a.URLPath + ": resource.List"
	if len(fields) > 0 {
		if jp := strings.TrimSpace(a.JMESPath); !strings.HasPrefix(jp, "items[") && !strings.HasPrefix(jp, "items |") && jp != "items" {
			return ex{}, "", unsupportedf("urlPath fieldSelector", "a jmesPath that reads more of the list than its items")
		}
		if list, err = c.fieldSelected(list, fields); err != nil {
			return ex{}, "", err
		}
		note += ", its items filtered by the fieldSelector (the resource library has none)"
	}
	return list, note, nil
}

// fieldSelected is a list whose items are filtered by a fieldSelector of
// equality and inequality terms: the API server compares the text of a
// field, empty when it is missing. The list keeps its items only (the
// jmesPath reads nothing else).
func (c *jp) fieldSelected(list ex, selectors []string) (ex, error) {
	if len(selectors) != 1 {
		return ex{}, unsupportedf("urlPath fieldSelector", "given more than once")
	}
	name := c.freshName("item")
	defer c.release(name)
	item := ident(name)
	var tests []ex
	for _, term := range strings.Split(selectors[0], ",") {
		op, sep := "==", "=="
		switch {
		case strings.Contains(term, "!="):
			op, sep = "!=", "!="
		case strings.Contains(term, "=="):
		default:
			sep = "="
		}
		kv := strings.SplitN(term, sep, 2)
		if len(kv) != 2 || kv[0] == "" {
			return ex{}, unsupportedf("urlPath fieldSelector "+selectors[0], "not field=value terms")
		}
		f := item
		for _, part := range strings.Split(kv[0], ".") {
			if !isIdent(part) {
				return ex{}, unsupportedf("urlPath fieldSelector "+selectors[0], "field %s", kv[0])
			}
			f = optField(f, part)
		}
		v, err := c.str(kv[1])
		if err != nil {
			return ex{}, err
		}
		tests = append(tests, rel(call("string", method(f, "orValue", strLit(""))), op, v.value(strLit(""))))
	}
	l := ident("list")
	items := macro(method(optField(l, "items"), "orValue", listOf()), "filter", name, and(tests...))
	obj := ex{s: "{'items': " + items.s + "}", prec: precPrimary}
	return call("cel.bind", l, list, obj), nil
}

func method2(name string, args ...ex) ex { return method(ident("resource"), name, args...) }

// labelQuery converts ?labelSelector=k=v,k2=v2 into the labels argument of
// resource.List.
func (c *jp) labelQuery(vals url.Values) (ex, error) {
	var parts []string
	for k, vs := range vals {
		if k != "labelSelector" || len(vs) != 1 {
			return ex{}, unsupportedf("urlPath query "+k, "only an equality labelSelector")
		}
		for _, term := range strings.Split(vs[0], ",") {
			kv := strings.SplitN(term, "=", 2)
			if len(kv) != 2 || strings.ContainsAny(kv[0], "!()") || strings.HasPrefix(kv[1], "=") {
				return ex{}, unsupportedf("urlPath labelSelector "+vs[0], "only equality terms")
			}
			v, err := c.str(kv[1])
			if err != nil {
				return ex{}, err
			}
			parts = append(parts, strLit(kv[0]).s+": "+v.value(strLit("")).s)
		}
	}
	return ex{s: "{" + strings.Join(parts, ", ") + "}", prec: precPrimary}, nil
}

// rawJSON is the JSON text of a value, for comments.
func rawJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// kindOfValue is the kind of a converted value in a list or map
// literal: a literal's own, dyn for an expression (the converter knows
// the JSON type of what an expression reads, not its CEL type: a field
// of object is dyn).
func kindOfValue(v jv) string {
	if v.opt || !isLiteral(v.e.s) {
		return "dyn"
	}
	return kindOfType(v.t)
}

// isLiteral reports whether s is one CEL literal: null, a bool, a
// number or a quoted string.
func isLiteral(s string) bool {
	switch {
	case s == "null" || s == "true" || s == "false":
		return true
	case s == "":
		return false
	case s[0] == '\'':
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\'':
				return i == len(s)-1
			}
		}
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// kindOfType is a vtype as litKind names it (numbers are unknown: int or
// double).
func kindOfType(t vtype) string {
	switch t {
	case tString:
		return "string"
	case tBool:
		return "bool"
	case tList:
		return "list"
	case tMap:
		return "map"
	case tNull:
		return "null"
	}
	return "dyn"
}
