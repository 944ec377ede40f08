package jmespath

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

type fnCase struct {
	name string
	expr string
	data any
	want any
	// err, when set, is a substring the error text must contain.
	err string
}

func mustNew(t testing.TB, opts ...Option) *Interpreter {
	t.Helper()
	i, err := New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return i
}

func runCases(t *testing.T, intr *Interpreter, cases []fnCase) {
	t.Helper()
	for _, tc := range cases {
		name := tc.name
		if name == "" {
			name = tc.expr
		}
		t.Run(name, func(t *testing.T) {
			q, err := intr.Compile(tc.expr)
			if err != nil {
				// a call that fails whatever the data fails at Compile
				var ce *CompileError
				if tc.err == "" || !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Compile(%q): %v", tc.expr, err)
				}
				return
			}
			got, err := q.Search(tc.data)
			if tc.err != "" {
				if err == nil {
					t.Fatalf("Search(%q) = %#v, want error containing %q", tc.expr, got, tc.err)
				}
				if !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Search(%q) error = %q, want it to contain %q", tc.expr, err.Error(), tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Search(%q): unexpected error %v", tc.expr, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Search(%q) = %#v, want %#v", tc.expr, got, tc.want)
			}
		})
	}
}

// TestStringFunctions covers the examples of the upstream documentation page
// (policy-jmespath.md) plus edge and error cases.
func TestStringFunctions(t *testing.T) {
	intr := mustNew(t)
	runCases(t, intr, []fnCase{
		// compare
		{expr: "compare('a', 'a')", want: 0.0},
		{expr: "compare('a', 'b')", want: -1.0},
		{expr: "compare('b', 'a')", want: 1.0},
		{name: "compare wrong type", expr: "compare(`1`, 'a')", err: "JMESPath function 'compare': argument #1 is not of type string (got number)"},
		{name: "compare arity", expr: "compare('a')", err: "invalid arity"},
		// equal_fold
		{expr: "equal_fold('pizza', 'Pizza')", want: true},
		{expr: "equal_fold('pizza', 'pIzZa')", want: true},
		{expr: "equal_fold('pizza', 'APPLE')", want: false},
		{name: "equal_fold null", expr: "equal_fold(missing, 'a')", data: map[string]any{}, err: "argument #1 is not of type string (got null)"},
		// replace / replace_all
		{expr: "replace('Lorem ipsum dolor sit amet foo ipsum bar ipsum', 'ipsum', 'muspi', `2`)", want: "Lorem muspi dolor sit amet foo muspi bar ipsum"},
		{expr: "replace('a-a-a', '-', '+', `-1`)", want: "a+a+a"},
		{name: "replace needs 4 args", expr: "replace('a', 'a', 'b')", err: "invalid arity"},
		{name: "replace count type", expr: "replace('a', 'a', 'b', '1')", err: "argument #4 is not of type number (got string)"},
		{expr: "replace_all('Lorem ipsum dolor sit amet', 'ipsum', 'muspi')", want: "Lorem muspi dolor sit amet"},
		// to_upper / to_lower
		{expr: "to_upper('abc-Def')", want: "ABC-DEF"},
		{expr: "to_lower('ABC-Def')", want: "abc-def"},
		{name: "to_upper object", expr: "to_upper(@)", data: map[string]any{}, err: "JMESPath function 'to_upper': argument #1 is not of type string (got object)"},
		// trim / trim_prefix
		{expr: "trim('¡¡¡Hello, Gophers!!!', '!¡')", want: "Hello, Gophers"},
		{expr: "trim('foocorpcom', 'mo')", want: "foocorpc"},
		{expr: "trim('foocorpcom', 'o')", want: "foocorpcom"},
		{expr: "trim('foocorpcom', 'mcof')", want: "rp"},
		{name: "trim requires cutset", expr: "trim('  a  ')", err: "invalid arity"},
		{expr: "trim_prefix('docker://kubevirt/fedora-cloud-registry-disk-demo', 'docker://')", want: "kubevirt/fedora-cloud-registry-disk-demo"},
		{expr: "trim_prefix('abc', 'x')", want: "abc"},
		// split
		{expr: "split('cat,dog,horse', ',')", want: []any{"cat", "dog", "horse"}},
		{expr: "split('', ',')", want: []any{""}},
		{expr: "split('abc', '')", want: []any{"a", "b", "c"}},
		{name: "split of path", expr: "to_string(@) | split(@, '/') | [1]", data: "/foo/bar", want: "foo"},
		// regex_match
		{expr: "regex_match('^[1-7]$', `1`)", want: true},
		{expr: "regex_match('^[1-7]$', '1')", want: true},
		{expr: "regex_match('^[1-7]$', '8')", want: false},
		{expr: "regex_match('^[a-z]+-[0-9]+$', 'config-1')", want: true},
		{expr: "regex_match('^1.5$', `1.5`)", want: true},
		{name: "regex_match bad pattern", expr: "regex_match('[', 'a')", err: "JMESPath function 'regex_match': error parsing regexp"},
		{name: "regex_match null subject", expr: "regex_match('a', missing)", data: map[string]any{}, err: "argument #2 is not of type string or number (got null)"},
		// regex_replace_all / regex_replace_all_literal
		{expr: "regex_replace_all('([0-9])([0-9])', 'hello im 42 months old', '${1}1')", want: "hello im 41 months old"},
		{expr: "regex_replace_all('([0-9])([0-9])', 'days_37', '${1}0')", want: "days_30"},
		{expr: "regex_replace_all('^docker.io/(.*)$', 'docker.io/nginx:latest', 'harbor.corp.org/$1')", want: "harbor.corp.org/nginx:latest"},
		{expr: "regex_replace_all('5', `1.5`, `7`)", want: "1.7"},
		{name: "regex_replace_all bad pattern", expr: "regex_replace_all('(', 'a', 'b')", err: "JMESPath function 'regex_replace_all': error parsing regexp"},
		{expr: `regex_replace_all_literal('^(\d{3}-?\d{2}-?\d{4})$', '123-45-6789', 'redacted')`, want: "redacted"},
		{expr: "regex_replace_all_literal('^[^/]+', 'docker.io/nginx:latest', 'myregistry.corp.com')", want: "myregistry.corp.com/nginx:latest"},
		{expr: "regex_replace_all_literal('a', 'banana', '$1')", want: "b$1n$1n$1"},
		// pattern_match
		{expr: "pattern_match('158-7?-4*', '158-73-417')", want: true},
		{expr: "pattern_match('158-6?-3*', '158-73-417')", want: false},
		{expr: "pattern_match('1?3', `123`)", want: true},
		{expr: "pattern_match('*', '')", want: true},
		{expr: "pattern_match('', '')", want: true},
		{expr: "pattern_match('?', '')", want: false},
		{expr: "pattern_match('a*b*c', 'aXXbYYc')", want: true},
		{expr: "pattern_match('a*b*c', 'aXXbYY')", want: false},
		{expr: "pattern_match('é?', 'éa')", want: true},
		{name: "pattern_match array", expr: "pattern_match(@, 'a')", data: []any{}, err: "JMESPath function 'pattern_match': argument #1 is not of type string (got array)"},
		// label_match
		{expr: "label_match(`{\"dog\":\"lab\",\"color\":\"tan\"}`, `{\"color\":\"tan\",\"dog\":\"lab\"}`)", want: true},
		{expr: "label_match(`{\"dog\":\"lab\",\"color\":\"tan\"}`, `{\"color\":\"tan\",\"weight\":\"chonky\",\"dog\":\"lab\"}`)", want: true},
		{expr: "label_match(`{\"dog\":\"lab\",\"color\":\"tan\"}`, `{\"color\":\"black\",\"dog\":\"lab\"}`)", want: false},
		{expr: "label_match(`{}`, `{\"a\":\"b\"}`)", want: true},
		{expr: "label_match(`{\"a\":{\"b\":1}}`, `{\"a\":{\"b\":1}}`)", want: true},
		{name: "label_match in filter", expr: "items[?label_match(spec.selector.matchLabels, `{\"app\":\"web\",\"tier\":\"fe\"}`)] | length(@)",
			data: map[string]any{"items": []any{
				map[string]any{"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}}},
				map[string]any{"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "db"}}}},
			}}, want: 1.0},
		{name: "label_match string", expr: "label_match('a', `{}`)", err: "argument #1 is not of type object (got string)"},
		// to_boolean
		{expr: "to_boolean('true')", want: true},
		{expr: "to_boolean('FalsE')", want: false},
		{expr: "to_boolean('TruE')", want: true},
		{name: "to_boolean invalid", expr: "to_boolean('yes')", err: "JMESPath function 'to_boolean': lowercase argument must be 'true' or 'false' (provided: 'yes')"},
		// base64
		{expr: "base64_decode('aGVsbG8=')", want: "hello"},
		{expr: "base64_decode('bGluZTEKbGluZTI=')", want: "line1\nline2"},
		{name: "base64_decode invalid", expr: "base64_decode('%%%')", err: "JMESPath function 'base64_decode': illegal base64 data"},
		{name: "base64_decode null", expr: "base64_decode(null)", err: "JMESPath function 'base64_decode': argument #1 is not of type string (got null)"},
		{expr: "base64_encode('hello')", want: "aGVsbG8="},
		{expr: "base64_decode(base64_encode('round trip ✓'))", want: "round trip ✓"},
		// path_canonicalize
		{expr: "path_canonicalize('/var//lib///kubelet')", want: "/var/lib/kubelet"},
		{expr: "path_canonicalize('/var/run/./containerd/../containerd/containerd.sock')", want: "/var/run/containerd/containerd.sock"},
		{expr: "path_canonicalize('')", want: ""},
		// truncate
		{expr: "truncate('foobar', `3`)", want: "foo"},
		{expr: "truncate('foo', `10`)", want: "foo"},
		{expr: "truncate('foo', `-1`)", want: ""},
		{expr: "truncate('héllo', `2`)", want: "hé"},
		{expr: "truncate('abc', `1.9`)", want: "a"},
		{name: "truncate string length", expr: "truncate('abc', '1')", err: "argument #2 is not of type number (got string)"},
		// parse_json / parse_yaml
		{expr: "parse_json('[\"1001\",\"1002\"]')[*].to_number(@)", want: []any{1001.0, 1002.0}},
		{expr: "parse_json('{\"a\": {\"b\": true}}').a.b", want: true},
		{expr: "parse_json('12')", want: 12.0},
		{name: "parse_json invalid", expr: "parse_json('{')", err: "JMESPath function 'parse_json'"},
		{expr: "parse_yaml(@).species.isGoodBoi", data: "species:\n  dog: lab\n  isGoodBoi: false\n  snacks: [chimken, fries]", want: false},
		{name: "parse_yaml is YAML 1.1 (y is true)", expr: "parse_yaml(@)", data: "a: 1\nb: [x, y]", want: map[string]any{"a": 1.0, "b": []any{"x", true}}},
		{name: "parse_yaml invalid", expr: "parse_yaml('a: [')", err: "JMESPath function 'parse_yaml'"},
		// lookup
		{expr: "lookup(`{\"key1\": \"value1\", \"key2\": \"value2\"}`, `\"key2\"`)", want: "value2"},
		{expr: "lookup(`[\"item0\", \"item1\", \"item2\"]`, `1`)", want: "item1"},
		{expr: "lookup(`[\"item0\"]`, `5`)", want: nil},
		{expr: "lookup(`[\"item0\"]`, `-1`)", want: nil},
		{expr: "lookup(`{}`, 'missing')", want: nil},
		{name: "lookup dynamic key", expr: "lookup(metadata.annotations, join('', ['container.apparmor.security.beta.kubernetes.io/', 'app']))",
			data: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}}}, want: "runtime/default"},
		{name: "lookup object numeric key", expr: "lookup(`{}`, `1`)", err: "JMESPath function 'lookup': 2 argument is expected of String type"},
		{name: "lookup array string key", expr: "lookup(`[1]`, 'a')", err: "JMESPath function 'lookup': 2 argument is expected of Number type"},
		{name: "lookup fractional index", expr: "lookup(`[1]`, `0.5`)", err: "JMESPath function 'lookup': argument #2: expected an integer number but got a floating point number"},
		{name: "lookup string", expr: "lookup('a', 'a')", err: "argument #1 is not of type object or array (got string)"},
		// items
		{expr: "items(@, 'key', 'value')", data: map[string]any{"team": "apple", "organization": "banana"},
			want: []any{map[string]any{"key": "organization", "value": "banana"}, map[string]any{"key": "team", "value": "apple"}}},
		{expr: "items(@, 'key', 'value')", data: []any{map[string]any{"team": "apple"}, map[string]any{"organization": "banana"}},
			want: []any{map[string]any{"key": 0.0, "value": map[string]any{"team": "apple"}}, map[string]any{"key": 1.0, "value": map[string]any{"organization": "banana"}}}},
		{expr: "items(`{}`, 'k', 'v')", want: []any{}},
		{name: "items standard form is replaced", expr: "items(@)", data: map[string]any{}, err: "invalid arity"},
		{name: "items string", expr: "items('a', 'k', 'v')", err: "JMESPath function 'items': argument #1 is not of type object or array (got string)"},
		// object_from_lists
		{expr: "object_from_lists(spec.containers[].env[].name, spec.containers[].env[].value)",
			data: map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"env": []any{
				map[string]any{"name": "KEY", "value": "123-456-789"},
				map[string]any{"name": "endpoint", "value": "licensing.corp.org"},
			}}}}},
			want: map[string]any{"KEY": "123-456-789", "endpoint": "licensing.corp.org"}},
		{expr: "object_from_lists(['a', 'b'], [`1`])", want: map[string]any{"a": 1.0, "b": nil}},
		{expr: "object_from_lists([`1`, `true`], ['x', 'y'])", want: map[string]any{"1": "x", "true": "y"}},
		{name: "object_from_lists null key", expr: "object_from_lists([null], ['x'])", err: "JMESPath function 'object_from_lists': 1 argument is expected of StringArray type"},
		// hashes
		{expr: "md5('Alice & Bob')", want: "def42e1abd2462df1f9f0a4b3d488221"},
		{expr: "sha1('Alice & Bob')", want: "e3ec484930685a61b0f824cd684a68699d2b98c1"},
		{expr: "sha256('alertmanager-kube-prometheus-stack-alertmanager')", want: "75c07bb807f2d80a85d34880b8af0c5f29f7c27577076ed5d0e4b427dee7dbcc"},
		{name: "sha256 number", expr: "sha256(`1`)", err: "JMESPath function 'sha256': argument #1 is not of type string (got number)"},
		{name: "md5 bool", expr: "md5(`true`)", err: "JMESPath function 'md5': argument #1 is not of type string (got bool)"},
		{name: "sha1 array", expr: "sha1(`[]`)", err: "JMESPath function 'sha1': argument #1 is not of type string (got array)"},
		// standard functions still work
		{expr: "length(split('a,b,c,d', ','))", want: 4.0},
		{expr: "to_string(`[1,2]`)", want: "[1,2]"},
		{expr: "join(',', sort(keys(@)))", data: map[string]any{"b": 1, "a": 2}, want: "a,b"},
	})
}

