package migrate

import (
	"fmt"
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
	obj    ex
	cond   ex
	atomic bool
}

// smpRoot converts a whole patchStrategicMerge applied to the object.
func (c *jp) smpRoot(patch any, path string) (smpResult, error) {
	m, ok := patch.(map[string]any)
	if !ok {
		return smpResult{}, unsupportedf("patchStrategicMerge", "at %s: not a map", path)
	}
	return c.smpMap(m, vref{e: c.sc.object, present: exTrue, t: tMap}, "Object", path)
}

// smpMap converts a map patch applied to the map value v, as the type
// typeName.
func (c *jp) smpMap(m map[string]any, v vref, typeName, path string) (smpResult, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fields []string
	var conds []ex
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
		if anchored {
			switch a.Type {
			case patterns.Condition, patterns.Global:
				t, err := c.pattern(vref{e: ch.e, present: exTrue, key: name, t: ch.t}, val, "")
				if err != nil {
					return smpResult{}, at(kpath, err)
				}
				conds = append(conds, and(ch.present, t.passes()))
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
		value, err := c.smpValue(val, ch, typeName+"."+name, kpath)
		if err != nil {
			return smpResult{}, err
		}
		atomic = atomic || value.atomic
		if !value.cond.isTrue() && value.cond.s != "" {
			conds = append(conds, value.cond)
		}
		if free {
			fields = append(fields, strLit(name).s+": "+value.obj.s)
			continue
		}
		if !isIdent(name) {
			return smpResult{}, unsupportedf("field "+name, "at %s: not an identifier of a typed object", kpath)
		}
		fields = append(fields, name+": "+value.obj.s)
	}
	if free {
		return smpResult{obj: ex{s: "{" + strings.Join(fields, ", ") + "}", prec: precPrimary}, cond: and(conds...), atomic: atomic}, nil
	}
	return smpResult{obj: typed(typeName, fields), cond: and(conds...), atomic: atomic}, nil
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

// smpValue converts the patch value of a field whose resource value is v.
func (c *jp) smpValue(val any, v vref, typeName, path string) (smpResult, error) {
	switch t := val.(type) {
	case map[string]any:
		r, err := c.smpMap(t, v, typeName, path)
		if err != nil {
			return smpResult{}, err
		}
		return smpResult{obj: r.obj, cond: r.cond, atomic: r.atomic}, nil
	case []any:
		return c.smpList(t, v, typeName, path)
	case keyRef:
		return smpResult{obj: v.e, cond: exTrue}, nil
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
		d, err := c.document(list)
		if err != nil {
			return smpResult{}, at(path, err)
		}
		return smpResult{obj: d.value(exNull), cond: exTrue, atomic: true}, nil
	}
	var parts []ex
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
			list = cond(v.present, v.e, listOf())
		}
		sel := list
		if !r.cond.isTrue() {
			sel = macro(list, "filter", x, r.cond)
		}
		parts = append(parts, macro(sel, "map", x, r.obj))
		c.release(x)
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = add(out, p)
	}
	return smpResult{obj: out, cond: exTrue}, nil
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
