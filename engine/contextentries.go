package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
)

// contextEntry is a compiled context entry.
type contextEntry struct {
	name string
	src  *api.ContextEntry

	// variable
	value    *tree
	jmesPath *template
	def      *tree

	// configMap
	cmName, cmNamespace *template

	// apiCall
	urlPath  *template
	method   string
	data     []apiData
	service  *serviceSpec
	apiDef   any
	apiJMESP *template

	// imageRegistry
	reference *template
	regJMESP  *template
	// globalReference: name and jmesPath, substituted as upstream does
	globalName, globalJMESP *template
}

type apiData struct {
	key   string
	value *tree
}

type serviceSpec struct {
	url      *template
	caBundle string
	headers  []api.HTTPHeader
}

func (e *Engine) compileContext(entries []api.ContextEntry, path *field.Path, errs field.ErrorList) ([]*contextEntry, field.ErrorList) {
	var out []*contextEntry
	for i := range entries {
		en := &entries[i]
		p := path.Index(i)
		ce := &contextEntry{name: en.Name, src: en}
		if en.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "context entry name is required"))
		}
		n := 0
		tmpl := func(s string, fp *field.Path) *template {
			if s == "" {
				return nil
			}
			t, err := e.compileTemplate(s)
			if err != nil {
				errs = append(errs, field.Invalid(fp, s, err.Error()))
			}
			return t
		}
		doc := func(v any, fp *field.Path, base string) *tree {
			if v == nil {
				return nil
			}
			t, err := e.compileTree(v, base)
			if err != nil {
				errs = append(errs, field.Invalid(fp, v, err.Error()))
			}
			return t
		}
		if v := en.Variable; v != nil {
			n++
			ce.value = doc(v.Value, p.Child("variable", "value"), "")
			ce.jmesPath = tmpl(v.JMESPath, p.Child("variable", "jmesPath"))
			ce.def = doc(v.Default, p.Child("variable", "default"), "")
			if v.Value == nil && v.JMESPath == "" {
				errs = append(errs, field.Required(p.Child("variable"), "a variable needs a value or a jmesPath"))
			}
		}
		if cm := en.ConfigMap; cm != nil {
			n++
			ce.cmName = tmpl(cm.Name, p.Child("configMap", "name"))
			ce.cmNamespace = tmpl(cm.Namespace, p.Child("configMap", "namespace"))
		}
		if ac := en.APICall; ac != nil {
			n++
			ce.method = strings.ToUpper(ac.Method)
			if ce.method == "" {
				ce.method = "GET"
			}
			if ce.method != "GET" && ce.method != "POST" {
				errs = append(errs, field.NotSupported(p.Child("apiCall", "method"), ac.Method, []string{"GET", "POST"}))
			}
			ce.urlPath = tmpl(ac.URLPath, p.Child("apiCall", "urlPath"))
			for j, d := range ac.Data {
				ce.data = append(ce.data, apiData{key: d.Key, value: doc(d.Value, p.Child("apiCall", "data").Index(j).Child("value"), "")})
			}
			if ac.Service != nil {
				ce.service = &serviceSpec{url: tmpl(ac.Service.URL, p.Child("apiCall", "service", "url")), caBundle: ac.Service.CABundle, headers: ac.Service.Headers}
			}
			if ac.URLPath == "" && ac.Service == nil {
				errs = append(errs, field.Required(p.Child("apiCall"), "urlPath or service is required"))
			}
			ce.apiJMESP = tmpl(ac.JMESPath, p.Child("apiCall", "jmesPath"))
			ce.apiDef = ac.Default
		}
		if ir := en.ImageRegistry; ir != nil {
			n++
			ce.reference = tmpl(ir.Reference, p.Child("imageRegistry", "reference"))
			ce.regJMESP = tmpl(ir.JMESPath, p.Child("imageRegistry", "jmesPath"))
		}
		if gr := en.GlobalReference; gr != nil {
			n++
			ce.globalName = tmpl(gr.Name, p.Child("globalReference", "name"))
			ce.globalJMESP = tmpl(gr.JMESPath, p.Child("globalReference", "jmesPath"))
		}
		if n != 1 {
			errs = append(errs, field.Invalid(p, en.Name, "exactly one of variable, configMap, apiCall, imageRegistry or globalReference is required"))
		}
		out = append(out, ce)
	}
	return out, errs
}

// errSkipped marks an entry that is not loaded: its host dependency is
// absent and the engine was built WithUnconfiguredEntriesSkipped.
var errSkipped = errors.New("skipped")