func TestImageNormalize(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	runCases(t, mustNew(t), []fnCase{
		{expr: "image_normalize('nginx')", want: "docker.io/nginx:latest"},
		{expr: "image_normalize('nginx:1.25')", want: "docker.io/nginx:1.25"},
		{expr: "image_normalize('library/nginx')", want: "docker.io/library/nginx:latest"},
		{expr: "image_normalize('ghcr.io/kyverno/kyverno:v1.12.0')", want: "ghcr.io/kyverno/kyverno:v1.12.0"},
		{expr: "image_normalize('localhost/app')", want: "localhost/app:latest"},
		{expr: "image_normalize('localhost:5000/app:dev')", want: "localhost:5000/app:dev"},
		{expr: "image_normalize('nginx@" + digest + "')", want: "docker.io/nginx@" + digest},
		{expr: "image_normalize('ghcr.io/a/b:1.0@" + digest + "')", want: "ghcr.io/a/b@" + digest},
		{name: "bad image", expr: "image_normalize('nginx:')", err: "JMESPath function 'image_normalize': bad image: docker.io/nginx:"},
		{name: "uppercase repository", expr: "image_normalize('ghcr.io/Upper/app')", err: "JMESPath function 'image_normalize': bad image"},
		{name: "bad digest", expr: "image_normalize('nginx@sha256:abc')", err: "bad image"},
		{name: "doc example", expr: "regex_replace_all('^docker.io/(.*)$', image_normalize('nginx'), 'harbor.corp.org/$1')", want: "harbor.corp.org/nginx:latest"},
	})
	runCases(t, mustNew(t, WithDefaultRegistry("mirror.corp.org")), []fnCase{
		{name: "custom registry", expr: "image_normalize('nginx')", want: "mirror.corp.org/nginx:latest"},
		{name: "explicit registry kept", expr: "image_normalize('ghcr.io/a/b')", want: "ghcr.io/a/b:latest"},
	})
	runCases(t, mustNew(t, WithDefaultRegistryMutation(false)), []fnCase{
		{name: "no mutation", expr: "image_normalize('nginx:1.0')", want: "nginx:1.0"},
		{name: "no mutation explicit registry", expr: "image_normalize('ghcr.io/a/b')", want: "ghcr.io/a/b:latest"},
	})
}

