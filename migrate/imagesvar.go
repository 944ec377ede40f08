package migrate

import (
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// Kyverno's images variable: the images of a Pod spec's containers,
// initContainers and ephemeralContainers, by container name, each parsed
// as Kyverno parses an image (docker.io the default registry, latest the
// default tag). The conversion is a variable, images, that builds the
// same map from the object with the strings library and
// transform.listObjToMap.

// Keys that mark the values of the images variable: the variable, a map
// of image infos by container name, an image info.
const (
	imagesKey     = "\x00images"
	imagesListKey = "\x00imagesList"
	imageInfoKey  = "\x00imageInfo"
)

// imagesKeys are the type and key of a field of an images value, by the
// key of the value.
var imagesKeys = map[string]struct {
	t   vtype
	key string
}{
	imagesKey:     {tMap, imagesListKey},
	imagesListKey: {tMap, imageInfoKey},
	imageInfoKey:  {tString, ""},
}

// podSpecPaths are the paths of the Pod spec in the kinds Kyverno reads
// images from.
var podSpecPaths = map[string]string{
	"Pod":                   "spec",
	"DaemonSet":             "spec.template.spec",
	"Deployment":            "spec.template.spec",
	"ReplicaSet":            "spec.template.spec",
	"ReplicationController": "spec.template.spec",
	"StatefulSet":           "spec.template.spec",
	"Job":                   "spec.template.spec",
	"CronJob":               "spec.jobTemplate.spec.template.spec",
}

// podSpecOf is the path of the Pod spec in the kinds a rule matches: ""
// when the kinds hold none or Pod specs at different paths.
func podSpecOf(r *api.Rule) string {
	fs, _ := filters(&r.MatchResources)
	path := ""
	for _, f := range fs {
		for _, k := range f.Kinds {
			if i := strings.LastIndexByte(k, '/'); i >= 0 {
				k = k[i+1:]
			}
			p, ok := podSpecPaths[k]
			if !ok || path != "" && p != path {
				return ""
			}
			path = p
		}
	}
	return path
}

// imagesVariable is Kyverno's images variable as a variable of the
// output.
func (c *jp) imagesVariable() (jv, error) {
	if c.pv == nil {
		return jv{}, unsupportedf("variable images", "outside a rule")
	}
	if c.podSpec == "" {
		return jv{}, unsupportedf("variable images", "the rule's kinds do not hold their Pod spec at one path (Kyverno reads the images of Pods and Pod controllers)")
	}
	v := variable{name: "images", expr: ex{s: imagesExpr(c.sc.object.s + "." + c.podSpec), prec: precPrimary}, t: tMap, builtin: true,
		note: "Kyverno's images variable: the images of the containers by container name, parsed as Kyverno parses them (docker.io the default registry, latest the default tag)"}
	name := c.pv.add(v, c.rule)
	return jv{e: ident("variables." + name), t: tMap, key: imagesKey}, nil
}

// imagesExpr builds the images map of the Pod spec at spec: a key per
// container list that has images.
func imagesExpr(spec string) string {
	var b strings.Builder
	b.WriteString("{\n")
	for i, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString("  ?'" + list + "': cel.bind(cs, " + spec + ".?" + list + ".orValue([]).filter(c, c.?image.orValue('').trim() != ''),\n")
		b.WriteString("    size(cs) == 0 ? optional.none() : optional.of(transform.listObjToMap(cs, cs.map(c, {'info': " + imageInfoExpr("c.image") + "}), 'name', 'info')))")
	}
	b.WriteString("\n}")
	return b.String()
}

// imageInfoExpr is Kyverno's image info of the image img: registry,
// name, path, tag, digest, reference and referenceWithTag.
func imageInfoExpr(img string) string {
	return strings.Join([]string{
		"cel.bind(i, " + img + ", cel.bind(first, i.split('/')[0],",
		"cel.bind(full, i.contains('/') && (first.contains('.') || first.contains(':') || first == 'localhost' || first.lowerAscii() != first) ? i : 'docker.io/' + i,",
		"cel.bind(registry, full.split('/')[0], cel.bind(rest, full.substring(registry.size() + 1),",
		"cel.bind(digest, rest.contains('@') ? rest.split('@')[1] : '', cel.bind(named, rest.split('@')[0],",
		"cel.bind(tagged, named.lastIndexOf(':') > named.lastIndexOf('/'),",
		"cel.bind(tag, tagged ? named.substring(named.lastIndexOf(':') + 1) : (digest == '' ? 'latest' : ''),",
		"cel.bind(path, tagged ? named.substring(0, named.lastIndexOf(':')) : named,",
		"{'registry': registry, 'name': path.substring(path.lastIndexOf('/') + 1), 'path': path,",
		" ?'tag': tag == '' ? optional.none() : optional.of(tag), ?'digest': digest == '' ? optional.none() : optional.of(digest),",
		" 'reference': registry + '/' + path + (digest == '' ? ':' + tag : '@' + digest), 'referenceWithTag': registry + '/' + path + ':' + tag}",
		"))))))))))",
	}, "\n      ")
}
