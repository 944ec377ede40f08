package patterns

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// outcome is what a Match call reports, in the terms of Kyverno's engine.
type outcome struct {
	status string // pass, fail, skip or error
	path   string
	msg    string
}

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

func run(t testing.TB, pattern, resource string) outcome {
	t.Helper()
	p, err := Compile(mustJSON(t, pattern))
	if err != nil {
		t.Fatalf("Compile(%s): %v", pattern, err)
	}
	return toOutcome(t, p.Match(mustJSON(t, resource)))
}

func toOutcome(t testing.TB, err error) outcome {
	t.Helper()
	if err == nil {
		return outcome{status: "pass"}
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("Match returned %T, want *Error", err)
	}
	return outcome{status: string(pe.Status()), path: pe.Path, msg: pe.Error()}
}

type matchCase struct {
	name     string
	pattern  string
	resource string
	want     outcome
}

func runCases(t *testing.T, cases []matchCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := run(t, tc.pattern, tc.resource)
			if tc.want.msg == "" && tc.want.status != "pass" {
				// Only the status is asserted.
				got.path, got.msg = tc.want.path, ""
			}
			if got != tc.want {
				t.Errorf("\npattern:  %s\nresource: %s\ngot:  %+v\nwant: %+v", tc.pattern, tc.resource, got, tc.want)
			}
		})
	}
}

func pass() outcome { return outcome{status: "pass"} }
func fail(path, msg string) outcome {
	return outcome{status: "fail", path: path, msg: msg}
}
func skip(msg string) outcome    { return outcome{status: "skip", msg: msg} }
func errored(msg string) outcome { return outcome{status: "error", msg: msg} }

func TestMatchStructure(t *testing.T) {
	runCases(t, []matchCase{
		{"fields match", `{"spec":{"replicas":">=2","paused":false}}`, `{"spec":{"replicas":3,"paused":false,"extra":1}}`, pass()},
		{"empty pattern", `{}`, `{"metadata":{"name":"x"}}`, pass()},
		{"missing field", `{"spec":{"x":"?*"}}`, `{"spec":{}}`,
			fail("/spec/x/", "resource value '<nil>' does not match '?*' at path /spec/x/")},
		{"null pattern, missing field", `{"spec":{"x":null}}`, `{"spec":{}}`, pass()},
		{"null pattern, null field", `{"spec":{"x":null}}`, `{"spec":{"x":null}}`, pass()},
		{"null pattern, set field", `{"spec":{"x":null}}`, `{"spec":{"x":"a"}}`,
			fail("/spec/x/", "resource value 'a' does not match '<nil>' at path /spec/x/")},
		{"empty string pattern, missing field", `{"spec":{"x":""}}`, `{"spec":{}}`,
			fail("/spec/x/", "resource value '<nil>' does not match '' at path /spec/x/")},
		{"map pattern, string resource", `{"spec":{"a":"b"}}`, `{"spec":"text"}`,
			fail("/spec/", "pattern and resource have different structures. Path: /spec/. Expected map[string]interface {}, found string")},
		{"map pattern, missing resource", `{"spec":{"a":"b"}}`, `{}`,
			fail("/spec/", "pattern and resource have different structures. Path: /spec/. Expected map[string]interface {}, found <nil>")},
		{"map pattern, root list", `{"a":"b"}`, `[]`,
			fail("/", "pattern and resource have different structures. Path: /. Expected map[string]interface {}, found []interface {}")},
		{"list pattern, map resource", `{"spec":{"containers":[{"name":"*"}]}}`, `{"spec":{"containers":{"name":"a"}}}`,
			fail("/spec/containers/", "validation rule failed at path /spec/containers/, resource does not satisfy the expected overlay pattern")},
		{"empty list pattern", `{"spec":{"x":[]}}`, `{"spec":{"x":[1]}}`,
			fail("/spec/x/", "pattern Array empty")},
		{"list of maps, every element", `{"spec":{"containers":[{"image":"!*:latest"}]}}`,
			`{"spec":{"containers":[{"image":"a:1"},{"image":"b:latest"}]}}`,
			fail("/spec/containers/1/image/", "resource value 'b:latest' does not match '!*:latest' at path /spec/containers/1/image/")},
		{"list of maps, only the first pattern element counts", `{"l":[{"a":"1"},{"a":"2"}]}`, `{"l":[{"a":"1"},{"a":"1"}]}`, pass()},
		{"list of maps, empty resource list", `{"l":[{"a":"1"}]}`, `{"l":[]}`, pass()},
		{"list of maps, element not a map", `{"l":[{"a":"1"}]}`, `{"l":["x"]}`,
			fail("/l/0/", "pattern and resource have different structures. Path: /l/0/. Expected map[string]interface {}, found string")},
		{"list of leaves", `{"args":["!--privileged"]}`, `{"args":["a","b"]}`, pass()},
		{"list of leaves, mismatch shows the list", `{"args":["!--privileged"]}`, `{"args":["a","--privileged"]}`,
			fail("/args/", "resource value '[a --privileged]' does not match '!--privileged' at path /args/")},
		{"leaf against a resource list", `{"x":"a*"}`, `{"x":["ab","ac"]}`, pass()},
		{"leaf against a resource list, mismatch", `{"x":"a*"}`, `{"x":["ab","b"]}`,
			fail("/x/", "resource value '[ab b]' does not match 'a*' at path /x/")},
		{"leaf against an empty resource list", `{"x":"a*"}`, `{"x":[]}`, pass()},
		{"nested lists pairwise", `{"m":[["a"],["b*"]]}`, `{"m":[["a"],["bc"],["zz"]]}`, pass()},
		{"nested lists pairwise, mismatch", `{"m":[["a"],["b*"]]}`, `{"m":[["a"],["cc"]]}`,
			fail("/m/1/", "resource value '[cc]' does not match 'b*' at path /m/1/")},
		{"nested lists, resource too short", `{"m":[["a"],["b"]]}`, `{"m":[["a"]]}`,
			errored("validate Array failed, array length mismatch, resource Array len is 1 and pattern Array len is 2")},
		{"star, present", `{"spec":{"x":"*"}}`, `{"spec":{"x":{"a":1}}}`, pass()},
		{"star, zero", `{"spec":{"x":"*"}}`, `{"spec":{"x":0}}`, pass()},
		{"star, missing", `{"spec":{"x":"*"}}`, `{"spec":{}}`, fail("/spec/", "/spec//x not found")},
		{"star, null", `{"spec":{"x":"*"}}`, `{"spec":{"x":null}}`, fail("/spec/", "/spec//x not found")},
		{"star at the root", `{"x":"*"}`, `{}`, fail("/", "//x not found")},
		{"question star, map value", `{"spec":{"x":"?*"}}`, `{"spec":{"x":{"a":1}}}`,
			fail("/spec/x/", "resource value 'map[a:1]' does not match '?*' at path /spec/x/")},
		{"number as string pattern", `{"spec":{"port":"80"}}`, `{"spec":{"port":80}}`, pass()},
		{"number pattern, string resource", `{"spec":{"port":80}}`, `{"spec":{"port":"80"}}`, pass()},
		{"bool pattern, string resource", `{"spec":{"on":true}}`, `{"spec":{"on":"true"}}`,
			fail("/spec/on/", "resource value 'true' does not match 'true' at path /spec/on/")},
		{"add-if-not-present key is literal", `{"spec":{"+(x)":"a"}}`, `{"spec":{"x":"a"}}`,
			fail("/spec/+(x)/", "resource value '<nil>' does not match 'a' at path /spec/+(x)/")},
		{"add-if-not-present key with star", `{"spec":{"+(x)":"*"}}`, `{"spec":{"+(x)":1}}`, pass()},
	})
}

