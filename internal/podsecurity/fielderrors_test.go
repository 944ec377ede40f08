package podsecurity

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// TestEveryLibraryCheckIsMapped guards library upgrades: every check needs
// a control name and a field error computation.
func TestEveryLibraryCheckIsMapped(t *testing.T) {
	for _, c := range policy.DefaultChecks() {
		if ControlName(string(c.ID)) == "" {
			t.Errorf("check %q has no control name", c.ID)
		}
		if fieldErrorFns[string(c.ID)] == nil {
			t.Errorf("check %q has no field error computation", c.ID)
		}
	}
	if errs := unknownCheckErrs(nil, nil, psaapi.LatestVersion()); len(errs) != 1 || errs[0].String() != "spec: Forbidden" {
		t.Errorf("fallback field errors: %v", errs)
	}
	for _, ctl := range controlTable {
		for _, id := range ctl.ids {
			if fieldErrorFns[id] == nil {
				t.Errorf("control %q names unknown check %q", ctl.name, id)
			}
		}
	}
}

// fixturePods gathers pods from the conformance manifests and edge cases.
func fixturePods(t *testing.T) []*decodedPod {
	t.Helper()
	var pods []*decodedPod
	files, _ := filepath.Glob("testdata/conformance/*/*/*.yaml")
	for _, f := range files {
		for _, obj := range mustReadObjects(t, f) {
			if pod, _, err := decodePod(obj); err == nil {
				pods = append(pods, pod)
			}
		}
	}
	for _, doc := range fieldErrorCases {
		pod, _, err := decodePod(mustObject(t, doc.pod))
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, pod)
	}
	return pods
}

// TestFieldErrorsAgreeWithLibrary: for every revision of every check, the
// library rejects a pod exactly when field errors are found.
func TestFieldErrorsAgreeWithLibrary(t *testing.T) {
	pods := fixturePods(t)
	if len(pods) < 100 {
		t.Fatalf("only %d fixture pods", len(pods))
	}
	for _, c := range testEvaluator.checks {
		for _, v := range c.versions {
			rejected := 0
			for _, pod := range pods {
				r := v.CheckPod(&pod.ObjectMeta, &pod.Spec)
				errs := c.errs(&pod.ObjectMeta, &pod.Spec, v.MinimumVersion)
				// Relaxations for user-namespace and Windows pods live in the
				// library; field errors are only computed for rejected pods.
				relaxed := (pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers) ||
					(pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows)
				if !r.Allowed != (len(errs) > 0) && !(r.Allowed && relaxed) {
					t.Errorf("%s %s on pod %q: allowed=%v but field errors %v (%s)", c.id, v.MinimumVersion.String(), pod.Name, r.Allowed, errs, r.ForbiddenDetail)
				}
				if !r.Allowed {
					rejected++
				}
			}
			if rejected == 0 {
				t.Errorf("%s %s: no fixture pod fails it", c.id, v.MinimumVersion.String())
			}
		}
	}
}

var fieldErrorCases = []struct {
	id      string
	version psaapi.Version
	pod     string
	want    []string
}{
	{"allowPrivilegeEscalation", psaapi.MajorMinorVersion(1, 25), `
kind: Pod
metadata: {name: ape}
spec:
  containers:
  - {name: a}
  - {name: b, securityContext: {}}
  - {name: c, securityContext: {allowPrivilegeEscalation: true}}
  - {name: d, securityContext: {allowPrivilegeEscalation: false}}
`, []string{
		"spec.containers[0].securityContext.allowPrivilegeEscalation: Required value",
		"spec.containers[1].securityContext.allowPrivilegeEscalation is forbidden, forbidden values found: nil",
		"spec.containers[2].securityContext.allowPrivilegeEscalation is forbidden, forbidden values found: true",
	}},
	{"privileged", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: privileged}
spec:
  containers:
  - {name: a}
  - {name: b, securityContext: {}}
  - {name: c, securityContext: {privileged: false}}
  - {name: d, securityContext: {privileged: true}}
  ephemeralContainers:
  - {name: e, securityContext: {privileged: true}}
`, []string{
		"spec.containers[3].securityContext.privileged is forbidden, forbidden values found: true",
		"spec.ephemeralContainers[0].securityContext.privileged is forbidden, forbidden values found: true",
	}},
	{"windowsHostProcess", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: hostprocess}
spec:
  securityContext: {windowsOptions: {hostProcess: true}}
  initContainers:
  - {name: i, securityContext: {windowsOptions: {hostProcess: true}}}
  containers:
  - {name: a, securityContext: {windowsOptions: {}}}
  - {name: b, securityContext: {windowsOptions: {hostProcess: false}}}
  - {name: c, securityContext: {windowsOptions: {hostProcess: true}}}
`, []string{
		"spec.securityContext.windowsOptions.hostProcess is forbidden, forbidden values found: true",
		"spec.initContainers[0].securityContext.windowsOptions.hostProcess is forbidden, forbidden values found: true",
		"spec.containers[2].securityContext.windowsOptions.hostProcess is forbidden, forbidden values found: true",
	}},
	{"runAsUser", psaapi.MajorMinorVersion(1, 23), `
kind: Pod
metadata: {name: runasuser}
spec:
  securityContext: {runAsUser: 0}
  containers:
  - {name: a, securityContext: {runAsUser: 0}}
  - {name: b, securityContext: {runAsUser: 1000}}
`, []string{
		"spec.securityContext.runAsUser is forbidden, forbidden values found: 0",
		"spec.containers[0].securityContext.runAsUser is forbidden, forbidden values found: 0",
	}},
	{"runAsNonRoot", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: runasnonroot}
