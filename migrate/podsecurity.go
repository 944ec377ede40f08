package migrate

import (
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
)

// pssCheck is a check of the Pod Security Standards at the latest version
// of k8s.io/pod-security-admission (the one Kyverno's podSecurity runs
// for version latest), in CEL: what the pod must satisfy (pod: the pod's
// own fields and metadata) and what each container must (container: c,
// one of the init, regular and ephemeral containers). Either may be
// empty. The Windows and user-namespace relaxations of the library are
// part of the expressions.
type pssCheck struct {
	control, id string
	restricted  bool
	pod         string
	container   string
	// fake is the check less an exclusion without images, for the checks
	// whose reduced pod's fake container fails when the pod does not set
	// the field; withImages is the check less an exclusion with images
	// (MATCH: that c has one of them) where containers' errors depend on
	// each other.
	fake, withImages string
}

// pssChecks are the library's checks in its order, each under the control
// name Kyverno's exclusions use (a control may have a baseline and a
// restricted check; the restricted level runs both, as Kyverno does).
var pssChecks = []pssCheck{
	{control: "HostProcess", id: "windowsHostProcess",
		pod:       `object.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false) != true`,
		container: `c.?securityContext.?windowsOptions.?hostProcess.orValue(false) != true`},
	{control: "Host Namespaces", id: "hostNamespaces",
		pod: `object.spec.?hostNetwork.orValue(false) != true && object.spec.?hostPID.orValue(false) != true &&
  object.spec.?hostIPC.orValue(false) != true`},
	{control: "Privileged Containers", id: "privileged",
		container: `c.?securityContext.?privileged.orValue(false) != true`},
	{control: "Capabilities", id: "capabilities_baseline",
		container: `c.?securityContext.?capabilities.?add.orValue([]).all(cap, cap in ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE',
  'FOWNER', 'FSETID', 'KILL', 'MKNOD', 'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'])`},
	{control: "HostPath Volumes", id: "hostPathVolumes",
		pod: `object.spec.?volumes.orValue([]).all(v, v.?hostPath.orValue(null) == null)`},
	{control: "Host Ports", id: "hostPorts",
		container: `c.?ports.orValue([]).all(p, p.?hostPort.orValue(0) == 0)`},
	{control: "Host Probes / Lifecycle Hooks", id: "hostProbesAndHostLifecycle",
		container: `[c.?livenessProbe.orValue({}), c.?readinessProbe.orValue({}), c.?startupProbe.orValue({}),
  c.?lifecycle.?postStart.orValue({}), c.?lifecycle.?preStop.orValue({})].all(h,
  h.?httpGet.?host.orValue('') == '' && h.?tcpSocket.?host.orValue('') == '')`},
	{control: "AppArmor", id: "appArmorProfile",
		pod: `(object.spec.?securityContext.?appArmorProfile.orValue(null) == null ||
  object.spec.?securityContext.?appArmorProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']) &&
  object.metadata.?annotations.orValue({}).all(k, !k.startsWith('container.apparmor.security.beta.kubernetes.io/') ||
  object.metadata.annotations[k] in ['', 'runtime/default'] || object.metadata.annotations[k].startsWith('localhost/'))`,
		container: `c.?securityContext.?appArmorProfile.orValue(null) == null ||
  c.?securityContext.?appArmorProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']`},
	{control: "SELinux", id: "seLinuxOptions",
		pod: `cel.bind(o, object.spec.?securityContext.?seLinuxOptions.orValue(null), o == null ||
  o.?type.orValue('') in ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'] &&
  o.?user.orValue('') == '' && o.?role.orValue('') == '')`,
		container: `cel.bind(o, c.?securityContext.?seLinuxOptions.orValue(null), o == null ||
  o.?type.orValue('') in ['', 'container_t', 'container_init_t', 'container_kvm_t', 'container_engine_t'] &&
  o.?user.orValue('') == '' && o.?role.orValue('') == '')`},
	{control: "/proc Mount Type", id: "procMount",
		container: `object.spec.?hostUsers.orValue(true) == false || c.?securityContext.?procMount.orValue('Default') == 'Default'`},
	{control: "Seccomp", id: "seccompProfile_baseline",
		pod: `object.spec.?securityContext.?seccompProfile.orValue(null) == null ||
  object.spec.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']`,
		container: `c.?securityContext.?seccompProfile.orValue(null) == null ||
  c.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']`},
	{control: "Sysctls", id: "sysctls",
		pod: `object.spec.?securityContext.?sysctls.orValue([]).all(s, s.?name.orValue('') in ['kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range', 'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start', 'net.ipv4.ip_local_reserved_ports', 'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl', 'net.ipv4.tcp_keepalive_probes', 'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem', 'net.ipv4.tcp_slow_start_after_idle', 'net.ipv4.tcp_notsent_lowat'])`},
	{control: "Volume Types", id: "restrictedVolumes", restricted: true,
		pod: `object.spec.?volumes.orValue([]).all(v, v.exists(k, k in ['configMap', 'csi', 'downwardAPI', 'emptyDir',
  'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret'] && v[k] != null))`},
	{control: "Privilege Escalation", id: "allowPrivilegeEscalation", restricted: true,
		container: `object.spec.?os.?name.orValue('') == 'windows' || c.?securityContext.?allowPrivilegeEscalation.orValue(true) == false`},
	{control: "Running as Non-root", id: "runAsNonRoot", restricted: true,
		pod: `object.spec.?hostUsers.orValue(true) == false || object.spec.?securityContext.?runAsNonRoot.orValue(true) != false`,
		container: `object.spec.?hostUsers.orValue(true) == false ||
  cel.bind(v, c.?securityContext.?runAsNonRoot.orValue(null), v != null ? v != false :
  object.spec.?securityContext.?runAsNonRoot.orValue(false) == true)`,
		fake: `object.spec.?hostUsers.orValue(true) == false ||
  (object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])).all(c, ` + runAsNonRootOK + `) &&
  size(object.spec.?containers.orValue([]).filter(c, !(` + runAsNonRootOK + `))) <=
  (object.spec.?securityContext.?runAsNonRoot.orValue(false) == true ? 0 : 1)`},
	{control: "Running as Non-root user", id: "runAsUser", restricted: true,
		pod:       `object.spec.?hostUsers.orValue(true) == false || object.spec.?securityContext.?runAsUser.orValue(1) != 0`,
		container: `object.spec.?hostUsers.orValue(true) == false || c.?securityContext.?runAsUser.orValue(1) != 0`},
	{control: "Seccomp", id: "seccompProfile_restricted", restricted: true,
		pod: `object.spec.?os.?name.orValue('') == 'windows' || object.spec.?securityContext.?seccompProfile.orValue(null) == null ||
  object.spec.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']`,
		container: `object.spec.?os.?name.orValue('') == 'windows' || (c.?securityContext.?seccompProfile.orValue(null) != null ?
  c.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost'] :
  object.spec.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost'])`,
		// the containers that do not set the field fail only when no
		// field is set to a forbidden value
		withImages: `object.spec.?os.?name.orValue('') == 'windows' || ` + seccompBinds + `
  (podBad || containers.exists(c, ` + seccompBad + `)) ?
  !podBad && !containers.exists(c, !(MATCH) && ` + seccompBad + `) :
  !containers.exists(c, !(MATCH) && ` + seccompUnset + `)))`,
		fake: `object.spec.?os.?name.orValue('') == 'windows' || ` + seccompBinds + `
  cel.bind(explicit, podBad || containers.exists(c, ` + seccompBad + `),
  (object.spec.?initContainers.orValue([]) + object.spec.?ephemeralContainers.orValue([])).all(c,
  !(explicit ? ` + seccompBad + ` : ` + seccompUnset + `)) &&
  size(object.spec.?containers.orValue([]).filter(c, explicit ? ` + seccompBad + ` : ` + seccompUnset + `)) <=
  (podSeen ? 0 : 1))))`},
	{control: "Capabilities", id: "capabilities_restricted", restricted: true,
		container: `object.spec.?os.?name.orValue('') == 'windows' ||
  c.?securityContext.?capabilities.?drop.orValue([]).exists(cap, cap == 'ALL') &&
  c.?securityContext.?capabilities.?add.orValue([]).all(cap, cap == 'NET_BIND_SERVICE')`},
	{control: "/proc Mount Type", id: "procMount_restricted", restricted: true,
		container: `c.?securityContext.?procMount.orValue('Default') == 'Default'`},
}