func TestIsExternalURL(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		{expr: "is_external_url('https://kyverno.io/docs')", want: true},
		{expr: "is_external_url('http://8.8.8.8:53')", want: true},
		{expr: "is_external_url('http://[2001:4860:4860::8888]/')", want: true},
		{expr: "is_external_url('http://127.0.0.1:8080')", want: false},
		{expr: "is_external_url('http://127.1/')", want: false},
		{expr: "is_external_url('http://0x7f000001/')", want: false},
		{expr: "is_external_url('http://10.1.2.3')", want: false},
		{expr: "is_external_url('http://172.16.0.1')", want: false},
		{expr: "is_external_url('http://192.168.1.1')", want: false},
		{expr: "is_external_url('http://169.254.169.254/latest/meta-data')", want: false},
		{expr: "is_external_url('http://100.64.0.1')", want: false},
		{expr: "is_external_url('http://0.0.0.0')", want: false},
		{expr: "is_external_url('http://[::1]:80')", want: false},
		{expr: "is_external_url('http://[fd00::1]')", want: false},
		{expr: "is_external_url('http://[fe80::1%25eth0]')", want: false},
		{expr: "is_external_url('http://[::ffff:10.0.0.1]')", want: false},
		{expr: "is_external_url('http://localhost:3000')", want: false},
		{expr: "is_external_url('http://my-service')", want: false},
		{expr: "is_external_url('http://my-service.my-ns.svc')", want: false},
		{expr: "is_external_url('http://my-service.my-ns.svc.cluster.local:8080/x')", want: false},
		{expr: "is_external_url('http://printer.local')", want: false},
		{expr: "is_external_url('http://db.corp.internal')", want: false},
		{expr: "is_external_url('http://EXAMPLE.COM.')", want: true},
		{name: "no host", expr: "is_external_url('not a url')", err: "JMESPath function 'is_external_url': no host in URL"},
		{name: "unparsable", expr: "is_external_url('http://[::1')", err: "JMESPath function 'is_external_url'"},
		{name: "object", expr: "is_external_url(`{}`)", err: "JMESPath function 'is_external_url': argument #1 is not of type string (got object)"},
	})
}