// notConfigured is the error of an entry whose host dependency is absent:
// errSkipped when the engine skips such entries, else an error naming the
// dependency and the option that provides it, wrapping ErrNotConfigured.
func (s *scope) notConfigured(ce *contextEntry, kind, dependency, option string) error {
	if s.rs.e.cfg.skipUnconfigured {
		return errSkipped
	}
	return fmt.Errorf("context entry %s: %s needs %s (engine.%s): %w", ce.name, kind, dependency, option, ErrNotConfigured)
}

// loadContext registers entries on the scope, to be loaded when a query
// first names one (upstream's deferred loading, on by default): an entry
// no expression reads is never evaluated, so neither its error nor its
// I/O happens. loadDeferred loads them.
func (s *scope) loadContext(entries []*contextEntry) error {
	if len(entries) == 0 {
		return nil
	}
	// the list may be shared with the parent: a copy, from the request's
	// slab of lists
	list := s.rs.deferredList(len(s.deferred) + len(entries))[:len(s.deferred)]
	copy(list, s.deferred)
	for _, ce := range entries {
		if ce.name == "" {
			continue // refused at compile time
		}
		list = append(list, s.rs.newDeferred(ce))
	}
	s.deferred, s.deferredOwned = list, true
	return nil
}

// deferredList returns an empty list of capacity n from the request's
// slab: a rule's entries are registered for every request, and their
// lists would be as many small allocations.
func (rs *reqState) deferredList(n int) []*deferredEntry {
	if cap(rs.listSlab)-len(rs.listSlab) < n {
		rs.listSlab = make([]*deferredEntry, 0, max(32, n))
	}
	l := len(rs.listSlab)
	rs.listSlab = rs.listSlab[:l+n]
	return rs.listSlab[l : l : l+n]
}

// newDeferred returns a deferredEntry of the request for ce, from a slab.
func (rs *reqState) newDeferred(ce *contextEntry) *deferredEntry {
	if len(rs.deferSlab) == cap(rs.deferSlab) {
		rs.deferSlab = make([]deferredEntry, 0, 16)
	}
	rs.deferSeq++
	rs.deferSlab = append(rs.deferSlab, deferredEntry{ce: ce, seq: rs.deferSeq})
	return &rs.deferSlab[len(rs.deferSlab)-1]
}

// deferredEntry is a context entry registered on a scope, shared with
// the scope's children: once loaded, in whichever scope, its value (or
// error) is the one every scope that reads it gets.
type deferredEntry struct {
	ce   *contextEntry
	seq  int // registration order: an entry loads only entries before it
	done bool
	v    any
	err  error
}

// deferredLoadError is the error of a context entry loaded for a query:
// upstream returns it from the query as is.
type deferredLoadError struct{ err error }

func (e *deferredLoadError) Error() string { return e.err.Error() }
func (e *deferredLoadError) Unwrap() error { return e.err }

// mentions reports whether query names a context entry, as upstream's
// deferred loader matches it (the regular expression
// (?:\A|\z|\s|[^.0-9A-Za-z])name\b): an occurrence of name not after a
// dot, a letter or a digit, ending at a word boundary. "x" is in "x.y",
// "length(x)" and "my_x" (upstream's class leaves "_" out), not in "y.x"
// or "xy".
func mentions(query, name string) bool {
	for from := 0; ; {
		i := strings.Index(query[from:], name)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(name)
		if (i == 0 || !nameByte(query[i-1])) && wordByte(query[end-1]) != (end < len(query) && wordByte(query[end])) {
			return true
		}
		from = i + 1
	}
}

// nameByte is upstream's [.0-9A-Za-z]; wordByte is \w, [0-9A-Za-z_].
func nameByte(c byte) bool { return c == '.' || isAlnum(c) }
func wordByte(c byte) bool { return c == '_' || isAlnum(c) }
func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// loadDeferred loads the entries registered on the scope that query names,
// first registered first, as upstream's deferred loaders: while an entry
// loads, only entries registered before it can load. An entry is applied
// once per scope; one that failed reports its error to the query that
// loads it and is then left out.
func (s *scope) loadDeferred(query string) error {
	for {
		i := -1
		for j, d := range s.deferred {
			if (s.loadLimit == 0 || d.seq < s.loadLimit) && mentions(query, d.ce.name) {
				i = j
				break
			}
		}
		if i < 0 {
			return nil
		}
		d := s.deferred[i]
		if s.deferredOwned {
			// no child shares the list (child clears deferredOwned)
			n := len(s.deferred)
			copy(s.deferred[i:], s.deferred[i+1:])
			s.deferred[n-1] = nil
			s.deferred = s.deferred[:n-1]
		} else {
			s.deferred = append(s.deferred[:i:i], s.deferred[i+1:]...)
			s.deferredOwned = true
		}
		if !d.done {
			limit := s.loadLimit
			s.loadLimit = d.seq
			d.v, d.err = s.loadEntry(d.ce)
			s.loadLimit = limit
			if d.err == nil {
				if raw, err := json.Marshal(d.v); err == nil && len(raw) > s.rs.e.cfg.limits.MaxContextBytes {
					d.err = &LimitError{Limit: "MaxContextBytes", msg: fmt.Sprintf("context entry %s: value of %d bytes exceeds the limit of %d", d.ce.name, len(raw), s.rs.e.cfg.limits.MaxContextBytes)}
				}
			}
			d.done = true
		}
		switch {
		case d.err == errSkipped:
		case d.err != nil:
			return &deferredLoadError{d.err}
		default:
			s.set(d.ce.name, d.v)
		}
	}
}

