package podsecurity

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestExemptionMechanics pins the upstream exemption algorithm: each field
// error of the reduced pod removes one field error of the full pod.
func TestExemptionMechanics(t *testing.T) {
	const twoRootContainers = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext: {seccompProfile: {type: RuntimeDefault}}
  containers:
  - {name: a, image: nginx, securityContext: {runAsNonRoot: false, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}
  - {name: b, image: redis, securityContext: {runAsNonRoot: false, allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}}
`
	const privileged = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  hostNetwork: true
  hostPID: true
  containers:
  - name: a
    image: quay.io/cephcsi/cephcsi:v3.14.0
    securityContext: {privileged: true, capabilities: {add: [SYS_ADMIN]}}
    ports: [{containerPort: 8080, hostPort: 8080}, {containerPort: 9090, hostPort: 9090}]
  - name: b
    image: busybox
    securityContext: {privileged: true}
  volumes:
  - {name: v0, hostPath: {path: /dev}}
  - {name: v1, emptyDir: {}}
  - {name: v2, hostPath: {path: /sys}}
`
	tests := []struct {
		name    string
		ps      string
		pod     string
		want    []string // failing checks
		wantErr map[string][]string
	}{
		{
			name: "controlName-only exemption removes one error per reduced-pod error",
			ps:   "level: restricted\nexclude:\n- controlName: Running as Non-root",
			pod:  twoRootContainers,
			want: []string{"runAsNonRoot"},
			// The reduced pod's single container removes the first error; the
			// last one is swapped into its place and stays.
			wantErr: map[string][]string{"runAsNonRoot": {"spec.containers[1].securityContext.runAsNonRoot is forbidden, forbidden values found: false"}},
		},
		{
			name: "image exemption covers matching containers",
			ps:   "level: restricted\nexclude:\n- controlName: Running as Non-root\n  images: [nginx]",
			pod:  twoRootContainers,
			want: []string{"runAsNonRoot"},
			// The matching pod holds only nginx (index 0 there and in the pod):
			// its error removes nginx's error, redis keeps failing.
			wantErr: map[string][]string{"runAsNonRoot": {"spec.containers[1].securityContext.runAsNonRoot is forbidden, forbidden values found: false"}},
		},
		{
			name: "wildcard images cover all containers",
			ps:   "level: restricted\nexclude:\n- controlName: Running as Non-root\n  images: ['*']",
			pod:  twoRootContainers,
		},
		{
			name: "values as strings: bools and ints",
			ps: `level: baseline
exclude:
- controlName: Privileged Containers
  images: ['*/cephcsi/*', busybox]
  restrictedField: spec.containers[*].securityContext.privileged
  values: ["true"]
- controlName: Host Ports
  images: ['*/cephcsi/*']
  restrictedField: spec.containers[*].ports[*].hostPort
  values: ["8080", "9090"]
- controlName: Host Namespaces
  restrictedField: spec.hostNetwork
  values: ["true"]
- controlName: HostPath Volumes
  restrictedField: spec.volumes[*].hostPath
  values: [/dev, /sys]`,
			pod:     privileged,
			want:    []string{"capabilities_baseline", "hostNamespaces"},
			wantErr: map[string][]string{"hostNamespaces": {"spec.hostPID is forbidden, forbidden values found: true"}},
		},
		{
			name: "a value outside the list keeps the error",
			ps: `level: baseline
exclude:
- controlName: Host Ports
  images: ['*/cephcsi/*']
  restrictedField: spec.containers[*].ports[*].hostPort
  values: ["8080"]`,
			pod:  privileged,
			want: []string{"capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts", "privileged"},
			wantErr: map[string][]string{
				"hostPorts": {"spec.containers[0].ports[1].hostPort is forbidden, forbidden values found: 9090"},
			},
		},
		{
			name: "a restrictedField of another container list does not apply",
			ps: `level: baseline
exclude:
- controlName: Capabilities
  images: ['*']
  restrictedField: spec.initContainers[*].securityContext.capabilities.add
  values: [SYS_ADMIN]`,
			pod:  privileged,
			want: []string{"capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts", "privileged"},
		},
		{
			name: "value wildcards",
			ps: `level: baseline
exclude:
- controlName: Capabilities
  images: ['*']
  restrictedField: spec.containers[*].securityContext.capabilities.add
  values: ['SYS_*']`,
			pod:  privileged,
			want: []string{"hostNamespaces", "hostPathVolumes", "hostPorts", "privileged"},
		},
		{
			name: "HostPath Volumes does not exempt restricted volume types (upstream #8789)",
			ps:   "level: restricted\nexclude:\n- controlName: HostPath Volumes",
			pod:  privileged,
			want: []string{"allowPrivilegeEscalation", "capabilities_baseline", "capabilities_restricted", "hostNamespaces", "hostPorts", "privileged", "restrictedVolumes", "runAsNonRoot", "seccompProfile_restricted"},
		},
		{
			name: "Volume Types exempts restricted volume types",
			ps:   "level: restricted\nexclude:\n- controlName: Volume Types\n- controlName: HostPath Volumes",
			pod:  privileged,
			want: []string{"allowPrivilegeEscalation", "capabilities_baseline", "capabilities_restricted", "hostNamespaces", "hostPorts", "privileged", "runAsNonRoot", "seccompProfile_restricted"},
		},
		{
			name: "exemptions collapse the revisions of a pinned version",
			ps:   "level: restricted\nversion: v1.25\nexclude:\n- controlName: Host Namespaces",
			pod:  docBadPod01,
			want: []string{"allowPrivilegeEscalation", "capabilities_restricted", "runAsNonRoot", "seccompProfile_restricted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chk := mustCompile(t, mustPodSecurity(t, tt.ps), "r")
			res := mustEvaluate(t, chk, mustObject(t, tt.pod), nil)
			if got := checkIDs(res); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("checks %v, want %v\n%s", got, tt.want, res.Message)
			}
			for id, want := range tt.wantErr {
				var got []string
				for _, c := range res.Checks {
					if c.ID == id {
						for _, e := range c.FieldErrors {
							got = append(got, e.String())
						}
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s errors %q, want %q", id, got, want)
				}
			}
		})
	}
}

func TestScanField(t *testing.T) {
	tests := []struct {
		in, pattern, word string
		index             int
		has               bool
	}{
		{"spec.containers[12].ports[3].hostPort", "spec.containers[*].ports[*].hostPort", "containers", 12, true},
		{"spec.initContainers[0].securityContext.capabilities.add", "spec.initContainers[*].securityContext.capabilities.add", "initContainers", 0, true},
		{"spec.hostIPC", "spec.hostIPC", "hostIPC", 0, false},
		{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/c1]", "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c*]", "annotations", 1, true},
		{"spec.securityContext.sysctls[2].name", "spec.securityContext.sysctls[*].name", "securityContext", 2, true},
	}
	for _, tt := range tests {
		idx, has, w := scanField(tt.in)
		if idx != tt.index || has != tt.has || w != tt.word {
			t.Errorf("scanField(%q) = %d %v %q", tt.in, idx, has, w)
		}
		if !patternIs(tt.in, tt.pattern) || !samePattern(tt.in, tt.pattern) || !samePattern(tt.pattern, tt.in) {
			t.Errorf("%q: pattern is not %q", tt.in, tt.pattern)
		}
		if p, _, _ := refLocate(tt.in, false, nil); p != tt.pattern {
			t.Errorf("refLocate(%q) = %q", tt.in, p)
		}
	}
}