func TestSemverCompare(t *testing.T) {
	runCases(t, mustNew(t), []fnCase{
		// documentation examples
		{expr: "semver_compare('1.2.3', '1.2.4')", want: false},
		{expr: "semver_compare('4.1.3', '>=4.1.x')", want: true},
		{expr: "semver_compare('4.1.3', '!4.x.x')", want: false},
		{expr: "semver_compare('1.8.6', '>1.0.0 <2.0.0')", want: true},
		{expr: "semver_compare('2.1.5', '<2.0.0 || >=3.0.0')", want: false},
		// corpus (variables-jmespath-custom-functions)
		{expr: "semver_compare('1.4.2', '>=1.2.0')", want: true},
		{expr: "semver_compare('1.1.9', '>=1.2.0')", want: false},
		// operators
		{expr: "semver_compare('1.2.3', '1.2.3')", want: true},
		{expr: "semver_compare('1.2.3', '=1.2.3')", want: true},
		{expr: "semver_compare('1.2.3', '==1.2.3')", want: true},
		{expr: "semver_compare('1.2.3', '!=1.2.3')", want: false},
		{expr: "semver_compare('1.2.3', '> 1.2.2')", want: true},
		{expr: "semver_compare('1.2.3', '<=1.2.3')", want: true},
		{expr: "semver_compare('1.2.3', '<1.2.3')", want: false},
		{expr: "semver_compare('1.2.3', '>=1.0.0 <1.2.0 || >=1.2.3 <1.3.0')", want: true},
		// wildcards
		{expr: "semver_compare('1.2.9', '1.2.x')", want: true},
		{expr: "semver_compare('1.3.0', '1.2.x')", want: false},
		{expr: "semver_compare('1.9.0', '1.x')", want: true},
		{expr: "semver_compare('2.0.0', '1.x')", want: false},
		{expr: "semver_compare('1.2.9', '<=1.2.x')", want: true},
		{expr: "semver_compare('1.3.0', '<=1.2.x')", want: false},
		{expr: "semver_compare('1.3.0', '>1.2.x')", want: true},
		{expr: "semver_compare('1.2.5', '>1.2.x')", want: false},
		{expr: "semver_compare('1.1.9', '<1.2.x')", want: true},
		// pre-releases and build metadata
		{expr: "semver_compare('1.0.0-alpha', '<1.0.0')", want: true},
		{expr: "semver_compare('1.0.0-alpha.1', '>1.0.0-alpha')", want: true},
		{expr: "semver_compare('1.0.0-alpha.beta', '>1.0.0-alpha.1')", want: true},
		{expr: "semver_compare('1.0.0-rc.1', '<1.0.0-rc.2')", want: true},
		{expr: "semver_compare('1.0.0+build.5', '1.0.0')", want: true},
		// invalid first argument compares as 0.0.0
		{expr: "semver_compare('v1.2.3', '<0.0.1')", want: true},
		{expr: "semver_compare('garbage', '0.0.0')", want: true},
		// invalid ranges
		{name: "range with v prefix", expr: "semver_compare('1.2.3', '>=v1.2.0')", err: "JMESPath function 'semver_compare': Could not parse Range"},
		{name: "range leading zero", expr: "semver_compare('1.2.3', '01.2.0')", err: "JMESPath function 'semver_compare'"},
		{name: "range empty", expr: "semver_compare('1.2.3', '')", err: "JMESPath function 'semver_compare'"},
		{name: "range dangling or", expr: "semver_compare('1.2.3', '>=1.0.0 ||')", err: "Last element in range is '||'"},
		{name: "range leading or", expr: "semver_compare('1.2.3', '|| 1.0.0')", err: "First element in range is '||'"},
		{name: "range bad comparator", expr: "semver_compare('1.2.3', '~1.2.3')", err: "Could not parse comparator"},
		{name: "range no version", expr: "semver_compare('1.2.3', '>=abc')", err: "Could not get version from string"},
		{name: "semver number", expr: "semver_compare(`1`, '1.0.0')", err: "argument #1 is not of type string (got number)"},
	})
}

