package migrate

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gavelpolicy/gavel/internal/patterns"
)

// A patchStrategicMerge becomes an ApplyConfiguration: the Object{...} of
// the fields it sets, merged by the API server's structured merge. Lists
// of the built-in kinds merge by their keys (containers by name), as a
// strategic merge does; anchors become CEL: a condition anchor on a list
// element selects the resource's elements it patches (filter, then one
// element per selected one, named by its key), add-if-not-present keeps
// the resource's value when there is one, a global anchor is a condition
// of the whole patch.

// freeMaps are the fields that hold maps of any keys (labels), written as
// map literals; other maps are typed objects (Object.spec.securityContext).
var freeMaps = map[string]bool{
	"labels": true, "annotations": true, "nodeSelector": true, "data": true, "stringData": true,
	"binaryData": true, "matchLabels": true, "limits": true, "requests": true, "capacity": true,
	"allocatable": true, "parameters": true, "hard": true, "overhead": true, "sysctls": false,
}

// listKeys are the keys the API server merges lists of the built-in kinds
// by (their list-map keys); a list not here is atomic: an apply replaces it.
var listKeys = map[string]string{
	"containers": "name", "initContainers": "name", "ephemeralContainers": "name", "volumes": "name",
	"env": "name", "imagePullSecrets": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
	"ports": "containerPort", "hostAliases": "ip", "readinessGates": "conditionType",
	"topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
}

// smpResult is a converted patch: the object to apply, and the
// conditions under which it applies (condition anchors on maps, global
// anchors), with atomic reporting that the patch replaces atomic lists.
type smpResult struct {
	obj ex
	// cond selects what the patch applies to (condition anchors: the
	// elements of a list, the whole patch elsewhere); global is the
	// condition of the whole patch (global anchors)
	cond, global ex
	atomic       bool
	// empty marks a value that patches nothing (a list element of
	// anchors only)
	empty bool
	// patches are JSON patch operations of the maps an apply cannot
	// merge (atomic maps: nodeSelector)
	patches []ex
	// roots are the fields of a map's object, and typeName its type
	roots    []rootField
	typeName string
	// perElement are the free maps (labels, annotations) whose keys or
	// values read the foreach element: their text, keys and values
	perElement []elementMap
}

// elementMap is a free map of a foreach patch that reads the element.
type elementMap struct {
	text       string
	keys, vals []ex
}

// rootField is a field of a converted map: its value, and the empty
// value of its type.
type rootField struct {
	name         string
	value, empty ex
}

// emptyOf is the value that sets nothing for a patch value.
func emptyOf(val any, typeName string, free bool) ex {
	switch val.(type) {
	case map[string]any:
		if free {
			return ex{s: "{}", prec: precPrimary}
		}
		return ex{s: typeName + "{}", prec: precPrimary}
	case []any:
		return listOf()
	}
	return exNull
}

// guarded is the object of a converted map with each field set only
// when g holds: Type{f: g ? value : Type.f{}}. An ApplyConfiguration so
// written keeps the form Object{...} that Pod controller generation
// rewrites.
func (r smpResult) guarded(g ex) ex {
	if g.isTrue() {
		return r.obj
	}
	fields := make([]string, len(r.roots))
	for i, f := range r.roots {
		fields[i] = f.name + ": " + cond(g, f.value, f.empty).s
	}
	return typed(r.typeName, fields)
}

// atomicMaps are the maps of the built-in kinds that an apply replaces
// as a whole (a strategic merge merges their keys): they are patched key
// by key.
var atomicMaps = map[string]bool{"nodeSelector": true}

// smpRoot converts a whole patchStrategicMerge applied to the object.
func (c *jp) smpRoot(patch any, path string) (smpResult, error) {
	m, ok := patch.(map[string]any)
	if !ok {
		return smpResult{}, unsupportedf("patchStrategicMerge", "at %s: not a map", path)
	}
	root := c.sc.object
	if c.sc.patched != nil {
		root = *c.sc.patched
	}
	return c.smpMapAt(m, vref{e: root, present: exTrue, t: tMap}, "Object", "", path)
}

// smpMap is smpMapAt where JSON pointers are not known (in a list).
func (c *jp) smpMap(m map[string]any, v vref, typeName, path string) (smpResult, error) {
	return c.smpMapAt(m, v, typeName, "-", path)
}