// TestFieldPatterns compares samePattern, patternIs and locateField with
// the patterns and containers of refLocate (paths with digit runs written
// as '*') on random paths.
func TestFieldPatterns(t *testing.T) {
	pod := &decodedPod{Spec: corev1.PodSpec{
		Containers:          []corev1.Container{{Name: "a"}, {Name: "b"}},
		InitContainers:      []corev1.Container{{Name: "i"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e"}}},
	}}
	r := rand.New(rand.NewSource(2))
	frags := []string{"spec", ".", "containers", "initContainers", "ephemeralContainers", "volumes", "[", "]", "0", "1", "2", "10", "*", "x", "é", "securityContext", "/"}
	path := func() string {
		s := ""
		for n := r.Intn(9); n > 0; n-- {
			s += frags[r.Intn(len(frags))]
		}
		return s
	}
	for i := 0; i < 100000; i++ {
		a, b := path(), path()
		if i%3 == 0 {
			// same shape, other numbers
			b = strings.Map(func(c rune) rune {
				if c >= '0' && c <= '9' {
					return '0' + (c-'0'+1)%10
				}
				return c
			}, a)
		}
		if i%3 == 1 && len(a) > 0 {
			// a common prefix, which may end inside a run of digits
			b = a[:r.Intn(len(a)+1)] + path()
		}
		pa, na, ca := refLocate(a, true, pod)
		pb, _, _ := refLocate(b, true, pod)
		if got := samePattern(a, b); got != (pa == pb) {
			t.Fatalf("samePattern(%q, %q) = %v, patterns %q %q", a, b, got, pa, pb)
		}
		if got := patternIs(a, b); got != (pa == b) {
			t.Fatalf("patternIs(%q, %q) = %v, pattern %q", a, b, got, pa)
		}
		if got := patternIs(a, pa); !got {
			t.Fatalf("patternIs(%q, %q) = false", a, pa)
		}
		if ref := locateField(a, true, &pod.Spec); ref.isContainer != ca || ref.name != na {
			t.Fatalf("locateField(%q) = %+v, want %v %q", a, ref, ca, na)
		}
		if ref := locateField(a, false, &pod.Spec); ref != (containerRef{}) {
			t.Fatalf("locateField(%q, pod level) = %+v", a, ref)
		}
	}
}