func TestX509Decode(t *testing.T) {
	intr := mustNew(t)
	cert := readTestdata(t, "cert.pem")
	csr := readTestdata(t, "csr.pem")
	ec := readTestdata(t, "ec-cert.pem")
	data := map[string]any{"cert": cert, "csr": csr, "ec": ec, "b64": base64Std(cert)}
	runCases(t, intr, []fnCase{
		{expr: "x509_decode(cert).Subject.CommonName", data: data, want: "*.kyverno.svc"},
		{expr: "x509_decode(cert).PublicKey.E", data: data, want: 65537.0},
		{expr: "x509_decode(cert).PublicKeyAlgorithm", data: data, want: 1.0},
		{expr: "x509_decode(cert).SerialNumber", data: data, want: 7.0},
		{expr: "type(x509_decode(cert).PublicKey.N)", data: data, want: "string"},
		{name: "decode base64 first", expr: "base64_decode(b64) | x509_decode(@).Issuer.CommonName", data: data, want: "*.kyverno.svc"},
		{name: "expiry check", expr: "time_since('', x509_decode(cert).NotBefore, x509_decode(cert).NotAfter) | ends_with(@, 's')", data: data, want: true},
		{expr: "x509_decode(csr).Subject.Organization", data: data, want: []any{"gavel"}},
		{expr: "x509_decode(csr).PublicKey.E", data: data, want: 65537.0},
		{name: "ecdsa rejected", expr: "x509_decode(ec)", data: data, err: "JMESPath function 'x509_decode': certificate should use rsa algorithm"},
		{name: "not pem", expr: "x509_decode('hello')", err: "JMESPath function 'x509_decode': failed to decode PEM block"},
		{name: "wrong block", expr: "x509_decode('-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')", err: "PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST"},
		{name: "garbage certificate", expr: "x509_decode('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')", err: "JMESPath function 'x509_decode'"},
	})
}