// smpMap converts a map patch applied to the map value v, as the type
// typeName.
func (c *jp) smpMapAt(m map[string]any, v vref, typeName, ptr, path string) (smpResult, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fields []string
	var roots []rootField
	var conds, globals []ex
	var patches []ex
	var perElement []elementMap
	var freeKeys, freeVals []ex
	atomic := false
	free := freeMaps[v.key]
	for _, k := range keys {
		val := m[k]
		kpath := path + "." + k
		if k == "$patch" || strings.HasPrefix(k, "$setElementOrder") || strings.HasPrefix(k, "$retainKeys") || strings.HasPrefix(k, "$deleteFromPrimitiveList") {
			return smpResult{}, unsupportedf("strategic merge directive "+k, "at %s", kpath)
		}
		a, anchored := patterns.ParseAnchor(k)
		name := k
		if anchored {
			name = a.Key
		}
		ch := c.child(v, name)
		if !v.present.isTrue() {
			// the field is there when its map is
			ch.present = and(v.present, ch.present)
		}
		if anchored {
			switch a.Type {
			case patterns.Condition:
				t, err := c.pattern(vref{e: ch.e, present: exTrue, key: name, t: ch.t}, val, "")
				if err != nil {
					return smpResult{}, at(kpath, err)
				}
				conds = append(conds, and(ch.present, t.passes()))
				continue
			case patterns.Global:
				t, err := c.pattern(vref{e: ch.e, present: exTrue, key: name, t: ch.t}, val, "")
				if err != nil {
					return smpResult{}, at(kpath, err)
				}
				globals = append(globals, and(ch.present, t.passes()))
				continue
			case patterns.AddIfNotPresent:
				value, err := c.smpValue(val, ch, typeName+"."+name, kpath)
				if err != nil {
					return smpResult{}, err
				}
				atomic = atomic || value.atomic
				e := cond(ch.present, ch.e, value.obj)
				if free {
					fields = append(fields, strLit(name).s+": "+e.s)
				} else {
					if !isIdent(name) {
						return smpResult{}, unsupportedf("field "+name, "at %s: not an identifier of a typed object", kpath)
					}
					fields = append(fields, name+": "+e.s)
				}
				continue
			}
			return smpResult{}, unsupportedf("anchor "+k, "at %s: not a mutate anchor", kpath)
		}
		if val == nil {
			return smpResult{}, unsupportedf("null", "at %s: deleting a field (an apply cannot)", kpath)
		}
		if vm, ok := val.(map[string]any); ok && atomicMaps[name] && !free {
			if ptr == "-" {
				return smpResult{}, unsupportedf("field "+name, "at %s: an atomic map in a list element", kpath)
			}
			ps, err := c.mapPatches(vm, ch, ptr+"/"+jsonPointerEscape(name), kpath)
			if err != nil {
				return smpResult{}, err
			}
			patches = append(patches, ps...)
			continue
		}
		childPtr := "-"
		if ptr != "-" {
			childPtr = ptr + "/" + jsonPointerEscape(name)
		}
		value, err := c.smpValueAt(val, ch, typeName+"."+name, childPtr, kpath)
		if err != nil {
			return smpResult{}, err
		}
		atomic = atomic || value.atomic
		patches = append(patches, value.patches...)
		perElement = append(perElement, value.perElement...)
		if value.cond.s != "" && !value.cond.isTrue() {
			conds = append(conds, and(ch.present, value.cond))
		}
		if value.global.s != "" && !value.global.isTrue() {
			if _, isList := val.([]any); isList {
				// the list's elements: none when it is missing
				globals = append(globals, value.global)
			} else {
				globals = append(globals, and(ch.present, value.global))
			}
		}
		if value.empty {
			continue
		}
		if free {
			key := strLit(name)
			if strings.Contains(name, "{{") {
				// a key given by variables: its value
				kv, err := c.str(name)
				if err != nil {
					return smpResult{}, at(kpath, err)
				}
				key = kv.value(strLit(""))
			}
			fields = append(fields, key.s+": "+value.obj.s)
			freeKeys, freeVals = append(freeKeys, key), append(freeVals, value.obj)
			roots = append(roots, rootField{name: key.s, value: value.obj, empty: emptyOf(val, typeName+"."+name, true)})
			continue
		}
		if !isIdent(name) {
			return smpResult{}, unsupportedf("field "+name, "at %s: not an identifier of a typed object", kpath)
		}
		fields = append(fields, name+": "+value.obj.s)
		roots = append(roots, rootField{name: name, value: value.obj, empty: emptyOf(val, typeName+"."+name, freeMaps[name])})
	}
	out := smpResult{cond: and(conds...), global: and(globals...), atomic: atomic, patches: patches, empty: len(fields) == 0,
		roots: roots, typeName: typeName, perElement: perElement}
	if free {
		out.obj = ex{s: "{" + strings.Join(fields, ", ") + "}", prec: precPrimary}
		if el, ok := c.sc.lookup("element"); ok && mentions(out.obj.s, el.e.s) {
			out.perElement = append(out.perElement, elementMap{text: out.obj.s, keys: freeKeys, vals: freeVals})
		}
	} else {
		out.obj = typed(typeName, fields)
	}
	return out, nil
}

