package images

// Variable renders infos as the value of the `images` variable, the way
// upstream puts it in the rule context: for each container kind and name, a
// map with "name", "path" and "jsonPointer", plus "registry", "tag",
// "digest", "reference" and "referenceWithTag" when they are not empty.
// Variable returns nil when there are no images at all, in which case
// upstream does not define the variable. The result shares nothing with
// infos.
func Variable(infos map[string]map[string]Info) map[string]any {
	var out map[string]any
	for kind, byName := range infos {
		if len(byName) == 0 {
			continue
		}
		m := make(map[string]any, len(byName))
		for name, info := range byName {
			m[name] = info.value()
		}
		if out == nil {
			out = make(map[string]any, len(infos))
		}
		out[kind] = m
	}
	return out
}

// value is the map of one image, as upstream's JSON encoding of it gives.
func (i Info) value() map[string]any {
	v := make(map[string]any, 8)
	v["name"] = i.Name
	v["path"] = i.Path
	v["jsonPointer"] = i.Pointer
	set := func(k, s string) {
		if s != "" {
			v[k] = s
		}
	}
	set("registry", i.Registry)
	set("tag", i.Tag)
	set("digest", i.Digest)
	set("reference", i.String())
	set("referenceWithTag", i.ReferenceWithTag())
	return v
}