func TestFunctionErrorType(t *testing.T) {
	intr := mustNew(t)
	_, err := intr.Search("divide(`1`, `0`)", nil)
	var fe *FunctionError
	if !errors.As(err, &fe) {
		t.Fatalf("error %T is not a *FunctionError", err)
	}
	if fe.Function != "divide" || fe.Argument != 2 || fe.Message != "Zero divisor passed" {
		t.Fatalf("unexpected FunctionError %+v", fe)
	}
	if got, want := err.Error(), "JMESPath function 'divide': Zero divisor passed"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	_, err = intr.Search("time_add('x', '1h')", nil)
	if !errors.As(err, &fe) || fe.Argument != 1 || fe.Err == nil {
		t.Fatalf("time_add error = %#v", err)
	}
	_, err = intr.Search("abs(@)", "x")
	var ee *EvalError
	if !errors.As(err, &ee) || ee.Expression != "abs(@)" {
		t.Fatalf("standard function error = %#v", err)
	}
	_, err = intr.Search("nope(@)", nil)
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "unknown function: nope") {
		t.Fatalf("unknown function error = %v", err)
	}
}

func TestCompileError(t *testing.T) {
	intr := mustNew(t)
	for _, expr := range []string{"foo(", "[?", "a.", "`{`", "'unterminated"} {
		_, err := intr.Compile(expr)
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Fatalf("Compile(%q) error = %v, want *CompileError", expr, err)
		}
		if ce.Expression != expr || !strings.Contains(err.Error(), expr) {
			t.Fatalf("Compile(%q) error %q does not name the expression", expr, err)
		}
		if _, err := intr.Search(expr, nil); !errors.As(err, &ce) {
			t.Fatalf("Search(%q) error = %v, want *CompileError", expr, err)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	for name, opt := range map[string]Option{
		"nil clock":         WithClock(nil),
		"nil reader":        WithRandom(nil),
		"negative cache":    WithCacheSize(-1),
		"negative regex":    WithRegexCacheSize(-1),
		"empty registry":    WithDefaultRegistry(""),
		"zero random limit": WithMaxRandomLength(0),
	} {
		if _, err := New(opt); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: New error = %v, want ErrInvalidOption", name, err)
		}
	}
	if _, err := New(nil, WithCacheSize(0), WithRegexCacheSize(0)); err != nil {
		t.Fatalf("New with nil option and zero caches: %v", err)
	}
}

