package images

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	jmespath "github.com/jmespath-community/go-jmespath"
)

// Error reports why images could not be extracted from a resource. Its
// message is upstream's, word for word; Pointer says where the problem is.
type Error struct {
	// Pointer locates the problem in the resource, in upstream's unescaped
	// JSON pointer form ("/spec/containers/0/image"), or in the extractor
	// configuration.
	Pointer string
	// Image is the image string, when the problem is the image itself.
	Image string
	// Reason is upstream's wording of the problem.
	Reason string
	// Err is the cause, if any (a *ParseError for a bad image).
	Err error
}

func (e *Error) Error() string {
	if e.Image != "" && e.Err != nil {
		return fmt.Sprintf("invalid image '%s' (%s)", e.Image, e.Err.Error())
	}
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Extractor finds the images of resources. It is built once from a Config by
// NewExtractor, is immutable, and is safe for concurrent use.
type Extractor struct {
	cfg    Config                 // registry settings only; Extractors are compiled into custom
	custom map[string][]extractor // by kind; an empty list is an error at extraction
}

// extractor is one compiled extraction rule: walk fields ('*' expands) to an
// object, read the image at value and the identifying key at key.
type extractor struct {
	name     string
	fields   []string
	key      string
	value    string
	jmesPath string
	query    Searcher
	queryErr error
}

var builtinExtractors = func() map[string][]extractor {
	standard := func(prefix ...string) []extractor {
		var out []extractor
		for _, kind := range []string{"initContainers", "containers", "ephemeralContainers"} {
			fields := append(slices.Clone(prefix), kind, "*")
			out = append(out, extractor{name: kind, fields: fields, key: "name", value: "image"})
		}
		return out
	}
	pod := standard("spec")
	controller := standard("spec", "template", "spec")
	return map[string][]extractor{
		"Pod":                   pod,
		"DaemonSet":             controller,
		"Deployment":            controller,
		"ReplicaSet":            controller,
		"ReplicationController": controller,
		"StatefulSet":           controller,
		"Job":                   controller,
		"CronJob":               standard("spec", "jobTemplate", "spec", "template", "spec"),
	}
}()

// NewExtractor compiles cfg. It fails only when the configuration itself is
// unusable by any resource: an extractor whose path names no field. A
// JMESPath expression that does not compile is reported, as upstream does,
// when an image is found for it.
func NewExtractor(cfg Config) (*Extractor, error) {
	x := &Extractor{cfg: Config{DefaultRegistry: cfg.DefaultRegistry, EnableDefaultRegistryMutation: cfg.EnableDefaultRegistryMutation}}
	if len(cfg.Extractors) == 0 {
		return x, nil
	}
	compile := cfg.CompileJMESPath
	if compile == nil {
		compile = func(expr string) (Searcher, error) {
			q, err := jmespath.Compile(expr)
			if err != nil {
				return nil, err
			}
			return q, nil
		}
	}
	x.custom = make(map[string][]extractor, len(cfg.Extractors))
	kinds := make([]string, 0, len(cfg.Extractors))
	for kind := range cfg.Extractors {
		kinds = append(kinds, kind)
	}
	slices.Sort(kinds)
	for _, kind := range kinds {
		configs := cfg.Extractors[kind]
		list := make([]extractor, 0, len(configs))
		for i, c := range configs {
			var fields []string
			for _, f := range strings.Split(c.Path, "/") {
				if f = strings.Trim(f, " "); f != "" {
					fields = append(fields, f)
				}
			}
			e := extractor{name: c.Name, key: c.Key, value: c.Value, jmesPath: c.JMESPath}
			if e.name == "" {
				e.name = "custom"
			}
			if e.value == "" {
				if len(fields) == 0 {
					return nil, &Error{
						Pointer: "imageExtractors." + kind + "[" + strconv.Itoa(i) + "].path",
						Reason:  fmt.Sprintf("path %q names no field", c.Path),
					}
				}
				e.value = fields[len(fields)-1]
				fields = fields[:len(fields)-1]
			}
			e.fields = fields
			if c.JMESPath != "" {
				e.query, e.queryErr = compile(c.JMESPath)
				if e.queryErr == nil && e.query == nil {
					e.queryErr = fmt.Errorf("compiler returned no query")
				}
			}
			list = append(list, e)
		}
		x.custom[kind] = list
	}
	return x, nil
}

// Extract returns the images of resource by container kind ("containers",
// "initContainers", "ephemeralContainers", or an extractor's name) and then
// by container name (or by the extractor's key). Kinds without images are
// absent; a resource without images gives an empty map. The resource is not
// modified.
func (x *Extractor) Extract(resource map[string]any) (map[string]map[string]Info, error) {
	kind, _ := resource["kind"].(string)
	extractors, custom := x.custom[kind]
	if !custom {
		extractors = builtinExtractors[kind]
	} else if len(extractors) == 0 {
		return nil, &Error{Reason: "no extractors found for " + kind}
	}
	out := map[string]map[string]Info{}
	for _, e := range extractors {
		found := map[string]Info{}
		if err := x.walk(&e, resource, nil, e.fields, nil, found); err != nil {
			return nil, err
		}
		if len(found) > 0 {
			out[e.name] = found
		}
	}
	return out, nil
}

// Extract is NewExtractor(cfg) followed by Extract(resource). Prefer building
// the Extractor once when cfg has extractors with JMESPath expressions.
func Extract(resource map[string]any, cfg Config) (map[string]map[string]Info, error) {
	x, err := NewExtractor(cfg)
	if err != nil {
		return nil, err
	}
	return x.Extract(resource)
}

func (x *Extractor) walk(e *extractor, obj any, path, fields, secrets []string, found map[string]Info) error {
	if obj == nil {
		return nil
	}
	if len(fields) > 0 && fields[0] == "*" {
		switch t := obj.(type) {
		case []any:
			for i, v := range t {
				if err := x.walk(e, v, append(path, strconv.Itoa(i)), fields[1:], secrets, found); err != nil {
					return err
				}
			}
			return nil
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if err := x.walk(e, t[k], append(path, k), fields[1:], secrets, found); err != nil {
					return err
				}
			}
			return nil
		}
		return &Error{Pointer: pointer(path, ""), Reason: "invalid type"}
	}
	m, ok := obj.(map[string]any)
	if !ok {
		return &Error{Pointer: pointer(path, ""), Reason: "invalid image config"}
	}
	if list, ok := m["imagePullSecrets"].([]any); ok {
		for _, s := range list {
			if sm, ok := s.(map[string]any); ok {
				if name, ok := sm["name"].(string); ok {
					secrets = append(slices.Clip(secrets), name)
				}
			}
		}
	}
	if len(fields) > 0 {
		return x.walk(e, m[fields[0]], append(path, fields[0]), fields[1:], secrets, found)
	}
	ptr := pointer(path, e.value)
	key := ptr
	if e.key != "" {
		if key, ok = m[e.key].(string); !ok {
			return &Error{Pointer: pointer(path, e.key), Reason: "invalid key"}
		}
	}
	image, ok := m[e.value].(string)
	if !ok || strings.TrimSpace(image) == "" {
		return nil
	}
	if e.jmesPath != "" {
		if e.queryErr != nil {
			return &Error{Pointer: ptr, Reason: "invalid jmespath " + e.jmesPath, Err: e.queryErr}
		}
		result, err := e.query.Search(image)
		if err != nil {
			return &Error{Pointer: ptr, Reason: "failed to apply jmespath " + e.jmesPath, Err: err}
		}
		s, ok := result.(string)
		if !ok {
			return &Error{Pointer: ptr, Reason: fmt.Sprintf("jmespath %s must produce a string, but produced %v", e.jmesPath, result)}
		}
		image = s
	}
	info, err := Parse(image, x.cfg)
	if err != nil {
		return &Error{Pointer: ptr, Image: image, Err: err}
	}
	info.Pointer = ptr
	info.ImagePullSecrets = slices.Clone(secrets)
	found[key] = info
	return nil
}

// pointer renders a path the way upstream does: "/a/b/leaf", without
// escaping, and "//leaf" for an empty path.
func pointer(path []string, leaf string) string {
	p := "/" + strings.Join(path, "/")
	if leaf != "" {
		p += "/" + leaf
	}
	return p
}