func TestMatchConditionAnchor(t *testing.T) {
	const imagePolicy = `{"spec":{"containers":[{"name":"*","(image)":"*:latest | !*:*","imagePullPolicy":"!Always"}]}}`
	containers := func(list string) string { return `{"spec":{"containers":[` + list + `]}}` }
	runCases(t, []matchCase{
		{"condition holds, sibling matches", `{"(kind)":"Pod","spec":{"x":"a"}}`, `{"kind":"Pod","spec":{"x":"a"}}`, pass()},
		{"condition holds, sibling fails", `{"(kind)":"Pod","spec":{"x":"a"}}`, `{"kind":"Pod","spec":{"x":"b"}}`,
			fail("/spec/x/", "resource value 'b' does not match 'a' at path /spec/x/")},
		{"condition fails", `{"(kind)":"Pod","spec":{"x":"a"}}`, `{"kind":"Job","spec":{"x":"b"}}`,
			skip("conditional anchor mismatch: resource value 'Job' does not match 'Pod' at path /kind/")},
		{"condition key missing", `{"(kind)":"Pod","spec":{"x":"a"}}`, `{"spec":{"x":"b"}}`,
			skip("conditional anchor mismatch: conditional anchor key doesn't exist in the resource")},
		{"condition with a map value", `{"(spec)":{"hostNetwork":true},"metadata":{"labels":{"net":"host"}}}`,
			`{"spec":{"hostNetwork":true},"metadata":{"labels":{}}}`,
			fail("/metadata/labels/net/", "resource value '<nil>' does not match 'host' at path /metadata/labels/net/")},
		{"condition with a map value, not holding", `{"(spec)":{"hostNetwork":true},"metadata":{"labels":{"net":"host"}}}`,
			`{"spec":{"hostNetwork":false},"metadata":{"labels":{}}}`,
			skip("conditional anchor mismatch: resource value 'false' does not match 'true' at path /spec/hostNetwork/")},
		{"every failing condition is reported, in key order", `{"(b)":"x","(a)":"y"}`, `{"a":"1","b":"2"}`,
			skip("conditional anchor mismatch: resource value '1' does not match 'y' at path /a/; " +
				"conditional anchor mismatch: resource value '2' does not match 'x' at path /b/")},
		{"conditions come before plain fields", `{"a":"x","(b)":"y"}`, `{"a":"1","b":"2"}`,
			skip("conditional anchor mismatch: resource value '2' does not match 'y' at path /b/")},
		{"condition inside a condition", `{"(spec)":{"(volumes)":[{"(hostPath)":{"path":"/var/run/docker.sock"}}]},"metadata":{"labels":{"allow-docker":"true"}}}`,
			`{"spec":{"volumes":[{"hostPath":{"path":"/other"}},{"emptyDir":{}}]},"metadata":{"labels":{}}}`,
			skip("conditional anchor mismatch: conditional anchor mismatch: conditional anchor mismatch: resource value '/other' does not match '/var/run/docker.sock' at path /spec/volumes/0/hostPath/path/; " +
				"conditional anchor mismatch: conditional anchor key doesn't exist in the resource")},

		// Kyverno's own cases for a condition in a list (TestConditionalAnchorWithMultiplePatterns).
		{"list/tagged, always", imagePolicy, containers(`{"name":"nginx","image":"nginx:1.2.3","imagePullPolicy":"Always"}`),
			skip("conditional anchor mismatch: resource value 'nginx:1.2.3' does not match '*:latest | !*:*' at path /spec/containers/0/image/")},
		{"list/latest, always", imagePolicy, containers(`{"name":"nginx","image":"nginx:latest","imagePullPolicy":"Always"}`),
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
		{"list/untagged, always", imagePolicy, containers(`{"name":"nginx","image":"nginx","imagePullPolicy":"Always"}`),
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
		{"list/untagged, never", imagePolicy, containers(`{"name":"nginx","image":"nginx","imagePullPolicy":"Never"}`), pass()},
		{"list/latest, never", imagePolicy, containers(`{"name":"nginx","image":"nginx:latest","imagePullPolicy":"Never"}`), pass()},
		{"list/tagged, never", imagePolicy, containers(`{"name":"nginx","image":"nginx:1.2.3","imagePullPolicy":"Never"}`),
			skip("conditional anchor mismatch: resource value 'nginx:1.2.3' does not match '*:latest | !*:*' at path /spec/containers/0/image/")},
		{"list/untagged always, tagged", imagePolicy,
			containers(`{"name":"nginx","image":"nginx","imagePullPolicy":"Always"},{"name":"busybox","image":"busybox:1.28","imagePullPolicy":"Always"}`),
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
		{"list/two tagged", imagePolicy,
			containers(`{"name":"nginx","image":"nginx:1.2.3","imagePullPolicy":"Always"},{"name":"busybox","image":"busybox:1.28","imagePullPolicy":"Always"}`),
			skip("conditional anchor mismatch: resource value 'nginx:1.2.3' does not match '*:latest | !*:*' at path /spec/containers/0/image/; " +
				"conditional anchor mismatch: resource value 'busybox:1.28' does not match '*:latest | !*:*' at path /spec/containers/1/image/")},
		{"list/untagged never, tagged", imagePolicy,
			containers(`{"name":"nginx","image":"nginx","imagePullPolicy":"Never"},{"name":"busybox","image":"busybox:1.28","imagePullPolicy":"Always"}`), pass()},
		{"list/tagged, untagged always", imagePolicy,
			containers(`{"name":"busybox","image":"busybox:1.28","imagePullPolicy":"Always"},{"name":"nginx","image":"nginx","imagePullPolicy":"Always"}`),
			fail("/spec/containers/1/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/1/imagePullPolicy/")},
		{"list/tagged, latest never", imagePolicy,
			containers(`{"name":"busybox","image":"busybox:1.28","imagePullPolicy":"Always"},{"name":"nginx","image":"nginx:latest","imagePullPolicy":"Never"}`), pass()},
		{"list/condition order reversed", `{"spec":{"containers":[{"name":"*","(image)":"!*:* | *:latest","imagePullPolicy":"!Always"}]}}`,
			containers(`{"name":"nginx","image":"nginx:latest","imagePullPolicy":"Always"}`),
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
		{"list/negated condition", `{"spec":{"=(volumes)":[{"(name)":"!cache-volume","=(emptyDir)":{"sizeLimit":"?*"}}]}}`,
			`{"spec":{"volumes":[{"name":"cache-volume","emptyDir":{}}]}}`,
			skip("conditional anchor mismatch: resource value 'cache-volume' does not match '!cache-volume' at path /spec/volumes/0/name/")},
		{"list/and of negations, skipped", `{"spec":{"=(volumes)":[{"(name)":"!credential-socket&!istio-data","=(emptyDir)":{"sizeLimit":"?*"}}]}}`,
			`{"spec":{"volumes":[{"name":"credential-socket","emptyDir":{"sizeLimit":"1Gi"}}]}}`,
			skip("conditional anchor mismatch: resource value 'credential-socket' does not match '!credential-socket&!istio-data' at path /spec/volumes/0/name/")},
		{"list/and of negations, applies", `{"spec":{"=(volumes)":[{"(name)":"!credential-socket&!istio-data","=(emptyDir)":{"sizeLimit":"?*"}}]}}`,
			`{"spec":{"volumes":[{"name":"cache-volume","emptyDir":{}}]}}`,
			fail("/spec/volumes/0/emptyDir/sizeLimit/", "resource value '<nil>' does not match '?*' at path /spec/volumes/0/emptyDir/sizeLimit/")},
		{"list/skipped and applied elements", `{"spec":{"=(initContainers)":[{"(name)":"!istio-init","=(securityContext)":{"=(runAsUser)":">0"}}],"=(containers)":[{"=(securityContext)":{"=(runAsUser)":">0"}}]}}`,
			`{"spec":{"initContainers":[{"name":"istio-init","securityContext":{"runAsUser":0}}],"containers":[{"securityContext":{"runAsUser":1000}}]}}`, pass()},
		{"list/skipped init containers, failing containers", `{"spec":{"=(initContainers)":[{"(name)":"!istio-init","=(securityContext)":{"=(runAsUser)":">0"}}],"=(containers)":[{"=(securityContext)":{"=(runAsUser)":">0"}}]}}`,
			`{"spec":{"initContainers":[{"name":"istio-init","securityContext":{"runAsUser":1000}}],"containers":[{"securityContext":{"runAsUser":0}}]}}`,
			fail("/spec/containers/0/securityContext/runAsUser/", "resource value '0' does not match '>0' at path /spec/containers/0/securityContext/runAsUser/")},
		{"list/all skipped skips the rule even when a sibling fails", `{"spec":{"containers":[{"(name)":"a"}],"b":"x"}}`,
			`{"spec":{"containers":[{"name":"z"}],"b":"y"}}`,
			skip("conditional anchor mismatch: resource value 'z' does not match 'a' at path /spec/containers/0/name/")},
		{"list/a failure before the skipped list wins", `{"spec":{"=(a)":"x","containers":[{"(name)":"a"}]}}`,
			`{"spec":{"containers":[{"name":"z"}],"a":"y"}}`,
			fail("/spec/a/", "resource value 'y' does not match 'x' at path /spec/a/")},
		{"list/skip in pairwise lists", `{"m":[[{"(a)":"1"}],[{"b":"2"}]]}`, `{"m":[[{"a":"0"}],[{"b":"2"}]]}`, pass()},
		{"list/all skipped in pairwise lists", `{"m":[[{"(a)":"1"}]]}`, `{"m":[[{"a":"0"}]]}`,
			skip("conditional anchor mismatch: resource value '0' does not match '1' at path /m/0/0/a/")},
	})
}

func TestMatchEqualityAnchor(t *testing.T) {
	const hostPath = `{"=(spec)":{"=(volumes)":[{"=(hostPath)":{"path":"!/var/run/docker.sock"}}]}}`
	runCases(t, []matchCase{
		{"absent", `{"spec":{"=(hostNetwork)":false}}`, `{"spec":{}}`, pass()},
		{"present, matching", `{"spec":{"=(hostNetwork)":false}}`, `{"spec":{"hostNetwork":false}}`, pass()},
		{"present, mismatch", `{"spec":{"=(hostNetwork)":false}}`, `{"spec":{"hostNetwork":true}}`,
			fail("/spec/hostNetwork/", "resource value 'true' does not match 'false' at path /spec/hostNetwork/")},
		{"present but null", `{"spec":{"=(hostNetwork)":false}}`, `{"spec":{"hostNetwork":null}}`,
			fail("/spec/hostNetwork/", "resource value '<nil>' does not match 'false' at path /spec/hostNetwork/")},
		{"docs example, no volumes", hostPath, `{"spec":{"containers":[]}}`, pass()},
		{"docs example, other volume", hostPath, `{"spec":{"volumes":[{"name":"a","emptyDir":{}}]}}`, pass()},
		{"docs example, docker socket", hostPath, `{"spec":{"volumes":[{"hostPath":{"path":"/var/run/docker.sock"}}]}}`,
			fail("/spec/volumes/0/hostPath/path/", "resource value '/var/run/docker.sock' does not match '!/var/run/docker.sock' at path /spec/volumes/0/hostPath/path/")},
		{"condition under equality propagates the skip", `{"=(spec)":{"(x)":"1"}}`, `{"spec":{"x":"2"}}`,
			skip("conditional anchor mismatch: resource value '2' does not match '1' at path /spec/x/")},
	})
}

func TestMatchExistenceAnchor(t *testing.T) {
	const nginx = `{"spec":{"^(containers)":[{"image":"nginx:latest"}]}}`
	runCases(t, []matchCase{
		{"one of many", nginx, `{"spec":{"containers":[{"image":"busybox"},{"image":"nginx:latest"}]}}`, pass()},
		{"none", nginx, `{"spec":{"containers":[{"image":"busybox"},{"image":"nginx:1"}]}}`,
			fail("/spec/containers/", "existence anchor validation failed at path /spec/containers/")},
		{"empty list", nginx, `{"spec":{"containers":[]}}`,
			fail("/spec/containers/", "existence anchor validation failed at path /spec/containers/")},
		{"absent", nginx, `{"spec":{}}`, pass()},
		{"not a list", nginx, `{"spec":{"containers":{"image":"nginx:latest"}}}`,
			fail("/spec/containers/", "invalid resource type map[string]interface {}: Existence ^ () anchor can be used only on list/array type resource")},
		{"null", nginx, `{"spec":{"containers":null}}`,
			fail("/spec/containers/", "invalid resource type <nil>: Existence ^ () anchor can be used only on list/array type resource")},
		{"pattern not a list", `{"spec":{"^(containers)":{"image":"x"}}}`, `{"spec":{"containers":[]}}`,
			fail("/spec/containers/", "invalid pattern type map[string]interface {}: Pattern has to be of list to compare against resource")},
		{"pattern leaf", `{"spec":{"^(containers)":"x"}}`, `{"spec":{"containers":[]}}`,
			fail("/spec/containers/", "invalid pattern type string: Pattern has to be of list to compare against resource")},
		{"pattern list of leaves", `{"spec":{"^(args)":["x"]}}`, `{"spec":{"args":["x"]}}`,
			fail("/spec/args/", "invalid pattern type []interface {}: Pattern has to be of type map to compare against items in resource")},
		{"every pattern element needs a match", `{"^(l)":[{"a":"1"},{"a":"2"}]}`, `{"l":[{"a":"2"},{"a":"1"}]}`, pass()},
		{"every pattern element needs a match, missing", `{"^(l)":[{"a":"1"},{"a":"3"}]}`, `{"l":[{"a":"2"},{"a":"1"}]}`,
			fail("/l/", "existence anchor validation failed at path /l/")},
		{"empty pattern list", `{"^(l)":[]}`, `{"l":[{"a":"2"}]}`, pass()},
		{"skipped elements do not count", `{"^(l)":[{"(a)":"1","b":"2"}]}`, `{"l":[{"a":"0"}]}`,
			fail("/l/", "existence anchor validation failed at path /l/")},
		// Kyverno's TestValidateMapElement_TwoElementsInArrayOnePass.
		{"nested condition", `{"^(list)":[{"(name)":"nirmata-*","object":[{"(key1)":"value*","key2":"value*"}]}]}`,
			`{"list":[{"name":"nirmata-1","object":[{"key1":"value1","key2":"value2"}]},{"name":"nirmata-1","object":[{"key1":"not_value","key2":"not_value"}]}]}`, pass()},
	})
}

func TestMatchNegationAnchor(t *testing.T) {
	const hostPath = `{"spec":{"=(volumes)":[{"X(hostPath)":"null"}]}}`
	runCases(t, []matchCase{
		{"absent", hostPath, `{"spec":{"volumes":[{"name":"a","emptyDir":{}}]}}`, pass()},
		{"present", hostPath, `{"spec":{"volumes":[{"name":"a","emptyDir":{}},{"name":"b","hostPath":{"path":"/"}}]}}`,
			fail("/spec/volumes/1/hostPath/", "negation anchor matched in resource: /spec/volumes/1/hostPath/ is not allowed")},
		{"present but null", `{"X(hostPath)":"null"}`, `{"hostPath":null}`,
			fail("/hostPath/", "negation anchor matched in resource: /hostPath/ is not allowed")},
		{"value is not evaluated", `{"X(a)":{"b":"c"}}`, `{"a":{"b":"c"}}`,
			fail("/a/", "negation anchor matched in resource: /a/ is not allowed")},
		{"negation under a condition skips", `{"(spec)":{"X(hostPID)":"null"}}`, `{"spec":{"hostPID":true}}`,
			skip("conditional anchor mismatch: negation anchor matched in resource: /spec/hostPID/ is not allowed")},
		{"negation in a list is not a skip", `{"l":[{"(a)":"1"},{"X(b)":"null"}]}`, `{"l":[{"a":"0","b":1}]}`,
			skip("conditional anchor mismatch: resource value '0' does not match '1' at path /l/0/a/")},
	})
}

func TestMatchGlobalAnchor(t *testing.T) {
	const latest = `{"spec":{"containers":[{"name":"*","<(image)":"*:latest","imagePullPolicy":"!Always"}]}}`
	const registry = `{"spec":{"containers":[{"name":"*","<(image)":"corp.reg.com/*"}],"imagePullSecrets":[{"name":"my-registry-secret"}]}}`
	runCases(t, []matchCase{
		// Kyverno's Test_global_anchor.
		{"skip", latest, `{"spec":{"containers":[{"name":"nginx","image":"nginx:v1","imagePullPolicy":"Always"}]}}`,
			skip("global anchor mismatch: resource value 'nginx:v1' does not match '*:latest' at path /spec/containers/0/image/")},
		{"fail", latest, `{"spec":{"containers":[{"name":"nginx","image":"nginx:latest","imagePullPolicy":"Always"}]}}`,
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
		{"pass", latest, `{"spec":{"containers":[{"name":"nginx","image":"nginx:latest","imagePullPolicy":"IfNotPresent"}]}}`, pass()},
		{"mixed", latest, `{"spec":{"containers":[{"name":"nginx","image":"nginx:latest","imagePullPolicy":"IfNotPresent"},{"name":"nginx","image":"nginx:v2","imagePullPolicy":"IfNotPresent"}]}}`, pass()},
		{"absent key does not skip", `{"<(a)":"1","b":"2"}`, `{"b":"3"}`,
			fail("/b/", "resource value '3' does not match '2' at path /b/")},
		// The example of the documentation: the registry's images need the secret.
		{"docs example, blocked", registry,
			`{"spec":{"containers":[{"name":"web","image":"corp.reg.com/nginx"}],"imagePullSecrets":[{"name":"other-secret"}]}}`,
			fail("/spec/imagePullSecrets/0/name/", "resource value 'other-secret' does not match 'my-registry-secret' at path /spec/imagePullSecrets/0/name/")},
		{"docs example, allowed", registry,
			`{"spec":{"containers":[{"name":"web","image":"corp.reg.com/nginx"}],"imagePullSecrets":[{"name":"my-registry-secret"}]}}`, pass()},
		{"docs example, other registry", registry,
			`{"spec":{"containers":[{"name":"web","image":"docker.io/nginx"}],"imagePullSecrets":[{"name":"other-secret"}]}}`,
			skip("global anchor mismatch: resource value 'docker.io/nginx' does not match 'corp.reg.com/*' at path /spec/containers/0/image/")},
		// Kyverno's test-30 lists this as a failure without checking it; the
		// global anchor is evaluated first and skips the rule.
		{"global in metadata", `{"metadata":{"<(name)":"nginx"},"spec":{"imagePullSecrets":[{"name":"regcred"}]}}`,
			`{"metadata":{"name":"somename"},"spec":{"imagePullSecrets":[{"name":"cred"}]}}`,
			skip("global anchor mismatch: resource value 'somename' does not match 'nginx' at path /metadata/name/")},
		{"global in labels", `{"metadata":{"labels":{"<(foo)":"bar"}},"spec":{"containers":[{"name":"nginx","image":"!*:latest"}]}}`,
			`{"metadata":{"labels":{"foo":"baz"}},"spec":{"containers":[{"name":"nginx","image":"nginx:latest"}]}}`,
			skip("global anchor mismatch: resource value 'baz' does not match 'bar' at path /metadata/labels/foo/")},
		{"nested global anchors", `{"spec":{"containers":[{"name":"*","<(image)":"nginx","env":[{"<(name)":"foo","<(value)":"bar"}],"imagePullPolicy":"!Always"}]}}`,
			`{"spec":{"containers":[{"name":"nginx","image":"nginx","env":[{"name":"foo1","value":"bar"}],"imagePullPolicy":"Always"}]}}`,
			skip("global anchor mismatch: resource value 'foo1' does not match 'foo' at path /spec/containers/0/env/0/name/")},
		{"global anchors pass, sibling fails", `{"spec":{"containers":[{"name":"*","env":[{"<(name)":"foo","<(value)":"bar"}],"imagePullPolicy":"!Always"}]}}`,
			`{"spec":{"containers":[{"name":"nginx","image":"nginx","env":[{"name":"foo","value":"bar"}],"imagePullPolicy":"Always"}]}}`,
			fail("/spec/containers/0/imagePullPolicy/", "resource value 'Always' does not match '!Always' at path /spec/containers/0/imagePullPolicy/")},
	})
}

func TestMatchMissingAnchorKeyIsAnError(t *testing.T) {
	// When a condition, existence or negation anchor key was never found in
	// the resource, Kyverno reports another failure without a path: the rule
	// status is error, not fail.
	runCases(t, []matchCase{
		{"negation key absent", `{"spec":{"X(hostNetwork)":"null","containers":[{"image":"!*:latest"}]}}`,
			`{"spec":{"containers":[{"image":"nginx:latest"}]}}`,
			errored("resource value 'nginx:latest' does not match '!*:latest' at path /spec/containers/0/image/")},
		{"negation key absent, pass", `{"spec":{"X(hostNetwork)":"null","containers":[{"image":"!*:latest"}]}}`,
			`{"spec":{"containers":[{"image":"nginx:1"}]}}`, pass()},
		{"existence key absent", `{"spec":{"^(volumes)":[{"name":"a"}],"x":"1"}}`, `{"spec":{"x":"2"}}`,
			errored("resource value '2' does not match '1' at path /spec/x/")},
		{"condition key found once is enough", `{"l":[{"(a)":"1","b":"2"}]}`, `{"l":[{"c":"0"},{"a":"1","b":"3"}]}`,
			fail("/l/1/b/", "resource value '3' does not match '2' at path /l/1/b/")},
		{"equality keys are not tracked", `{"spec":{"=(hostNetwork)":false,"x":"1"}}`, `{"spec":{"x":"2"}}`,
			fail("/spec/x/", "resource value '2' does not match '1' at path /spec/x/")},
		{"negation failure keeps its path", `{"X(a)":"null","X(b)":"null"}`, `{"a":1}`,
			fail("/a/", "negation anchor matched in resource: /a/ is not allowed")},
	})
}

func TestMatchWildcardKeys(t *testing.T) {
	// Kyverno's TestValidateMapWildcardKeys: wildcard keys in metadata.labels
	// and metadata.annotations address the resource keys they match.
	runCases(t, []matchCase{
		{"1", `{"metadata":{"annotations":{"test/*":"value1"}}}`, `{"metadata":{"annotations":{"test/bar":"value1"}}}`, pass()},
		{"2", `{"metadata":{"annotations":{"test/b??":"v*"}}}`, `{"metadata":{"annotations":{"test/bar":"value1"}}}`, pass()},
		{"3", `{}`, `{"metadata":{"annotations":{"test/bar":"value1"}}}`, pass()},
		{"4", `{"metadata":{"annotations":{"test/b??":"v*"}}}`, `{"metadata":{"labels":{"test/bar":"value1"}}}`,
			fail("/metadata/annotations/", "pattern and resource have different structures. Path: /metadata/annotations/. Expected map[string]interface {}, found <nil>")},
		{"5", `{"metadata":{"labels":{"*/test":"foo"}}}`, `{"metadata":{"labels":{"foo/test":"foo"}}}`, pass()},
		{"6", `{"metadata":{"labels":{"foo/a*":"bar"}}}`, `{"metadata":{"labels":{"foo/aa?":"bar","foo/789":"bar"}}}`, pass()},
		{"7", `{"metadata":{"labels":{"foo/ABC*":"bar"}}}`, `{"metadata":{"labels":{"foo/AB?":"bar","foo/ABC":"bar2"}}}`,
			fail("/metadata/labels/foo/ABC/", "resource value 'bar2' does not match 'bar' at path /metadata/labels/foo/ABC/")},
		{"8", `{"=(metadata)":{"=(labels)":{"foo/P*":"bar","foo/Q*":"bar2"}}}`, `{"metadata":{"labels":{"foo/PQR":"bar","foo/QR":"bar2"}}}`, pass()},
		{"9", `{"metadata":{"labels":{"foo/1*":"bar"}}}`, `{"metadata":{"labels":{"foo/123":"bar222"}}}`,
			fail("/metadata/labels/foo/123/", "resource value 'bar222' does not match 'bar' at path /metadata/labels/foo/123/")},
		{"10", `{"metadata":{"labels":{"foo/X*":"bar","foo/A*":"bar2"}}}`, `{"metadata":{"labels":{"foo/XYZ":"bar"}}}`,
			fail("/metadata/labels/foo/A*/", "resource value '<nil>' does not match 'bar2' at path /metadata/labels/foo/A*/")},
		{"11", `{"=(metadata)":{"=(labels)":{"foo/1*":"bar","foo/4*":"bar2"}}}`, `{"metadata":{"labels":{"foo/123":"bar"}}}`,
			fail("/metadata/labels/foo/4*/", "resource value '<nil>' does not match 'bar2' at path /metadata/labels/foo/4*/")},
		{"anchored wildcard key, absent", `{"metadata":{"=(annotations)":{"X(fluxcd.io/*)":"*?"}}}`, `{"metadata":{"annotations":{"a":"b"}}}`, pass()},
		{"anchored wildcard key, present", `{"metadata":{"=(annotations)":{"X(fluxcd.io/*)":"*?"}}}`, `{"metadata":{"annotations":{"a":"b","fluxcd.io/sync":"x"}}}`,
			fail("/metadata/annotations/fluxcd.io/sync/", "negation anchor matched in resource: /metadata/annotations/fluxcd.io/sync/ is not allowed")},
		{"first matching key in sorted order", `{"metadata":{"labels":{"app*":"x"}}}`, `{"metadata":{"labels":{"appb":"y","appa":"x"}}}`, pass()},
		{"pod template metadata", `{"spec":{"template":{"metadata":{"labels":{"app.kubernetes.io/*":"?*"}}}}}`,
			`{"spec":{"template":{"metadata":{"labels":{"app.kubernetes.io/name":""}}}}}`,
			fail("/spec/template/metadata/labels/app.kubernetes.io/name/", "resource value '' does not match '?*' at path /spec/template/metadata/labels/app.kubernetes.io/name/")},
		{"keys outside labels and annotations are literal", `{"spec":{"nodeSelector":{"zone*":"a"}}}`, `{"spec":{"nodeSelector":{"zone1":"a"}}}`,
			fail("/spec/nodeSelector/zone*/", "resource value '<nil>' does not match 'a' at path /spec/nodeSelector/zone*/")},
		{"non-string label patterns are not expanded", `{"metadata":{"labels":{"a*":"x","b":{"c":"d"}}}}`, `{"metadata":{"labels":{"ab":"x","b":"y"}}}`,
			fail("/metadata/labels/a*/", "resource value '<nil>' does not match 'x' at path /metadata/labels/a*/")},
	})
}

func TestMatchEvaluationOrder(t *testing.T) {
	// Anchors first (sorted), then keys holding anchors or global anchors (in
	// reverse key order), then the other keys (in key order).
	runCases(t, []matchCase{
		{"plain keys in order", `{"b":"1","a":"1"}`, `{"a":"2","b":"2"}`,
			fail("/a/", "resource value '2' does not match '1' at path /a/")},
		{"nested anchors first", `{"a":"1","z":{"(k)":"v","x":"1"}}`, `{"a":"2","z":{"k":"v","x":"2"}}`,
			fail("/z/x/", "resource value '2' does not match '1' at path /z/x/")},
		{"nested anchors in reverse order", `{"a":{"=(k)":"1"},"b":{"=(k)":"1"}}`, `{"a":{"k":"2"},"b":{"k":"2"}}`,
			fail("/b/k/", "resource value '2' does not match '1' at path /b/k/")},
		{"global among nested keys", `{"<(g)":"1","h":{"=(k)":"1"}}`, `{"g":"2","h":{"k":"2"}}`,
			fail("/h/k/", "resource value '2' does not match '1' at path /h/k/")},
		{"equality before plain", `{"a":"1","=(b)":"1"}`, `{"a":"2","b":"2"}`,
			fail("/b/", "resource value '2' does not match '1' at path /b/")},
	})
}

func TestMatchTypedInputs(t *testing.T) {
	// Unstructured objects carry int64; embedders may pass int or json.Number.
	p, err := Compile(map[string]any{"spec": map[string]any{"replicas": ">=2", "port": 8080, "ratio": 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range []map[string]any{
		{"spec": map[string]any{"replicas": int64(3), "port": int64(8080), "ratio": 0.5}},
		{"spec": map[string]any{"replicas": 3, "port": 8080, "ratio": float32(0.5)}},
		{"spec": map[string]any{"replicas": json.Number("3"), "port": json.Number("8080"), "ratio": json.Number("0.5")}},
	} {
		if err := p.Match(res); err != nil {
			t.Errorf("Match(%v) = %v", res, err)
		}
	}
	err = p.Match(map[string]any{"spec": map[string]any{"replicas": int64(1), "port": 8080, "ratio": 0.5}})
	if got := toOutcome(t, err); got != fail("/spec/replicas/", "resource value '1' does not match '>=2' at path /spec/replicas/") {
		t.Errorf("got %+v", got)
	}
}

func TestErrorStatus(t *testing.T) {
	tests := []struct {
		err  *Error
		want Status
	}{
		{&Error{Skip: true, Err: errEmptyArray}, StatusSkip},
		{&Error{Path: "/a/", Err: errEmptyArray}, StatusFail},
		{&Error{Err: errEmptyArray}, StatusError},
	}
	for _, tt := range tests {
		if got := tt.err.Status(); got != tt.want {
			t.Errorf("%+v: Status() = %s, want %s", tt.err, got, tt.want)
		}
	}
	if (&Error{}).Error() != "" {
		t.Error("empty Error has a message")
	}
	// Causes are reachable with errors.As.
	p, _ := Compile(mustJSON(t, `{"spec":{"containers":[{"(image)":"a"}]}}`))
	err := p.Match(mustJSON(t, `{"spec":{"containers":[{"image":"b"},{"image":"c"}]}}`))
	var se *SkipError
	if !errors.As(err, &se) || len(se.Errs) != 2 || se.Path != "/spec/containers/" {
		t.Fatalf("errors.As(SkipError) on %v: %+v", err, se)
	}
	var pe *Error
	if !errors.As(err, &pe) || errors.Unwrap(pe) != pe.Err {
		t.Fatalf("Error.Unwrap")
	}
	var first *MismatchError
	if !errors.As(err, &first) || first.Path != "/spec/containers/0/image/" {
		t.Fatalf("errors.As(MismatchError) through the skipped list: %+v", first)
	}
	var ae *AnchorError
	var me *MismatchError
	if !errors.As(se.Errs[1], &ae) || ae.Type != Condition || !errors.As(ae, &me) || me.Path != "/spec/containers/1/image/" || me.Value != "c" {
		t.Fatalf("anchor error %+v, mismatch %+v", ae, me)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		pattern any
		want    string
	}{
		{map[string]any{"spec": map[string]any{"x": []string{"a"}}}, "patterns: unsupported pattern value of type []string at /spec/x/"},
		{map[string]any{"=(spec)": []any{1, struct{}{}}}, "patterns: unsupported pattern value of type struct {} at /spec/1/"},
		{map[string]string{}, "patterns: unsupported pattern value of type map[string]string at /"},
	}
	for _, tt := range tests {
		_, err := Compile(tt.pattern)
		var ce *CompileError
		if !errors.As(err, &ce) || err.Error() != tt.want {
			t.Errorf("Compile(%#v) = %v, want %s", tt.pattern, err, tt.want)
		}
	}
	deep := any("x")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	if _, err := Compile(deep); err == nil || !strings.Contains(err.Error(), "deeper than") {
		t.Errorf("deep pattern: %v", err)
	}
	if err := MatchPattern(nil, []string{}); err == nil {
		t.Error("MatchPattern with a bad pattern succeeded")
	}
	var nilPattern *Pattern
	if err := nilPattern.Match(nil); err == nil {
		t.Error("nil pattern matched")
	}
}

func TestMatchPatternShortcut(t *testing.T) {
	if err := MatchPattern(mustJSON(t, `{"a":"b"}`), mustJSON(t, `{"a":"?"}`)); err != nil {
		t.Errorf("MatchPattern: %v", err)
	}
	if err := MatchPattern(mustJSON(t, `{"a":"bc"}`), mustJSON(t, `{"a":"?"}`)); err == nil {
		t.Error("MatchPattern: want a mismatch")
	}
}

func TestInputsAreNotModified(t *testing.T) {
	patternJSON := `{"metadata":{"labels":{"app*":"x","X(fluxcd.io/*)":"*?"},"=(annotations)":{"a/*":"?*"}},"spec":{"containers":[{"(image)":"*:latest","imagePullPolicy":"Always"}]}}`
	resourceJSON := `{"metadata":{"labels":{"app":"x"},"annotations":{"a/b":"c"}},"spec":{"containers":[{"image":"nginx:latest","imagePullPolicy":"Always"}]}}`
	pattern, resource := mustJSON(t, patternJSON), mustJSON(t, resourceJSON)
	p, err := Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Match(resource); err != nil {
			t.Fatalf("Match: %v", err)
		}
	}
	if !reflect.DeepEqual(pattern, mustJSON(t, patternJSON)) || !reflect.DeepEqual(resource, mustJSON(t, resourceJSON)) {
		t.Error("inputs were modified")
	}
}

func TestMatchConcurrent(t *testing.T) {
	p, err := Compile(mustJSON(t, `{"metadata":{"labels":{"app*":"x"}},"spec":{"containers":[{"(image)":"*:latest","imagePullPolicy":"Always"}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	resources := []string{
		`{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"image":"nginx:latest","imagePullPolicy":"Always"}]}}`,
		`{"metadata":{"labels":{"apple":"y"}},"spec":{"containers":[{"image":"nginx:latest","imagePullPolicy":"Always"}]}}`,
		`{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"image":"nginx:1"}]}}`,
	}
	want := make([]outcome, len(resources))
	for i, r := range resources {
		want[i] = toOutcome(t, p.Match(mustJSON(t, r)))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				k := (g + i) % len(resources)
				if got := toOutcome(t, p.Match(mustJSON(t, resources[k]))); got != want[k] {
					t.Errorf("concurrent Match = %+v, want %+v", got, want[k])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestMatchSiblingAnchors(t *testing.T) {
	// How skips of sibling anchors combine (Kyverno 1.12 and later): a
	// condition that does not hold outranks its siblings; a list under an
	// equality anchor whose elements are all skipped is overridden by a
	// sibling anchor that applied.
	const istio = `{"spec":{"=(initContainers)":[{"(name)":"!istio-init","=(securityContext)":{"=(runAsUser)":">0"}}],"=(containers)":[{"=(securityContext)":{"=(runAsUser)":">0"}}]}}`
	const privEsc = `{"spec":{"=(ephemeralContainers)":[{"(image)":"!*/foo:*.*.*","securityContext":{"allowPrivilegeEscalation":"false"}}],` +
		`"=(initContainers)":[{"(image)":"!*/foo:*.*.*","securityContext":{"allowPrivilegeEscalation":"false"}}],` +
		`"=(containers)":[{"(image)":"!*/foo:*.*.*","securityContext":{"allowPrivilegeEscalation":"false"}}]}}`
	const volumes = `{"spec":{"=(volumes)":[{"(name)":"!credential-socket&!istio-data","=(emptyDir)":{"sizeLimit":"?*"}}]}}`
	runCases(t, []matchCase{
		// The example of Kyverno's reporting guide.
		{"skipped init containers, passing containers", istio,
			`{"spec":{"initContainers":[{"name":"istio-init","securityContext":{"runAsUser":0}}],"containers":[{"name":"nginx","image":"nginx"}]}}`, pass()},
		{"only skipped init containers", `{"spec":{"=(initContainers)":[{"(name)":"!istio-init","=(securityContext)":{"=(runAsUser)":">0"}}]}}`,
			`{"spec":{"initContainers":[{"name":"istio-init","securityContext":{"runAsUser":0}}]}}`,
			skip("conditional anchor mismatch: resource value 'istio-init' does not match '!istio-init' at path /spec/initContainers/0/name/")},
		{"init containers applied and passing", istio,
			`{"spec":{"initContainers":[{"name":"nginx","securityContext":{"runAsUser":1000}}],"containers":[{"name":"nginx","image":"nginx"}]}}`, pass()},
		{"init containers applied and failing", istio,
			`{"spec":{"initContainers":[{"name":"nginx","securityContext":{"runAsUser":0}}],"containers":[{"name":"nginx","image":"nginx"}]}}`,
			fail("/spec/initContainers/0/securityContext/runAsUser/", "resource value '0' does not match '>0' at path /spec/initContainers/0/securityContext/runAsUser/")},
		// The case of Kyverno's fix for premature skips: the skipped
		// containers do not hide the failing init container.
		{"skipped containers do not hide a failure", privEsc,
			`{"spec":{"containers":[{"name":"side","image":"test/foo:1.2.3"}],"initContainers":[{"name":"init","image":"test/bar:1.2.3","securityContext":{"allowPrivilegeEscalation":true}}]}}`,
			fail("/spec/initContainers/0/securityContext/allowPrivilegeEscalation/", "resource value 'true' does not match 'false' at path /spec/initContainers/0/securityContext/allowPrivilegeEscalation/")},
		// A condition that does not hold outranks a passing or failing sibling.
		{"condition outranks a passing sibling", volumes,
			`{"spec":{"volumes":[{"name":"credential-socket","emptyDir":{"sizeLimit":"1Gi"}}]}}`,
			skip("conditional anchor mismatch: resource value 'credential-socket' does not match '!credential-socket&!istio-data' at path /spec/volumes/0/name/")},
		{"condition outranks a failing sibling", `{"(name)":"a","=(x)":"1"}`, `{"name":"b","x":"2"}`,
			skip("conditional anchor mismatch: resource value 'b' does not match 'a' at path /name/")},
		{"condition holds, sibling fails", volumes, `{"spec":{"volumes":[{"name":"cache-volume","emptyDir":{}}]}}`,
			fail("/spec/volumes/0/emptyDir/sizeLimit/", "resource value '<nil>' does not match '?*' at path /spec/volumes/0/emptyDir/sizeLimit/")},
		{"condition holds, no emptyDir", volumes, `{"spec":{"volumes":[{"name":"cache-volume"}]}}`, pass()},
		{"failure before a skipped list", `{"=(a)":"1","=(b)":[{"(c)":"1"}]}`, `{"a":"2","b":[{"c":"0"}]}`,
			fail("/a/", "resource value '2' does not match '1' at path /a/")},
		{"failure after a skipped list", `{"=(a)":[{"(c)":"1"}],"=(b)":"1"}`, `{"a":[{"c":"0"}],"b":"2"}`,
			fail("/b/", "resource value '2' does not match '1' at path /b/")},
		{"skipped list and an absent sibling", `{"=(a)":[{"(c)":"1"}],"=(z)":"1"}`, `{"a":[{"c":"0"}]}`, pass()},
		{"two skipped lists", `{"=(a)":[{"(c)":"1"}],"=(b)":[{"(c)":"1"}]}`, `{"a":[{"c":"0"}],"b":[{"c":"2"}]}`,
			skip("conditional anchor mismatch: resource value '0' does not match '1' at path /a/0/c/; conditional anchor mismatch: resource value '2' does not match '1' at path /b/0/c/")},
		{"skipped list under a plain key is not overridden", `{"a":[{"(c)":"1"}],"=(b)":"1"}`, `{"a":[{"c":"0"}],"b":"1"}`,
			skip("conditional anchor mismatch: resource value '0' does not match '1' at path /a/0/c/")},
	})
}

func TestMatchLargePatterns(t *testing.T) {
	// More than 128 tracked anchor keys and paths deeper than the matcher's
	// inline path stack.
	pattern := map[string]any{"spec": map[string]any{"x": "1"}}
	resource := map[string]any{"spec": map[string]any{"x": "2"}}
	for i := range 200 {
		pattern[fmt.Sprintf("X(absent%d)", i)] = "null"
	}
	p, err := Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if got := toOutcome(t, p.Match(resource)); got != errored("resource value '2' does not match '1' at path /spec/x/") {
		t.Errorf("got %+v", got)
	}

	deepPattern, deepResource := any("a"), any("b")
	var path strings.Builder
	for i := range 40 {
		k := fmt.Sprintf("k%d", 39-i)
		deepPattern = map[string]any{k: deepPattern}
		deepResource = map[string]any{k: deepResource}
	}
	path.WriteString("/")
	for i := range 40 {
		fmt.Fprintf(&path, "k%d/", i)
	}
	p, err = Compile(deepPattern)
	if err != nil {
		t.Fatal(err)
	}
	want := fail(path.String(), "resource value 'b' does not match 'a' at path "+path.String())
	if got := toOutcome(t, p.Match(deepResource)); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestMatchMissingAnchorKeyBookkeeping(t *testing.T) {
	// Expanded wildcard anchor keys are found by construction.
	runCases(t, []matchCase{
		{"expanded condition key", `{"metadata":{"labels":{"(app*)":"x"}},"spec":{"y":"1"}}`,
			`{"metadata":{"labels":{"apple":"x"}},"spec":{"y":"2"}}`,
			fail("/spec/y/", "resource value '2' does not match '1' at path /spec/y/")},
	})
	// Anchor keys beyond the first 128.
	pattern, resource := map[string]any{"x": "1"}, map[string]any{"x": "2"}
	for i := range 130 {
		pattern[fmt.Sprintf("^(e%03d)", i)] = []any{}
		if i < 129 {
			resource[fmt.Sprintf("e%03d", i)] = []any{}
		}
	}
	p, err := Compile(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if got := toOutcome(t, p.Match(resource)); got != errored("resource value '2' does not match '1' at path /x/") {
		t.Errorf("got %+v", got)
	}
	resource["e129"] = []any{}
	if got := toOutcome(t, p.Match(resource)); got != fail("/x/", "resource value '2' does not match '1' at path /x/") {
		t.Errorf("got %+v", got)
	}
}

func TestMatchPathIndexes(t *testing.T) {
	// Paths with list indexes of every width up to four digits, deeper than
	// the inline path stack, and some longer than the path buffer on the
	// stack (keys padded with fail%10 x's).
	for _, fail := range []int{0, 9, 10, 99, 100, 999, 1000, 1234} {
		list := make([]any, fail+1)
		for i := range list {
			list[i] = map[string]any{"v": "ok"}
		}
		list[fail] = map[string]any{"v": "bad"}
		var res, pat any = list, []any{map[string]any{"v": "ok"}}
		want := fmt.Sprintf("/%d/v/", fail)
		for i := range 35 {
			k := fmt.Sprintf("n%d%s", 34-i, strings.Repeat("x", fail%10))
			res, pat = map[string]any{k: res}, map[string]any{k: pat}
			want = "/" + k + want
		}
		p, err := Compile(pat)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Match(res)
		e, ok := err.(*Error)
		if !ok || e.Path != want || e.Error() != "resource value 'bad' does not match 'ok' at path "+want {
			t.Errorf("index %d: got %v, want path %s", fail, err, want)
		}
	}
}