spec:
  securityContext: {runAsNonRoot: false}
  containers:
  - {name: a}
  - {name: b, securityContext: {runAsNonRoot: false}}
  - {name: c, securityContext: {runAsNonRoot: true}}
`, []string{
		"spec.securityContext.runAsNonRoot is forbidden, forbidden values found: false",
		"spec.containers[1].securityContext.runAsNonRoot is forbidden, forbidden values found: false",
		"spec.containers[0].securityContext.runAsNonRoot: Required value",
	}},
	{"seccompProfile_restricted", psaapi.MajorMinorVersion(1, 25), `
kind: Pod
metadata: {name: seccomp-implicit}
spec:
  containers:
  - {name: a}
  - {name: b, securityContext: {}}
  - {name: c, securityContext: {seccompProfile: {type: RuntimeDefault}}}
`, []string{
		"spec.containers[0].securityContext.seccompProfile.type: Required value",
		"spec.containers[1].securityContext.seccompProfile.type: Required value",
	}},
	{"seccompProfile_restricted", psaapi.MajorMinorVersion(1, 25), `
kind: Pod
metadata: {name: seccomp-explicit}
spec:
  containers:
  - {name: a}
  - {name: b, securityContext: {seccompProfile: {type: Unconfined}}}
`, []string{
		"spec.containers[1].securityContext.seccompProfile.type is forbidden, forbidden values found: Unconfined",
	}},
	{"seccompProfile_baseline", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata:
  name: seccomp-annotations
  annotations:
    seccomp.security.alpha.kubernetes.io/pod: unconfined
    container.seccomp.security.alpha.kubernetes.io/a: runtime/default
    container.seccomp.security.alpha.kubernetes.io/b: unconfined
spec:
  containers: [{name: a}, {name: b}]
`, []string{
		"metadata.annotations[container.seccomp.security.alpha.kubernetes.io/b] is forbidden, forbidden values found: unconfined",
		"metadata.annotations[seccomp.security.alpha.kubernetes.io/pod] is forbidden, forbidden values found: unconfined",
	}},
	{"capabilities_restricted", psaapi.MajorMinorVersion(1, 25), `
kind: Pod
metadata: {name: caps}
spec:
  containers:
  - {name: a}
  - {name: b, securityContext: {capabilities: {drop: [NET_RAW, CHOWN, NET_RAW], add: [SYS_ADMIN, NET_BIND_SERVICE, CHOWN]}}}
  - {name: c, securityContext: {capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}}
  - {name: d, securityContext: {capabilities: {}}}
`, []string{
		"spec.containers[0].securityContext.capabilities.drop: Required value",
		"spec.containers[1].securityContext.capabilities.drop is forbidden, forbidden values found: [CHOWN NET_RAW]",
		"spec.containers[3].securityContext.capabilities.drop: Required value",
		"spec.containers[1].securityContext.capabilities.add is forbidden, forbidden values found: [CHOWN SYS_ADMIN]",
	}},
	{"appArmorProfile", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata:
  name: apparmor
  annotations:
    container.apparmor.security.beta.kubernetes.io/: bogus
    container.apparmor.security.beta.kubernetes.io/a: ""
    container.apparmor.security.beta.kubernetes.io/b: runtime/default
    container.apparmor.security.beta.kubernetes.io/c: localhost/foo
    container.apparmor.security.beta.kubernetes.io/e: unconfined
spec:
  securityContext: {appArmorProfile: {type: Unconfined}}
  containers:
  - {name: a, securityContext: {appArmorProfile: {type: Unconfined}}}
`, []string{
		"spec.securityContext.appArmorProfile.type is forbidden, forbidden values found: Unconfined",
		"spec.containers[0].securityContext.appArmorProfile.type is forbidden, forbidden values found: Unconfined",
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/] is forbidden, forbidden values found: bogus",
		"metadata.annotations[container.apparmor.security.beta.kubernetes.io/e] is forbidden, forbidden values found: unconfined",
	}},
	{"seLinuxOptions", psaapi.MajorMinorVersion(1, 31), `
kind: Pod
metadata: {name: selinux}
spec:
  securityContext: {seLinuxOptions: {type: spc_t, user: sysadm_u}}
  containers:
  - {name: a, securityContext: {seLinuxOptions: {type: container_engine_t, role: sysadm_r}}}
`, []string{
		"spec.securityContext.seLinuxOptions.type is forbidden, forbidden values found: spc_t",
		"spec.securityContext.seLinuxOptions.user is forbidden, forbidden values found: sysadm_u",
		"spec.containers[0].securityContext.seLinuxOptions.role is forbidden, forbidden values found: sysadm_r",
	}},
	{"sysctls", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: sysctls}
spec:
  securityContext:
    sysctls:
    - {name: kernel.shm_rmid_forced, value: "0"}
    - {name: net.ipv4.tcp_rmem, value: "1"}
    - {name: kernel.msgmax, value: "1"}
  containers: [{name: a}]
`, []string{
		"spec.securityContext.sysctls[1].name is forbidden, forbidden values found: net.ipv4.tcp_rmem",
		"spec.securityContext.sysctls[2].name is forbidden, forbidden values found: kernel.msgmax",
	}},
	{"restrictedVolumes", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: volumes}