func (s *scope) loadEntry(ce *contextEntry) (any, error) {
	src := ce.src
	switch {
	case src.Variable != nil:
		return s.loadVariable(ce)
	case src.ConfigMap != nil:
		cms := s.rs.e.cfg.configMaps
		if cms == nil {
			return nil, s.notConfigured(ce, "configMap", "a ConfigMapResolver", "WithConfigMapResolver")
		}
		name, err := s.renderString(ce.cmName)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, err)
		}
		ns, err := s.renderString(ce.cmNamespace)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, err)
		}
		if ns == "" {
			ns = "default"
		}
		ctx, done := s.rs.hostContext()
		cm, err := cms.GetConfigMap(ctx, ns, name)
		err = done(err)
		if err != nil {
			return nil, fmt.Errorf("failed to retrieve config map for context entry %s: %w", ce.name, err)
		}
		return map[string]any{"data": cm["data"], "metadata": cm["metadata"]}, nil
	case src.APICall != nil:
		return s.loadAPICall(ce)
	case src.ImageRegistry != nil:
		rc := s.rs.e.cfg.registry
		if rc == nil {
			return nil, s.notConfigured(ce, "imageRegistry", "a RegistryClient", "WithRegistryClient")
		}
		ref, err := s.renderString(ce.reference)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, err)
		}
		ctx, done := s.rs.hostContext()
		data, err := rc.ImageData(ctx, ref, src.ImageRegistry.ImageRegistryCredentials)
		err = done(err)
		if err != nil {
			return nil, fmt.Errorf("failed to fetch image descriptor for context entry %s: %w", ce.name, err)
		}
		var out any = data
		if ce.regJMESP != nil {
			path, err := s.renderString(ce.regJMESP)
			if err != nil {
				return nil, err
			}
			if out, err = s.rs.e.jp.Search(path, data); err != nil {
				return nil, fmt.Errorf("failed to apply JMESPath (%s) results to context entry %s, error: %w", path, ce.name, err)
			}
		}
		return out, nil
	case src.GlobalReference != nil:
		g := s.rs.e.cfg.globalContext
		if g == nil {
			return nil, s.notConfigured(ce, "globalReference", "a GlobalContext", "WithGlobalContext")
		}
		name, err := s.renderString(ce.globalName)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, err)
		}
		ctx, done := s.rs.hostContext()
		v, err := g.GlobalContextEntry(ctx, name)
		err = done(err)
		if err != nil {
			return nil, fmt.Errorf("failed to load global context entry %s: %w", name, err)
		}
		if ce.globalJMESP == nil {
			return v, nil
		}
		path, err := s.renderString(ce.globalJMESP)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s JMESPath %s: %w", ce.name, src.GlobalReference.JMESPath, err)
		}
		return s.rs.e.jp.Search(path, v)
	}
	return nil, errSkipped
}

// loadVariable follows upstream's variable loader: value (substituted),
// optionally transformed by jmesPath; or jmesPath over the context; default
// when the result is nil.
func (s *scope) loadVariable(ce *contextEntry) (any, error) {
	path := ""
	if ce.jmesPath != nil {
		v, err := s.render(ce.jmesPath)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s %s: %w", ce.name, ce.src.Variable.JMESPath, err)
		}
		p, ok := v.(string)
		if !ok {
			// upstream's words, with its error, nil here
			return nil, fmt.Errorf("jmespath value must be a string %s %s: <nil>", ce.name, ce.src.Variable.JMESPath)
		}
		path = p
	}
	var def any
	if ce.def != nil {
		d, err := s.substitute(ce.def)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s %v: %w", ce.name, ce.src.Variable.Default, err)
		}
		def = d
	}
	output := def
	if ce.value != nil {
		v, err := s.substitute(ce.value)
		if err != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s %v: %w", ce.name, ce.src.Variable.Value, err)
		}
		if path != "" {
			r, err := s.rs.e.jp.Search(path, v)
			if err == nil {
				output = r
			} else if def == nil {
				return nil, fmt.Errorf("failed to apply jmespath %s to variable %v: %w", path, v, err)
			}
		} else {
			output = v
		}
	} else if path != "" {
		v, err := s.query(path)
		if err == nil {
			if v != nil {
				output = v
			}
		} else if def == nil {
			return nil, fmt.Errorf("failed to apply jmespath %s to variable %v: %w", path, v, err)
		}
	}
	if output == nil {
		return nil, fmt.Errorf("unable to add context entry for variable %s since it evaluated to nil", ce.name)
	}
	return output, nil
}