// The parts of the checks whose containers' errors depend on each other.
const (
	runAsNonRootOK = `cel.bind(v, c.?securityContext.?runAsNonRoot.orValue(null), v != null ? v != false :
  object.spec.?securityContext.?runAsNonRoot.orValue(false) == true)`
	// podSeen: the pod sets seccompProfile; podBad: to a forbidden type
	seccompBinds = `cel.bind(podSeen, object.spec.?securityContext.?seccompProfile.orValue(null) != null,
  cel.bind(podBad, podSeen && !(object.spec.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']),`
	seccompBad = `(c.?securityContext.?seccompProfile.orValue(null) != null &&
  !(c.?securityContext.?seccompProfile.?type.orValue('') in ['RuntimeDefault', 'Localhost']))`
	seccompUnset = `(c.?securityContext.?seccompProfile.orValue(null) == null && (!podSeen || podBad))`
)

// pssScope says where a control's fields are, which decides the forms of
// its exclusions (as Kyverno validates them).
var pssScope = map[string]string{
	"Host Namespaces": "pod", "HostPath Volumes": "pod", "Sysctls": "pod", "Volume Types": "pod",
	"Privileged Containers": "container", "Capabilities": "container", "Host Ports": "container",
	"Host Probes / Lifecycle Hooks": "container", "/proc Mount Type": "container", "Privilege Escalation": "container",
	"HostProcess": "either", "AppArmor": "either", "SELinux": "either", "Seccomp": "either",
	"Running as Non-root": "either", "Running as Non-root user": "either",
}

