package podsecurity

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func checkIDs(res Result) []string {
	var ids []string
	for _, c := range res.Checks {
		ids = append(ids, c.ID)
	}
	return ids
}

const restrictedPod = `
apiVersion: v1
kind: Pod
metadata:
  name: good
  namespace: default
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: app
    image: ghcr.io/example/app:1.0
    securityContext:
      allowPrivilegeEscalation: false
      capabilities:
        drop: [ALL]
`

func TestLevelsAndVersions(t *testing.T) {
	const ape = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: nginx
    securityContext: {allowPrivilegeEscalation: true, capabilities: {drop: [ALL]}}
`
	const hostProbe = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: nginx
    livenessProbe: {httpGet: {host: localhost, path: /healthz, port: 80}}
`
	const userNSUnmasked = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostUsers: false
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: nginx
    securityContext: {allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: {drop: [ALL]}, procMount: Unmasked}
`
	const userNSRoot = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostUsers: false
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: c
    image: nginx
    securityContext: {allowPrivilegeEscalation: false, runAsUser: 0, capabilities: {drop: [ALL]}}
`
	const sysctl = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext:
    sysctls:
    - {name: net.ipv4.ip_local_reserved_ports, value: "1"}
  containers: [{name: c, image: nginx}]
`
	tests := []struct {
		name, level, version, pod string
		want                      []string
	}{
		{"privileged runs no check", "privileged", "latest", docBadPod01, nil},
		{"baseline latest", "baseline", "latest", docBadPod01, []string{"hostNamespaces"}},
		{"empty version is latest", "baseline", "", docBadPod01, []string{"hostNamespaces"}},
		{"restricted good pod", "restricted", "latest", restrictedPod, nil},
		{"restricted latest: one revision per check", "restricted", "latest", ape, []string{"allowPrivilegeEscalation"}},
		{"pinned v1.24: revisions up to 1.24", "restricted", "v1.24", ape, []string{"allowPrivilegeEscalation"}},
		{"pinned v1.25: both revisions report", "restricted", "v1.25", ape, []string{"allowPrivilegeEscalation", "allowPrivilegeEscalation"}},
		{"host probes enforced at latest", "baseline", "latest", hostProbe, []string{"hostProbesAndHostLifecycle"}},
		{"host probes enforced at v1.34", "baseline", "v1.34", hostProbe, []string{"hostProbesAndHostLifecycle"}},
		{"host probes not in v1.33", "baseline", "v1.33", hostProbe, nil},
		{"user namespace relaxes baseline procMount", "baseline", "latest", userNSUnmasked, nil},
		{"restricted keeps procMount for user namespaces", "restricted", "latest", userNSUnmasked, []string{"procMount_restricted"}},
		{"user namespace relaxes runAsUser and runAsNonRoot", "restricted", "latest", userNSRoot, nil},
		{"pinned v1.32 does not relax", "restricted", "v1.32", userNSRoot, []string{"runAsNonRoot", "runAsUser"}},
		{"sysctl allowed since 1.27", "baseline", "latest", sysctl, nil},
		{"pinned v1.26 forbids it", "baseline", "v1.26", sysctl, []string{"sysctls"}},
		// Pinned versions also run older revisions, as upstream does.
		{"pinned v1.29 runs the 1.0 revision too", "baseline", "v1.29", sysctl, []string{"sysctls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chk := mustCompile(t, api.PodSecurity{Level: tt.level, Version: tt.version}, "r")
			res := mustEvaluate(t, chk, mustObject(t, tt.pod), nil)
			if got := checkIDs(res); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("checks %v, want %v\n%s", got, tt.want, res.Message)
			}
			if res.Allowed != (len(tt.want) == 0) {
				t.Fatalf("allowed %v with checks %v", res.Allowed, tt.want)
			}
			if !res.Allowed && !strings.Contains(res.Message, `"`+tt.level+":"+tt.version+`"`) {
				t.Errorf("message does not name %s:%s: %s", tt.level, tt.version, res.Message)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		ps   string
		want []string // field error strings, in order
	}{
		{"missing level", "version: latest", []string{"podSecurity.level: Required value: must be one of privileged, baseline, restricted"}},
		{"bad level", "level: strict", []string{`podSecurity.level: Unsupported value: "strict": supported values: "privileged", "baseline", "restricted"`}},
		{"bad version", "level: baseline\nversion: \"1.24\"", []string{`podSecurity.version: Invalid value: "1.24": must be "latest" or "v1.x"`}},
		{"bad major", "level: baseline\nversion: v2.0", []string{`podSecurity.version: Invalid value: "v2.0": must be "latest" or "v1.x"`}},
		{"unknown control", "level: baseline\nexclude:\n- controlName: Foo", []string{`podSecurity.exclude[0].controlName: Unsupported value: "Foo"`}},
		{"missing control", "level: baseline\nexclude:\n- images: [x]", []string{"podSecurity.exclude[0].controlName: Required value"}},
		{"container control without images", "level: baseline\nexclude:\n- controlName: Capabilities",
			[]string{`podSecurity.exclude[0].controlName: Invalid value: "Capabilities": exclude.images must be specified for the container level control`}},
		{"pod control with images", "level: baseline\nexclude:\n- controlName: Host Namespaces\n  images: [nginx]",
			[]string{`podSecurity.exclude[0].controlName: Invalid value: "Host Namespaces": exclude.images must not be specified for the pod level control`}},
		{"restrictedField without values", "level: baseline\nexclude:\n- controlName: Host Namespaces\n  restrictedField: spec.hostIPC",
			[]string{"podSecurity.exclude[0].values: Forbidden: values is required"}},
		{"values without restrictedField", "level: baseline\nexclude:\n- controlName: Sysctls\n  values: [x]",
			[]string{"podSecurity.exclude[0].restrictedField: Forbidden: restrictedField is required"}},
		{"restricted-only control at baseline", "level: baseline\nexclude:\n- controlName: Running as Non-root\n- controlName: Seccomp",
			[]string{`podSecurity.exclude[0].controlName: Invalid value: "Running as Non-root": Invalid control name defined at the given level`}},
		{"all errors reported", "level: x\nversion: y\nexclude:\n- controlName: Privilege Escalation\n- controlName: Seccomp",
			[]string{"podSecurity.level: Unsupported value", "podSecurity.version: Invalid value", "podSecurity.exclude[0].controlName: Invalid value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := testEvaluator.Compile(mustPodSecurity(t, tt.ps))
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("want *CompileError, got %v", err)
			}
			if len(ce.Errs) != len(tt.want) {
				t.Fatalf("got %d errors, want %d: %v", len(ce.Errs), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(ce.Errs[i].Error(), w) {
					t.Errorf("error %d: %q, want prefix %q", i, ce.Errs[i].Error(), w)
				}
			}
			var fe *field.Error
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Field, "podSecurity") {
				t.Errorf("errors.As *field.Error: %v", fe)
			}
		})
	}
	for _, ok := range []string{
		"level: restricted",
		"level: baseline\nversion: v1.19",
		"level: privileged\nversion: v1.0",
		"level: restricted\nversion: v1.99",
		"level: restricted\nexclude:\n- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']\n- controlName: Running as Non-root\n- controlName: HostProcess\n  images: [nginx]",
	} {
		if _, err := testEvaluator.Compile(mustPodSecurity(t, ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if errs := ValidateExcludes(mustExcludes(t, "- controlName: Capabilities"), field.NewPath("spec", "podSecurity")); len(errs) != 1 ||
		errs[0].Field != "spec.podSecurity[0].controlName" {
		t.Errorf("ValidateExcludes: %v", errs)
	}
}

func TestWorkloads(t *testing.T) {
	const template = `
metadata:
  labels: {app: a}
spec:
  hostPID: true
  containers:
  - name: c
    image: nginx
    securityContext: {privileged: true}
`
	indent := func(s, pad string) string {
		return pad + strings.ReplaceAll(strings.TrimPrefix(s, "\n"), "\n", "\n"+pad)
	}
	controller := func(kind string) string {
		return "apiVersion: apps/v1\nkind: " + kind + "\nmetadata: {name: x}\nspec:\n  template:\n" + indent(template, "    ")
	}
	cron := "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: x}\nspec:\n  schedule: '* * * * *'\n  jobTemplate:\n    spec:\n      template:\n" + indent(template, "        ")
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n" + strings.TrimPrefix(template, "\nmetadata:\n  labels: {app: a}\n")

	chk := mustCompile(t, api.PodSecurity{Level: "baseline", Version: "latest"}, "baseline")
	msg := func(prefix string) string {
		return `Validation rule 'baseline' failed. It violates PodSecurity "baseline:latest": ` +
			`(Forbidden reason: host namespaces, field error list: [` + prefix + `.hostPID is forbidden, forbidden values found: true])` +
			`(Forbidden reason: privileged, field error list: [` + prefix + `.containers[0].securityContext.privileged is forbidden, forbidden values found: true])`
	}
	cases := map[string]string{
		pod:  msg("spec"),
		cron: msg("spec.jobTemplate.spec.template.spec"),
	}
	for _, k := range []string{"Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "ReplicationController", "Job"} {
		cases[controller(k)] = msg("spec.template.spec")
	}
	for doc, want := range cases {
		obj := mustObject(t, doc)
		res := mustEvaluate(t, chk, obj, nil)
		if res.Message != want {
			t.Errorf("%s:\n got %s\nwant %s", obj["kind"], res.Message, want)
		}
		if got := res.Checks[1].Images; !reflect.DeepEqual(got, []string{"nginx"}) {
			t.Errorf("%s: images %v", obj["kind"], got)
		}
	}
}

func TestUnsupportedResources(t *testing.T) {
	chk := mustCompile(t, api.PodSecurity{Level: "restricted"}, "r")
	tests := []struct {
		name string
		obj  map[string]any
		want string
		kind bool
	}{
		{"nil", nil, "no resource", false},
		{"configmap", map[string]any{"kind": "ConfigMap", "data": map[string]any{}}, `kind: could not find correct resource type: "ConfigMap"`, true},
		{"no kind", map[string]any{"spec": map[string]any{}}, `kind: could not find correct resource type: ""`, true},
		{"spec not an object", map[string]any{"kind": "Pod", "spec": "x"}, "spec: expected an object, got string", false},
		{"template not an object", map[string]any{"kind": "Deployment", "spec": map[string]any{"template": []any{}}}, "spec.template: expected an object, got array", false},
		{"containers not a list", map[string]any{"kind": "Pod", "spec": map[string]any{"containers": "x"}}, "spec.containers: expected an array, got string", false},
		{"bad port", map[string]any{"kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "ports": []any{map[string]any{"hostPort": 1.5}}}}}}, "spec.containers[0].ports[0].hostPort: expected an integer, got 1.5", false},
		{"annotation not a string", map[string]any{"kind": "Pod", "metadata": map[string]any{"annotations": map[string]any{"a": 1.0}}}, "metadata.annotations.a: expected a string, got number", false},
		{"port out of range", map[string]any{"kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"name": "c", "ports": []any{map[string]any{"hostPort": int64(1) << 40}}}}}}, "spec.containers[0].ports[0].hostPort: integer 1099511627776 out of range", false},
		{"bad json.Number", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": json.Number("1e3")}}}, "spec.securityContext.runAsUser: expected an integer, got 1e3", false},
		{"invalid json.Number", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": json.Number("1x")}}}, "spec.securityContext.runAsUser: expected an integer, got 1x", false},
		{"json.Number too large", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": json.Number("9223372036854775808")}}}, "spec.securityContext.runAsUser: expected an integer, got 9223372036854775808", false},
		{"uint64 too large", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": uint64(1) << 63}}}, "spec.securityContext.runAsUser: integer 9223372036854775808 out of range", false},
		{"float32 fraction", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": float32(0.5)}}}, "spec.securityContext.runAsUser: expected an integer, got 0.5", false},
		{"string runAsUser", map[string]any{"kind": "Pod", "spec": map[string]any{"securityContext": map[string]any{"runAsUser": "1"}}}, "spec.securityContext.runAsUser: expected an integer, got string", false},
		{"capability not a string", map[string]any{"kind": "Pod", "spec": map[string]any{"containers": []any{map[string]any{"securityContext": map[string]any{"capabilities": map[string]any{"add": []any{1.0}}}}}}}, "spec.containers[0].securityContext.capabilities.add[0]: expected a string, got number", false},
		{"bool as string", map[string]any{"kind": "Pod", "spec": map[string]any{"hostIPC": "true"}}, "spec.hostIPC: expected a boolean, got string", false},
		{"name not a string", map[string]any{"kind": "Pod", "metadata": map[string]any{"name": true}}, "metadata.name: expected a string, got boolean", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chk.Evaluate(tt.obj, nil)
			var re *ResourceError
			if !errors.As(err, &re) {
				t.Fatalf("want *ResourceError, got %v", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q", err, tt.want)
			}
			if errors.Is(err, ErrUnsupportedKind) != tt.kind {
				t.Errorf("errors.Is(ErrUnsupportedKind) = %v", !tt.kind)
			}
		})
	}
	// A Pod or a controller without a spec has nothing to check.
	for _, obj := range []map[string]any{{"kind": "Pod"}, {"kind": "Deployment", "spec": map[string]any{}}} {
		if res := mustEvaluate(t, chk, obj, nil); !res.Allowed {
			t.Errorf("%v: %s", obj, res.Message)
		}
	}
}

func TestNumberTypesAndImmutability(t *testing.T) {
	build := func(port, uid any) map[string]any {
		return map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p"},
			"spec": map[string]any{
				"securityContext": map[string]any{"runAsUser": uid},
				"containers": []any{map[string]any{
					"name": "c", "image": "nginx",
					"ports": []any{map[string]any{"containerPort": port, "hostPort": port}},
				}},
			},
		}
	}
	chk := mustCompile(t, api.PodSecurity{Level: "restricted", Version: "latest"}, "r")
	var want string
	for _, v := range []any{float64(8080), int(8080), int64(8080), int32(8080), json.Number("8080")} {
		uid := any(float64(0))
		switch v.(type) {
		case int:
			uid = int(0)
		case int64:
			uid = int64(0)
		case json.Number:
			uid = json.Number("0")
		}
		obj := build(v, uid)
		before, _ := json.Marshal(obj)
		res := mustEvaluate(t, chk, obj, nil)
		after, _ := json.Marshal(obj)
		if string(before) != string(after) {
			t.Fatalf("%T: input modified", v)
		}
		if !strings.Contains(res.Message, "spec.containers[0].ports[0].hostPort is forbidden, forbidden values found: 8080") ||
			!strings.Contains(res.Message, "spec.securityContext.runAsUser is forbidden, forbidden values found: 0") {
			t.Errorf("%T: %s", v, res.Message)
		}
		if want == "" {
			want = res.Message
		} else if res.Message != want {
			t.Errorf("%T: message differs:\n%s\n%s", v, res.Message, want)
		}
	}
}

func TestExtraExcludes(t *testing.T) {
	chk := mustCompile(t, api.PodSecurity{Level: "restricted", Version: "latest"}, "r")
	pod := mustObject(t, docRootPod)
	// An exception applies only when the rule fails.
	good := mustObject(t, restrictedPod)
	if res := mustEvaluate(t, chk, good, mustExcludes(t, `- controlName: "Running as Non-root"`)); res.status() != "pass" {
		t.Errorf("good pod with exception: %s", res.status())
	}
	// Invalid exemptions are errors.
	if _, err := chk.Evaluate(pod, mustExcludes(t, `- controlName: Nope`)); err == nil || !strings.Contains(err.Error(), "podSecurity[0].controlName") {
		t.Errorf("invalid exemption: %v", err)
	}
	// An exception that does not clear every failure leaves the rest.
	res := mustEvaluate(t, chk, pod, mustExcludes(t, "- controlName: Seccomp"))
	if res.status() != "fail" || !reflect.DeepEqual(checkIDs(res), []string{"runAsNonRoot"}) {
		t.Errorf("partial exception: %s %v", res.status(), checkIDs(res))
	}
	// Rule exemptions and exception exemptions combine.
	chk2 := mustCompile(t, mustPodSecurity(t, "level: restricted\nexclude:\n- controlName: Capabilities\n  images: ['*']"), "r")
	obj := mustObject(t, sub(docCapsPod, "%IMAGE%", "busybox", "runAsNonRoot: true", "runAsNonRoot: false"))
	if res := mustEvaluate(t, chk2, obj, nil); !reflect.DeepEqual(checkIDs(res), []string{"runAsNonRoot"}) {
		t.Fatalf("rule exemption: %v", checkIDs(res))
	}
	if res := mustEvaluate(t, chk2, obj, mustExcludes(t, `- controlName: Running as Non-root`)); res.status() != "skip" || res.Message != "" || len(res.Checks) != 0 {
		t.Errorf("combined: %+v", res)
	}
}