func (s *scope) loadAPICall(ce *contextEntry) (any, error) {
	var body []byte
	if len(ce.data) > 0 {
		m := map[string]any{}
		for _, d := range ce.data {
			v, err := s.substitute(d.value)
			if err != nil {
				return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, err)
			}
			m[d.key] = v
		}
		raw, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		body = raw
	}
	var raw []byte
	var err error
	if ce.service == nil {
		client := s.rs.e.cfg.apiClient
		if client == nil {
			return nil, s.notConfigured(ce, "apiCall", "an APIClient", "WithAPIClient")
		}
		path, perr := s.renderString(ce.urlPath)
		if perr != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, perr)
		}
		ctx, done := s.rs.hostContext()
		raw, err = client.RawAbsPath(ctx, path, ce.method, body)
		err = done(err)
		if err != nil {
			err = fmt.Errorf("failed to execute APICall for context entry %s: %w", ce.name, err)
		}
	} else {
		caller := s.rs.e.cfg.services
		if caller == nil {
			return nil, s.notConfigured(ce, "apiCall.service", "a ServiceCaller", "WithServiceCaller")
		}
		url, uerr := s.renderString(ce.service.url)
		if uerr != nil {
			return nil, fmt.Errorf("failed to substitute variables in context entry %s: %w", ce.name, uerr)
		}
		headers := map[string]string{}
		for _, h := range ce.service.headers {
			headers[h.Key] = h.Value
		}
		ctx, done := s.rs.hostContext()
		raw, err = caller.Call(ctx, ServiceRequest{URL: url, Method: ce.method, CABundle: ce.service.caBundle, Headers: headers, Body: body})
		err = done(err)
		if err != nil {
			err = fmt.Errorf("failed to execute HTTP request for context entry %s: %w", ce.name, err)
		}
	}
	if err == nil && len(raw) > s.rs.e.cfg.limits.MaxContextBytes {
		err = &LimitError{Limit: "MaxContextBytes", msg: fmt.Sprintf("context entry %s: response of %d bytes exceeds the limit of %d", ce.name, len(raw), s.rs.e.cfg.limits.MaxContextBytes)}
	}
	var data any
	if err == nil {
		if jerr := json.Unmarshal(raw, &data); jerr != nil {
			err = fmt.Errorf("failed to decode the response of context entry %s: %w", ce.name, jerr)
		}
	}
	if err == nil && ce.apiJMESP != nil {
		path, perr := s.renderString(ce.apiJMESP)
		if perr != nil {
			return nil, perr
		}
		data, err = s.rs.e.jp.Search(path, data)
		if err != nil {
			err = fmt.Errorf("failed to apply JMESPath (%s) results to context entry %s, error: %w", path, ce.name, err)
		}
	}
	if err != nil {
		if ce.apiDef != nil {
			return ce.apiDef, nil
		}
		return nil, err
	}
	return data, nil
}

// hostContext is the context of one call to a host interface: the
// request's, with the HostCallTimeout limit. done releases it and returns
// the call's error, marked as a *LimitError when the limit (not the
// request's own context) stopped the call.
func (rs *reqState) hostContext() (ctx context.Context, done func(error) error) {
	return rs.e.hostContext(rs.ctx)
}

// hostContext is rs.hostContext on parent: a call that is not one
// request's (a verification shared by concurrent requests).
func (e *Engine) hostContext(parent context.Context) (ctx context.Context, done func(error) error) {
	ctx, cancel := context.WithTimeout(parent, e.cfg.limits.HostCallTimeout)
	return ctx, func(err error) error {
		timedOut := err != nil && ctx.Err() != nil && parent.Err() == nil
		cancel()
		if !timedOut || errors.Is(err, ErrLimitExceeded) {
			return err
		}
		d := e.cfg.limits.HostCallTimeout
		return fmt.Errorf("%w (%w)", err, &LimitError{Limit: "HostCallTimeout", msg: "host call exceeded HostCallTimeout of " + d.String(), err: context.DeadlineExceeded})
	}
}