// pssExclusion is what the exclusions of a control leave out: its pod
// part (podLevel: an exclusion without images), and the containers whose
// image is one of images.
type pssExclusion struct {
	podLevel bool
	images   []string
}

// podSecurityBody converts validate.podSecurity: every check of the level
// at the latest version, less the exclusions. An exclusion of a control
// without images exempts its pod-level fields; one with images exempts
// the containers with one of the images, and the pod-level fields when
// there is such a container (Kyverno re-evaluates the pod reduced to them
// and removes the field errors found there again).
func (c *jp) podSecurityBody(ps *api.PodSecurity, path string) (body, error) {
	restricted := false
	switch ps.Level {
	case "baseline":
	case "restricted":
		restricted = true
	case "privileged":
		return body{holds: exTrue, skip: exFalse}, nil
	default:
		return body{}, unsupportedf("podSecurity level", "at %s.level: %q is no Pod Security level", path, ps.Level)
	}
	if ps.Version != "" && ps.Version != "latest" {
		return body{}, unsupportedf("podSecurity version "+ps.Version, "at %s.version: a pinned version runs every revision of a check up to it (older controls and values too); only latest converts", path)
	}
	excl := map[string]*pssExclusion{}
	for i, x := range ps.Exclude {
		xpath := fmt.Sprintf("%s.exclude[%d]", path, i)
		scope, ok := pssScope[x.ControlName]
		switch {
		case !ok:
			return body{}, unsupportedf("podSecurity exclusion", "at %s.controlName: %q is no control", xpath, x.ControlName)
		case x.RestrictedField != "" || len(x.Values) > 0:
			return body{}, unsupportedf("podSecurity exclusion", "at %s.restrictedField: an exclusion by field values exempts single field errors of the library's checks, which CEL does not see", xpath)
		case scope == "container" && len(x.Images) == 0:
			return body{}, unsupportedf("podSecurity exclusion", "at %s: %s is a container-level control: Kyverno requires images", xpath, x.ControlName)
		case scope == "pod" && len(x.Images) > 0:
			return body{}, unsupportedf("podSecurity exclusion", "at %s: %s is a pod-level control: Kyverno forbids images", xpath, x.ControlName)
		}
		e := excl[x.ControlName]
		if e == nil {
			e = &pssExclusion{}
			excl[x.ControlName] = e
		}
		if len(x.Images) == 0 {
			e.podLevel = true
		}
		e.images = append(e.images, x.Images...)
	}
	level := "baseline"
	if restricted {
		level = "restricted"
	}
	var parts []string
	for _, chk := range pssChecks {
		if chk.restricted && !restricted {
			continue
		}
		e := excl[chk.control]
		cond, err := chk.cel(e)
		if err != nil {
			return body{}, at(path+".exclude", err)
		}
		if cond == "" {
			continue
		}
		note := chk.control + " (" + chk.id + ")"
		if e != nil {
			note += ", less the rule's exclusions"
		}
		parts = append(parts, "// "+note+"\n"+cond)
	}
	holds := "// Pod Security Standards " + level + ":latest (k8s.io/pod-security-admission v0.37)\n" +
		"cel.bind(containers, object.spec.?initContainers.orValue([]) + object.spec.?containers.orValue([]) +\n" +
		"  object.spec.?ephemeralContainers.orValue([]),\n" + strings.Join(parts, " &&\n") + ")"
	if c.sc.object.s != "object" {
		holds = strings.ReplaceAll(holds, "object.", c.sc.object.s+".")
	}
	return body{holds: ex{s: holds, prec: precPrimary}, skip: exFalse}, nil
}