func TestCachesDisabledAndBounded(t *testing.T) {
	intr := mustNew(t, WithCacheSize(2), WithRegexCacheSize(1))
	for k := 0; k < 10; k++ {
		for _, expr := range []string{"a", "b", "c", "regex_match('x', 'x')", "regex_match('y', 'y')"} {
			if _, err := intr.Search(expr, map[string]any{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := intr.queries.size(); n > 2 {
		t.Fatalf("query cache holds %d entries, bound is 2", n)
	}
	if n := intr.regexes.size(); n > 1 {
		t.Fatalf("regex cache holds %d entries, bound is 1", n)
	}
	off := mustNew(t, WithCacheSize(0), WithRegexCacheSize(0))
	got, err := off.Search("regex_match('^a', 'abc')", nil)
	if err != nil || got != true {
		t.Fatalf("uncached search = %v, %v", got, err)
	}
	if off.queries.size() != 0 || off.regexes.size() != 0 {
		t.Fatal("disabled caches stored entries")
	}
	_, err = off.Search("regex_match('(', 'abc')", nil)
	if err == nil {
		t.Fatal("want error for invalid regexp")
	}
}

func TestFunctionsList(t *testing.T) {
	infos := mustNew(t).Functions()
	byName := map[string]FunctionInfo{}
	for k, f := range infos {
		if f.ReturnType == "" || f.Description == "" {
			t.Errorf("function %q lacks a return type or description", f.Name)
		}
		if k > 0 && infos[k-1].Name >= f.Name {
			t.Fatalf("Functions() not sorted / has duplicates at %q", f.Name)
		}
		byName[f.Name] = f
	}
	documented := []string{"add", "base64_decode", "base64_encode", "compare", "divide", "equal_fold", "image_normalize",
		"is_external_url", "items", "label_match", "lookup", "md5", "modulo", "multiply", "object_from_lists",
		"parse_json", "parse_yaml", "path_canonicalize", "pattern_match", "random", "regex_match",
		"regex_replace_all", "regex_replace_all_literal", "replace", "replace_all", "round", "semver_compare",
		"sha1", "sha256", "split", "subtract", "sum", "time_add", "time_after", "time_before", "time_between",
		"time_diff", "time_now", "time_now_utc", "time_parse", "time_since", "time_to_cron", "time_truncate",
		"time_utc", "to_boolean", "to_lower", "to_upper", "trim", "trim_prefix", "truncate", "x509_decode"}
	for _, name := range documented {
		f, ok := byName[name]
		if !ok {
			t.Errorf("function %q missing", name)
			continue
		}
		if !f.Custom || f.Description == "" || f.ReturnType == "" {
			t.Errorf("function %q: incomplete info %+v", name, f)
		}
	}
	for _, name := range []string{"length", "to_string", "to_number", "join", "keys", "sort_by"} {
		if f, ok := byName[name]; !ok || f.Custom || f.ReturnType == "" {
			t.Errorf("standard function %q: %+v", name, f)
		}
	}
	if got, want := byName["truncate"].Signature(), "truncate(string, number) string"; got != want {
		t.Errorf("Signature() = %q, want %q", got, want)
	}
	if got := byName["lookup"].Signature(); got != "lookup(object|array, string|number) any" {
		t.Errorf("lookup signature = %q", got)
	}
	if got := byName["time_now"].String(); got != "time_now() string (returns current time in RFC 3339 format)" {
		t.Errorf("String() = %q", got)
	}
	if got := byName["find_first"].Signature(); got != "find_first(string, string, number?, number?) number" {
		t.Errorf("find_first signature = %q", got)
	}
	// The returned slice is a copy.
	infos[0].Name = "changed"
	if mustNew(t).Functions()[0].Name == "changed" {
		t.Fatal("Functions() exposes internal state")
	}
}

func TestZeroArgFunctionArity(t *testing.T) {
	intr := mustNew(t, WithClock(func() time.Time { return time.Unix(0, 0) }))
	if _, err := intr.Search("time_now('x')", nil); err == nil || !strings.Contains(err.Error(), "invalid arity") {
		t.Fatalf("time_now('x') error = %v", err)
	}
}

// TestCacheConcurrentBound: evaluations from many goroutines share the
// caches, which stay within their bound and give every caller its query.
func TestCacheConcurrentBound(t *testing.T) {
	intr := mustNew(t, WithCacheSize(8))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				expr := fmt.Sprintf("a.f%d", (g*7+k)%40)
				got, err := intr.Search(expr, map[string]any{"a": map[string]any{fmt.Sprintf("f%d", (g*7+k)%40): 1.0}})
				if err != nil || got != 1.0 {
					t.Errorf("%s = %v, %v", expr, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := intr.queries.size(); n > 8 {
		t.Fatalf("query cache holds %d entries, bound is 8", n)
	}
}