// jsonPointerEscape escapes a key for a JSON pointer.
func jsonPointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// mapPatches patches a map key by key (JSON patch adds), creating it
// when the resource has none.
func (c *jp) mapPatches(m map[string]any, v vref, ptr, path string) ([]ex, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var adds []ex
	var whole []string
	for _, k := range keys {
		if patterns.IsAnchor(k) {
			return nil, unsupportedf("anchor "+k, "at %s: in an atomic map", path)
		}
		d, err := c.document(m[k])
		if err != nil {
			return nil, at(path+"."+k, err)
		}
		val := d.value(exNull)
		adds = append(adds, typed("JSONPatch", []string{"op: 'add'", "path: " + strLit(ptr+"/"+jsonPointerEscape(k)).s, "value: " + val.s}))
		whole = append(whole, strLit(k).s+": "+val.s)
	}
	create := patchList([]ex{typed("JSONPatch", []string{"op: 'add'", "path: " + strLit(ptr).s, "value: {" + strings.Join(whole, ", ") + "}"})})
	if v.present.isTrue() {
		return []ex{patchList(adds)}, nil
	}
	return []ex{cond(v.present, patchList(adds), create)}, nil
}

// typed is the object initializer Type{fields}, on several lines when
// long.
func typed(typeName string, fields []string) ex {
	s := typeName + "{" + strings.Join(fields, ", ") + "}"
	if len(s) > lineWidth {
		s = typeName + "{\n" + indent(strings.Join(fields, ",\n")) + "\n}"
	}
	return ex{s: s, prec: precPrimary}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// currentRE is a {{ @ }} template; currentName is the name the
// converter binds the current value to.
var currentRE = regexp.MustCompile(`\{\{-?\s*@\s*\}\}`)

const currentName = "__gavel_current"

// smpValue converts the patch value of a field whose resource value is v.
func (c *jp) smpValue(val any, v vref, typeName, path string) (smpResult, error) {
	return c.smpValueAt(val, v, typeName, "-", path)
}

// smpValueAt is smpValue with the value's JSON pointer ("-" in a list).
func (c *jp) smpValueAt(val any, v vref, typeName, ptr, path string) (smpResult, error) {
	switch t := val.(type) {
	case map[string]any:
		return c.smpMapAt(t, v, typeName, ptr, path)
	case []any:
		return c.smpList(t, v, typeName, path)
	case keyRef:
		return smpResult{obj: v.e, cond: exTrue}, nil
	case string:
		if currentRE.MatchString(t) {
			// {{ @ }}: the value of the field in the resource patched
			saved := c.sc
			c.sc = saved.child()
			defer func() { c.sc = saved }()
			c.sc.names[currentName] = jv{e: v.e, t: v.t, key: v.key}
			val = currentRE.ReplaceAllString(t, "{{ "+currentName+" }}")
		}
	}
	d, err := c.document(val)
	if err != nil {
		return smpResult{}, at(path, err)
	}
	return smpResult{obj: d.value(exNull), cond: exTrue}, nil
}

// smpList converts a list patch: a keyed list merges by its key (each
// element with a condition anchor patches the resource's elements that
// satisfy it), any other list replaces the resource's.
func (c *jp) smpList(list []any, v vref, typeName, path string) (smpResult, error) {
	key, keyed := listKeys[v.key]
	if !keyed {
		// an atomic list: replaced, its maps typed
		parts := make([]ex, len(list))
		for i, el := range list {
			epath := fmt.Sprintf("%s[%d]", path, i)
			if m, ok := el.(map[string]any); ok {
				if holdsAnchor(m) {
					return smpResult{}, unsupportedf("anchors", "at %s: in an element of a list without keys", epath)
				}
				r, err := c.smpMap(m, vref{e: ident("_"), present: exFalse, key: singular(v.key)}, typeName, epath)
				if err != nil {
					return smpResult{}, err
				}
				parts[i] = r.obj
				continue
			}
			d, err := c.document(el)
			if err != nil {
				return smpResult{}, at(epath, err)
			}
			parts[i] = d.value(exNull)
		}
		return smpResult{obj: listOf(parts...), cond: exTrue, atomic: true}, nil
	}
	var parts, globals []ex
	// named are the keys of the elements the patch names; every that an
	// element patches every element of the resource
	var named []ex
	allNamed, every := true, false
	atomic := false
	for i, el := range list {
		epath := fmt.Sprintf("%s[%d]", path, i)
		m, ok := el.(map[string]any)
		if !ok {
			return smpResult{}, unsupportedf("list element", "at %s: not a map in a keyed list", epath)
		}
		if !holdsAnchor(m) {
			r, err := c.smpMap(m, vref{e: ident("_"), present: exFalse, key: singular(v.key)}, typeName, epath)
			if err != nil {
				return smpResult{}, err
			}
			if strings.Contains(r.obj.s, "_.") || strings.Contains(r.obj.s, "(_)") {
				return smpResult{}, unsupportedf("list element", "at %s: an add-if-not-present anchor of a new element", epath)
			}
			parts = append(parts, listOf(r.obj))
			if kv, ok := m[key]; ok {
				k, err := c.document(kv)
				if err != nil {
					return smpResult{}, at(epath+"."+key, err)
				}
				named = append(named, listOf(k.value(exNull)))
			} else {
				allNamed = false
			}
			continue
		}
		// conditions select the resource's elements; each keeps its key
		x := c.fresh(v.key)
		elRef := vref{e: ident(x), present: exTrue, key: singular(v.key)}
		r, err := c.smpMap(withKey(m, key), elRef, typeName, epath)
		if err != nil {
			c.release(x)
			return smpResult{}, err
		}
		list := v.e
		if !v.present.isTrue() {
			list = method(optField(parentOf(v.e), v.key), "orValue", listOf())
		}
		atomic = atomic || r.atomic
		if !r.global.isTrue() {
			// a global anchor in an element: the patch applies when an
			// element satisfies it
			globals = append(globals, macro(list, "exists", x, r.global))
		}
		if bare, err := c.smpMap(m, elRef, typeName, epath); err == nil && bare.empty {
			// nothing to set beside the anchors
			c.release(x)
			continue
		}
		sel := list
		if !r.cond.isTrue() {
			sel = macro(list, "filter", x, r.cond)
		} else {
			every = true
		}
		parts = append(parts, macro(sel, "map", x, r.obj))
		named = append(named, macro(sel, "map", x, field(ident(x), key)))
		c.release(x)
	}
	if len(parts) == 0 {
		return smpResult{cond: exTrue, global: and(globals...), empty: true, atomic: atomic}, nil
	}
	if _, inForeach := c.sc.lookup("element"); !every && allNamed && !inForeach && !v.present.isFalse() {
		// a strategic merge puts the elements it names first, the others
		// after them: an apply keeps the order of the list it is given
		list := v.e
		if !v.present.isTrue() {
			list = method(optField(parentOf(v.e), v.key), "orValue", listOf())
		}
		y := c.fresh(v.key)
		names := joinPatches(named)
		rest := macro(macro(list, "filter", y, not(rel(field(ident(y), key), "in", names))), "map", y,
			typed(typeName, []string{key + ": " + field(ident(y), key).s}))
		c.release(y)
		parts = append(parts, rest)
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = add(out, p)
	}
	return smpResult{obj: out, cond: exTrue, global: and(globals...), atomic: atomic}, nil
}

// onlyKey reports a patch element that sets nothing but anchors (and
// the key).
func onlyKey(m map[string]any, key string) bool {
	for k := range m {
		if patterns.IsAnchor(k) && !strings.HasPrefix(k, "+(") || k == key {
			continue
		}
		return false
	}
	return true
}

// parentOf is the map expression a field expression selects from.
func parentOf(e ex) ex {
	s := e.s
	if strings.HasSuffix(s, "]") {
		if i := strings.LastIndex(s, "["); i > 0 {
			return ex{s: s[:i], prec: precPrimary}
		}
	}
	if i := strings.LastIndex(s, "."); i > 0 {
		return ex{s: s[:i], prec: precPrimary}
	}
	return e
}

// withKey adds the list key to a patch element that selects resource
// elements by anchors: the element it patches is named by its own key.
func withKey(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	for k := range m {
		if patterns.RemoveAnchor(k) == key && !strings.HasPrefix(k, "(") {
			return out
		}
	}
	out[key] = keyRef(key)
	return out
}

// keyRef marks the value of a list key taken from the resource element.
type keyRef string
