package manifests

import "maps"

// DryRunObject is the object a dry run creates in place of the signed
// manifest, renamed as upstream's dry run renames it so that it never
// meets the resource itself: NAME-dry-run, or for a CRD simNAME with the
// kinds and names of its resource prefixed with Sim/sim; a namespaced
// resource's copy is created in namespace dryNS. The manifest is not
// modified (what changes is copied).
func DryRunObject(manifest, obj map[string]any, dryNS string) map[string]any {
	sim := maps.Clone(manifest)
	meta, _ := sim["metadata"].(map[string]any)
	meta = maps.Clone(meta)
	if meta == nil {
		meta = map[string]any{}
	}
	delete(meta, "namespace")
	if Ref(obj).Namespace != "" {
		meta["namespace"] = dryNS
	}
	name, _ := meta["name"].(string)
	crd := false
	if k, _ := sim["kind"].(string); k == "CustomResourceDefinition" {
		crd = true
		if spec, ok := sim["spec"].(map[string]any); ok {
			if names, ok := spec["names"].(map[string]any); ok {
				names = maps.Clone(names)
				for key, prefix := range map[string]string{"kind": "Sim", "listKind": "Sim", "singular": "sim", "plural": "sim"} {
					if v, ok := names[key].(string); ok {
						names[key] = prefix + v
					}
				}
				spec = maps.Clone(spec)
				spec["names"] = names
				sim["spec"] = spec
			}
		}
	}
	if name != "" {
		if crd {
			meta["name"] = "sim" + name
		} else {
			meta["name"] = name + "-dry-run"
		}
	}
	sim["metadata"] = meta
	return sim
}