spec:
  containers: [{name: a}]
  volumes:
  - {name: a, emptyDir: {}}
  - {name: b, hostPath: {path: /etc}}
  - {name: c, nfs: {server: s, path: /}}
  - {name: d}
`, []string{
		"spec.volumes[1].hostPath: Forbidden",
		"spec.volumes[2].nfs: Forbidden",
		"spec.volumes[3].unknown: Forbidden",
	}},
	{"restrictedVolumes", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: all-volume-types}
spec:
  containers: [{name: a}]
  volumes:
  - {name: v0, configMap: {}}
  - {name: v1, csi: {}}
  - {name: v2, downwardAPI: {}}
  - {name: v3, emptyDir: {}}
  - {name: v4, ephemeral: {}}
  - {name: v5, image: {}}
  - {name: v6, persistentVolumeClaim: {}}
  - {name: v7, projected: {}}
  - {name: v8, secret: {}}
  - {name: v9, hostPath: {}}
  - {name: v10, gcePersistentDisk: {}}
  - {name: v11, awsElasticBlockStore: {}}
  - {name: v12, gitRepo: {}}
  - {name: v13, nfs: {}}
  - {name: v14, iscsi: {}}
  - {name: v15, glusterfs: {}}
  - {name: v16, rbd: {}}
  - {name: v17, flexVolume: {}}
  - {name: v18, cinder: {}}
  - {name: v19, cephfs: {}}
  - {name: v20, flocker: {}}
  - {name: v21, fc: {}}
  - {name: v22, azureFile: {}}
  - {name: v23, vsphereVolume: {}}
  - {name: v24, quobyte: {}}
  - {name: v25, azureDisk: {}}
  - {name: v26, photonPersistentDisk: {}}
  - {name: v27, portworxVolume: {}}
  - {name: v28, scaleIO: {}}
  - {name: v29, storageos: {}}
  - {name: hp-and-cm, configMap: {}, hostPath: {path: /x}}
  - {name: null-source, nfs: null}
`, []string{
		"spec.volumes[9].hostPath: Forbidden",
		"spec.volumes[10].gcePersistentDisk: Forbidden",
		"spec.volumes[11].awsElasticBlockStore: Forbidden",
		"spec.volumes[12].gitRepo: Forbidden",
		"spec.volumes[13].nfs: Forbidden",
		"spec.volumes[14].iscsi: Forbidden",
		"spec.volumes[15].glusterfs: Forbidden",
		"spec.volumes[16].rbd: Forbidden",
		"spec.volumes[17].flexVolume: Forbidden",
		"spec.volumes[18].cinder: Forbidden",
		"spec.volumes[19].cephfs: Forbidden",
		"spec.volumes[20].flocker: Forbidden",
		"spec.volumes[21].fc: Forbidden",
		"spec.volumes[22].azureFile: Forbidden",
		"spec.volumes[23].vsphereVolume: Forbidden",
		"spec.volumes[24].quobyte: Forbidden",
		"spec.volumes[25].azureDisk: Forbidden",
		"spec.volumes[26].photonPersistentDisk: Forbidden",
		"spec.volumes[27].portworxVolume: Forbidden",
		"spec.volumes[28].scaleIO: Forbidden",
		"spec.volumes[29].storageos: Forbidden",
		"spec.volumes[31].unknown: Forbidden",
	}},
	{"hostProbesAndHostLifecycle", psaapi.MajorMinorVersion(1, 34), `
kind: Pod
metadata: {name: probes}
spec:
  containers:
  - name: a
    livenessProbe: {httpGet: {host: 10.0.0.1, port: 80}}
    readinessProbe: {tcpSocket: {host: example.com, port: 80}}
    lifecycle: {preStop: {httpGet: {host: h, port: 80}}}
`, []string{
		"spec.containers[0].livenessProbe.httpGet.host is forbidden, forbidden values found: 10.0.0.1",
		"spec.containers[0].readinessProbe.tcpSocket.host is forbidden, forbidden values found: example.com",
		"spec.containers[0].lifecycle.preStop.httpGet.host is forbidden, forbidden values found: h",
	}},
	{"procMount", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: procmount}