// cel is the check less the exclusions of its control, as Kyverno
// applies them: it evaluates the pod reduced to what an exclusion covers
// (its pod-level fields and one fake container without images, the
// containers with one of the images and no pod-level field with them)
// and removes each field error found there from the pod's: an exclusion
// with images exempts those containers' fields, one without the pod's
// fields, and, for the two checks that fail an empty container when the
// pod does not set the field, one error of a regular container.
func (chk pssCheck) cel(e *pssExclusion) (string, error) {
	var images ex
	if e != nil && len(e.images) > 0 {
		images = imageIn("c.?image.orValue('')", e.images)
		if images.isTrue() {
			// every container: only the pod's fields are left
			if e.podLevel || chk.pod == "" {
				return "", nil
			}
			return "(" + chk.pod + ")", nil
		}
	}
	podLevel := e != nil && e.podLevel
	if podLevel && chk.fake != "" {
		if images.s != "" {
			return "", unsupportedf("podSecurity exclusions of "+chk.control, "with and without images together: Kyverno's result depends on their order (each removes field errors the other may have removed)")
		}
		return "(" + chk.fake + ")", nil
	}
	if images.s != "" && chk.withImages != "" {
		return "(" + strings.ReplaceAll(chk.withImages, "MATCH", images.s) + ")", nil
	}
	var conds []string
	if chk.pod != "" && !podLevel {
		conds = append(conds, "("+chk.pod+")")
	}
	if ctr := chk.container; ctr != "" {
		if images.s != "" {
			ctr = images.s + " ||\n  " + ctr
		}
		conds = append(conds, "containers.all(c, "+ctr+")")
	}
	return strings.Join(conds, " &&\n"), nil
}

// imageIn tests that an image is one of the wildcard patterns.
func imageIn(image string, patterns []string) ex {
	var tests []ex
	for _, p := range patterns {
		tests = append(tests, wildcardMatch(ident(image), p))
	}
	return or(tests...)
}