spec:
  hostUsers: false
  containers:
  - {name: a, securityContext: {procMount: Unmasked}}
  - {name: b, securityContext: {procMount: Default}}
`, []string{
		"spec.containers[0].securityContext.procMount is forbidden, forbidden values found: Unmasked",
	}},
	{"procMount_restricted", psaapi.MajorMinorVersion(1, 35), `
kind: Pod
metadata: {name: procmount-restricted}
spec:
  initContainers:
  - {name: i, securityContext: {procMount: Unmasked}}
  containers:
  - {name: a}
`, []string{
		"spec.initContainers[0].securityContext.procMount is forbidden, forbidden values found: Unmasked",
	}},
	{"hostPathVolumes", psaapi.MajorMinorVersion(1, 0), `
kind: Pod
metadata: {name: hostpath}
spec:
  containers: [{name: a}]
  volumes:
  - {name: a, hostPath: {path: /var/lib}}
  - {name: b, hostPath: {path: ""}}
`, []string{
		"spec.volumes[0].hostPath is forbidden, forbidden values found: /var/lib",
		"spec.volumes[1].hostPath: Forbidden",
	}},
}

func TestFieldErrors(t *testing.T) {
	for _, tt := range fieldErrorCases {
		pod, _, err := decodePod(mustObject(t, tt.pod))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(pod.Name, func(t *testing.T) {
			var got []string
			for _, e := range fieldErrorFns[tt.id](&pod.ObjectMeta, &pod.Spec, tt.version) {
				got = append(got, e.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestFieldErrorValues(t *testing.T) {
	tests := []struct {
		v    any
		want []string
	}{
		{"", nil},
		{"x", []string{"x"}},
		{true, []string{"true"}},
		{8080, []string{"8080"}},
		{[]string{"A", "B"}, []string{"A", "B"}},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := badValues(tt.v); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("badValues(%#v) = %q", tt.v, got)
		}
	}
}

// TestSortedUnique compares sortedUnique (sorted in place) with the
// former copy through a set, on random lists.
func TestSortedUnique(t *testing.T) {
	former := func(items []string) []string {
		seen := make(map[string]struct{}, len(items))
		out := make([]string, 0, len(items))
		for _, s := range items {
			if _, ok := seen[s]; ok {
				continue
			}
			seen[s] = struct{}{}
			out = append(out, s)
		}
		sort.Strings(out)
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"ALL", "NET_RAW", "SYS_ADMIN", "CHOWN", "", "NET_BIND_SERVICE"}
	for range 10000 {
		items := make([]string, rng.IntN(7))
		for i := range items {
			items[i] = names[rng.IntN(len(names))]
		}
		want := former(items)
		if got := sortedUnique(slices.Clone(items)); !slices.Equal(got, want) {
			t.Fatalf("sortedUnique(%q) = %q, want %q", items, got, want)
		}
	}
}
