package podsecurity

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
)

// FieldErrorType is the kind of a field error of a failed check.
type FieldErrorType string

const (
	// FieldErrorForbidden: the field holds a forbidden value.
	FieldErrorForbidden FieldErrorType = "Forbidden"
	// FieldErrorRequired: the field must be set and is not.
	FieldErrorRequired FieldErrorType = "Required value"
)

// FieldError is one offending field of a failed check, as Kyverno reports it
// in its "field error list".
//
// BadValue holds the offending value: a bool, an int, a non-empty string or
// a []string (capabilities), or the empty string when the error carries no
// value (a required field, or a forbidden volume type). Some values are
// spelled as upstream spells them, for example the string "nil" for an
// allowPrivilegeEscalation left unset in a securityContext.
type FieldError struct {
	Type     FieldErrorType
	Field    string
	BadValue any
}

// String renders the error as upstream does in rule messages:
// "<field> is forbidden, forbidden values found: <value>" for a forbidden
// value, "<field>: Forbidden" or "<field>: Required value" otherwise.
func (e FieldError) String() string {
	var b strings.Builder
	b.Grow(e.textLen())
	e.writeTo(&b)
	return b.String()
}

// forbiddenValues is what String writes between the field and the value.
const forbiddenValues = " is forbidden, forbidden values found: "

// writeTo writes String's text to b.
func (e FieldError) writeTo(b *strings.Builder) {
	if e.Type == FieldErrorForbidden && hasBadValue(e.BadValue) {
		b.WriteString(e.Field)
		b.WriteString(forbiddenValues)
		switch v := e.BadValue.(type) {
		case string:
			b.WriteString(v)
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case int:
			var digits [20]byte
			b.Write(strconv.AppendInt(digits[:0], int64(v), 10))
		case []string:
			// as %+v writes it
			b.WriteByte('[')
			for i, s := range v {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(s)
			}
			b.WriteByte(']')
		default:
			// not Fprintf: b given to an io.Writer would escape, and the
			// builders of the messages with it
			b.WriteString(fmt.Sprintf("%+v", e.BadValue))
		}
		return
	}
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(string(e.Type))
}

// textLen is the length of String's text, to size buffers (a guess for
// values of other types than writeTo's own).
func (e FieldError) textLen() int {
	if e.Type == FieldErrorForbidden && hasBadValue(e.BadValue) {
		n := len(e.Field) + len(forbiddenValues)
		switch v := e.BadValue.(type) {
		case string:
			return n + len(v)
		case bool:
			if v {
				return n + len("true")
			}
			return n + len("false")
		case int:
			d := 1
			if v < 0 {
				d++
			}
			for x := v / 10; x != 0; x /= 10 {
				d++
			}
			return n + d
		case []string:
			n += 2
			for i, s := range v {
				if i > 0 {
					n++
				}
				n += len(s)
			}
			return n
		}
		return n + 16
	}
	return len(e.Field) + len(": ") + len(e.Type)
}

func hasBadValue(v any) bool {
	s, ok := v.(string)
	return !ok || s != ""
}

// badValues lists the values of a field error as strings, the way upstream
// compares them with the values of an exemption.
func badValues(v any) []string {
	switch t := v.(type) {
	case string:
		if t == "" {
			return nil
		}
		return []string{t}
	case bool:
		return []string{strconv.FormatBool(t)}
	case int:
		return []string{strconv.Itoa(t)}
	case []string:
		return t
	}
	return nil
}

func forbidden(path string, value any) FieldError {
	return FieldError{Type: FieldErrorForbidden, Field: path, BadValue: value}
}

func required(path string) FieldError {
	return FieldError{Type: FieldErrorRequired, Field: path, BadValue: ""}
}

// errFn computes the field errors of one check revision on a pod the
// library rejected. min is the minimum version of the revision, for checks
// whose allowed values changed between revisions. The field paths are
// written into a (nil: each in its own allocation).
type errFn func(meta *metav1.ObjectMeta, spec *corev1.PodSpec, min psaapi.Version) []FieldError

// fieldErrorFns maps library check IDs to their field error computation.
var fieldErrorFns = map[string]errFn{
	"allowPrivilegeEscalation":   allowPrivilegeEscalationErrs,
	"appArmorProfile":            appArmorProfileErrs,
	"capabilities_baseline":      capabilitiesBaselineErrs,
	"capabilities_restricted":    capabilitiesRestrictedErrs,
	"hostNamespaces":             hostNamespacesErrs,
	"hostPathVolumes":            hostPathVolumesErrs,
	"hostPorts":                  hostPortsErrs,
	"hostProbesAndHostLifecycle": hostProbesErrs,
	"privileged":                 privilegedErrs,
	"procMount":                  procMountErrs,
	"procMount_restricted":       procMountErrs,
	"restrictedVolumes":          restrictedVolumesErrs,
	"runAsNonRoot":               runAsNonRootErrs,
	"runAsUser":                  runAsUserErrs,
	"seLinuxOptions":             seLinuxOptionsErrs,
	"seccompProfile_baseline":    seccompBaselineErrs,
	"seccompProfile_restricted":  seccompRestrictedErrs,
	"sysctls":                    sysctlsErrs,
	"windowsHostProcess":         windowsHostProcessErrs,
}

// unknownCheckErrs stands in for a check this package has no field error
// computation for (a check added by a newer library): one forbidden error on
// the pod spec, so the failure still shows and can still be exempted by a
// control-wide exclusion.
func unknownCheckErrs(*metav1.ObjectMeta, *corev1.PodSpec, psaapi.Version) []FieldError {
	return []FieldError{forbidden("spec", "")}
}

// visitContainers calls fn for every container with its field path, in the
// library's order: init containers, containers, ephemeral containers. The
// paths are written into a.
func visitContainers(spec *corev1.PodSpec, fn func(c *corev1.Container, path containerPath)) {
	for i := range spec.InitContainers {
		fn(&spec.InitContainers[i], containerPath{"spec.initContainers[", i})
	}
	for i := range spec.Containers {
		fn(&spec.Containers[i], containerPath{"spec.containers[", i})
	}
	for i := range spec.EphemeralContainers {
		fn((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon), containerPath{"spec.ephemeralContainers[", i})
	}
}

// containerPath is the field path of a container, written only for a
// field error (at): "spec.containers[0]" and the like.
type containerPath struct {
	list  string // "spec.containers[" and the like
	index int
}

// at returns the path of a field of the container: the container's path
// followed by the parts (the first one starts with a dot).
func (p containerPath) at(parts ...string) string {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(p.index), 10)
	n := len(p.list) + len(d) + 1
	for _, s := range parts {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(p.list)
	b.Write(d)
	b.WriteByte(']')
	for _, s := range parts {
		b.WriteString(s)
	}
	return b.String()
}

// sortedUnique sorts items and removes repeated ones, in place.
func sortedUnique(items []string) []string {
	sort.Strings(items)
	return slices.Compact(items)
}

func allowPrivilegeEscalationErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		const field = ".securityContext.allowPrivilegeEscalation"
		switch {
		case c.SecurityContext == nil:
			errs = append(errs, required(path.at(field)))
		case c.SecurityContext.AllowPrivilegeEscalation == nil:
			errs = append(errs, forbidden(path.at(field), "nil"))
		case *c.SecurityContext.AllowPrivilegeEscalation:
			errs = append(errs, forbidden(path.at(field), true))
		}
	})
	return errs
}

const (
	appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"
	appArmorRuntimeDefault   = "runtime/default"
	appArmorLocalhostPrefix  = "localhost/"
)

func appArmorTypeAllowed(t corev1.AppArmorProfileType) bool {
	return t == corev1.AppArmorProfileTypeRuntimeDefault || t == corev1.AppArmorProfileTypeLocalhost
}

func appArmorProfileErrs(meta *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	if sc := spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !appArmorTypeAllowed(sc.AppArmorProfile.Type) {
		errs = append(errs, forbidden("spec.securityContext.appArmorProfile.type", string(sc.AppArmorProfile.Type)))
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !appArmorTypeAllowed(sc.AppArmorProfile.Type) {
			errs = append(errs, forbidden(path.at(".securityContext.appArmorProfile.type"), string(sc.AppArmorProfile.Type)))
		}
	})
	keys := make([]string, 0, len(meta.Annotations))
	for k, v := range meta.Annotations {
		if strings.HasPrefix(k, appArmorAnnotationPrefix) &&
			v != "" && v != appArmorRuntimeDefault && !strings.HasPrefix(v, appArmorLocalhostPrefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		errs = append(errs, forbidden("metadata.annotations["+k+"]", meta.Annotations[k]))
	}
	return errs
}

var baselineCapabilities = map[string]struct{}{
	"AUDIT_WRITE": {}, "CHOWN": {}, "DAC_OVERRIDE": {}, "FOWNER": {}, "FSETID": {}, "KILL": {}, "MKNOD": {},
	"NET_BIND_SERVICE": {}, "SETFCAP": {}, "SETGID": {}, "SETPCAP": {}, "SETUID": {}, "SYS_CHROOT": {},
}

func capabilitiesBaselineErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			return
		}
		var bad []string
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if _, ok := baselineCapabilities[string(cp)]; !ok {
				bad = append(bad, string(cp))
			}
		}
		if len(bad) > 0 {
			errs = append(errs, forbidden(path.at(".securityContext.capabilities.add"), sortedUnique(bad)))
		}
	})
	return errs
}

func capabilitiesRestrictedErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var dropErrs, addErrs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		const dropPath = ".securityContext.capabilities.drop"
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			dropErrs = append(dropErrs, required(path.at(dropPath)))
			return
		}
		caps := c.SecurityContext.Capabilities
		droppedAll := false
		for _, cp := range caps.Drop {
			if cp == "ALL" {
				droppedAll = true
				break
			}
		}
		if !droppedAll {
			if len(caps.Drop) == 0 {
				dropErrs = append(dropErrs, required(path.at(dropPath)))
			} else {
				dropped := make([]string, len(caps.Drop))
				for i, cp := range caps.Drop {
					dropped[i] = string(cp)
				}
				dropErrs = append(dropErrs, forbidden(path.at(dropPath), sortedUnique(dropped)))
			}
		}
		var bad []string
		for _, cp := range caps.Add {
			if cp != "NET_BIND_SERVICE" {
				bad = append(bad, string(cp))
			}
		}
		if len(bad) > 0 {
			addErrs = append(addErrs, forbidden(path.at(".securityContext.capabilities.add"), sortedUnique(bad)))
		}
	})
	return append(dropErrs, addErrs...)
}

func hostNamespacesErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	if spec.HostNetwork {
		errs = append(errs, forbidden("spec.hostNetwork", true))
	}
	if spec.HostPID {
		errs = append(errs, forbidden("spec.hostPID", true))
	}
	if spec.HostIPC {
		errs = append(errs, forbidden("spec.hostIPC", true))
	}
	return errs
}

func hostPathVolumesErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	for i, v := range spec.Volumes {
		if v.HostPath != nil {
			errs = append(errs, forbidden("spec.volumes["+strconv.Itoa(i)+"].hostPath", v.HostPath.Path))
		}
	}
	return errs
}

func hostPortsErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		for i, p := range c.Ports {
			if p.HostPort != 0 {
				errs = append(errs, forbidden(path.at(".ports[", strconv.Itoa(i), "].hostPort"), int(p.HostPort)))
			}
		}
	})
	return errs
}

func hostProbesErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	// field is the handler's field of the container (".livenessProbe")
	handler := func(path containerPath, field string, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction) {
		if httpGet != nil && httpGet.Host != "" {
			errs = append(errs, forbidden(path.at(field, ".httpGet.host"), httpGet.Host))
		}
		if tcp != nil && tcp.Host != "" {
			errs = append(errs, forbidden(path.at(field, ".tcpSocket.host"), tcp.Host))
		}
	}
	probe := func(path containerPath, field string, p *corev1.Probe) {
		if p != nil {
			handler(path, field, p.HTTPGet, p.TCPSocket)
		}
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		probe(path, ".livenessProbe", c.LivenessProbe)
		probe(path, ".readinessProbe", c.ReadinessProbe)
		probe(path, ".startupProbe", c.StartupProbe)
		if c.Lifecycle != nil {
			if h := c.Lifecycle.PostStart; h != nil {
				handler(path, ".lifecycle.postStart", h.HTTPGet, h.TCPSocket)
			}
			if h := c.Lifecycle.PreStop; h != nil {
				handler(path, ".lifecycle.preStop", h.HTTPGet, h.TCPSocket)
			}
		}
	})
	return errs
}

func privilegedErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			errs = append(errs, forbidden(path.at(".securityContext.privileged"), true))
		}
	})
	return errs
}

func procMountErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if c.SecurityContext != nil && c.SecurityContext.ProcMount != nil && *c.SecurityContext.ProcMount != corev1.DefaultProcMount {
			errs = append(errs, forbidden(path.at(".securityContext.procMount"), string(*c.SecurityContext.ProcMount)))
		}
	})
	return errs
}

// restrictedVolumeType names the volume source of a volume the restricted
// profile forbids, or "" when the volume is allowed.
func restrictedVolumeType(v *corev1.Volume) string {
	switch {
	case v.ConfigMap != nil, v.CSI != nil, v.DownwardAPI != nil, v.EmptyDir != nil, v.Ephemeral != nil,
		v.Image != nil, v.PersistentVolumeClaim != nil, v.Projected != nil, v.Secret != nil:
		return ""
	case v.HostPath != nil:
		return "hostPath"
	case v.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case v.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case v.GitRepo != nil:
		return "gitRepo"
	case v.NFS != nil:
		return "nfs"
	case v.ISCSI != nil:
		return "iscsi"
	case v.Glusterfs != nil:
		return "glusterfs"
	case v.RBD != nil:
		return "rbd"
	case v.FlexVolume != nil:
		return "flexVolume"
	case v.Cinder != nil:
		return "cinder"
	case v.CephFS != nil:
		return "cephfs"
	case v.Flocker != nil:
		return "flocker"
	case v.FC != nil:
		return "fc"
	case v.AzureFile != nil:
		return "azureFile"
	case v.VsphereVolume != nil:
		return "vsphereVolume"
	case v.Quobyte != nil:
		return "quobyte"
	case v.AzureDisk != nil:
		return "azureDisk"
	case v.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case v.PortworxVolume != nil:
		return "portworxVolume"
	case v.ScaleIO != nil:
		return "scaleIO"
	case v.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

func restrictedVolumesErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	for i := range spec.Volumes {
		if t := restrictedVolumeType(&spec.Volumes[i]); t != "" {
			errs = append(errs, forbidden("spec.volumes["+strconv.Itoa(i)+"]."+t, ""))
		}
	}
	return errs
}

func runAsNonRootErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var explicit, implicit []FieldError
	podNonRoot := false
	if sc := spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		if *sc.RunAsNonRoot {
			podNonRoot = true
		} else {
			explicit = append(explicit, forbidden("spec.securityContext.runAsNonRoot", false))
		}
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		const field = ".securityContext.runAsNonRoot"
		if c.SecurityContext != nil && c.SecurityContext.RunAsNonRoot != nil {
			if !*c.SecurityContext.RunAsNonRoot {
				explicit = append(explicit, forbidden(path.at(field), false))
			}
			return
		}
		if !podNonRoot {
			implicit = append(implicit, required(path.at(field)))
		}
	})
	return append(explicit, implicit...)
}

func runAsUserErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	if sc := spec.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		errs = append(errs, forbidden("spec.securityContext.runAsUser", 0))
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil && *c.SecurityContext.RunAsUser == 0 {
			errs = append(errs, forbidden(path.at(".securityContext.runAsUser"), 0))
		}
	})
	return errs
}

func seLinuxTypeAllowed(t string, min psaapi.Version) bool {
	switch t {
	case "", "container_t", "container_init_t", "container_kvm_t":
		return true
	case "container_engine_t":
		return !min.Older(psaapi.MajorMinorVersion(1, 31))
	}
	return false
}

func seLinuxOptionsErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, min psaapi.Version) []FieldError {
	var errs []FieldError
	add := func(path string, o *corev1.SELinuxOptions) {
		if !seLinuxTypeAllowed(o.Type, min) {
			errs = append(errs, forbidden(path+".seLinuxOptions.type", o.Type))
		}
		if o.User != "" {
			errs = append(errs, forbidden(path+".seLinuxOptions.user", o.User))
		}
		if o.Role != "" {
			errs = append(errs, forbidden(path+".seLinuxOptions.role", o.Role))
		}
	}
	if sc := spec.SecurityContext; sc != nil && sc.SELinuxOptions != nil {
		add("spec.securityContext", sc.SELinuxOptions)
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if c.SecurityContext != nil && c.SecurityContext.SELinuxOptions != nil {
			add(path.at(".securityContext"), c.SecurityContext.SELinuxOptions)
		}
	})
	return errs
}

const (
	seccompPodAnnotation             = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotationPrefix = "container.seccomp.security.alpha.kubernetes.io/"
)

func seccompTypeAllowed(t corev1.SeccompProfileType) bool {
	return t == corev1.SeccompProfileTypeLocalhost || t == corev1.SeccompProfileTypeRuntimeDefault
}

func seccompAnnotationAllowed(v string) bool {
	return v == "runtime/default" || v == "docker/default" || strings.HasPrefix(v, "localhost/")
}

func seccompBaselineErrs(meta *metav1.ObjectMeta, spec *corev1.PodSpec, min psaapi.Version) []FieldError {
	if min.Older(psaapi.MajorMinorVersion(1, 19)) {
		return seccompAnnotationErrs(meta, spec)
	}
	var errs []FieldError
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil && !seccompTypeAllowed(sc.SeccompProfile.Type) {
		errs = append(errs, forbidden("spec.securityContext.seccompProfile.type", string(sc.SeccompProfile.Type)))
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil && !seccompTypeAllowed(sc.SeccompProfile.Type) {
			errs = append(errs, forbidden(path.at(".securityContext.seccompProfile.type"), string(sc.SeccompProfile.Type)))
		}
	})
	return errs
}

// seccompAnnotationErrs covers the 1.0 revision of seccompProfile_baseline,
// which checks the deprecated seccomp annotations. Errors are sorted by
// "key=value" (upstream collects them in a map).
func seccompAnnotationErrs(meta *metav1.ObjectMeta, spec *corev1.PodSpec) []FieldError {
	type entry struct {
		sortKey string
		err     FieldError
	}
	var entries []entry
	seen := map[string]bool{}
	check := func(key string) {
		v, ok := meta.Annotations[key]
		if !ok || seccompAnnotationAllowed(v) || seen[key] {
			return
		}
		seen[key] = true
		entries = append(entries, entry{fmt.Sprintf("%s=%q", key, v), forbidden("metadata.annotations["+key+"]", v)})
	}
	check(seccompPodAnnotation)
	visitContainers(spec, func(c *corev1.Container, _ containerPath) {
		check(seccompContainerAnnotationPrefix + c.Name)
	})
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].sortKey < entries[j].sortKey })
	errs := make([]FieldError, len(entries))
	for i, e := range entries {
		errs[i] = e.err
	}
	return errs
}

func seccompRestrictedErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var explicit, implicit []FieldError
	podSet := false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if seccompTypeAllowed(sc.SeccompProfile.Type) {
			podSet = true
		} else {
			explicit = append(explicit, forbidden("spec.securityContext.seccompProfile.type", string(sc.SeccompProfile.Type)))
		}
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		const field = ".securityContext.seccompProfile.type"
		if sc := c.SecurityContext; sc != nil && sc.SeccompProfile != nil {
			if !seccompTypeAllowed(sc.SeccompProfile.Type) {
				explicit = append(explicit, forbidden(path.at(field), string(sc.SeccompProfile.Type)))
			}
			return
		}
		if !podSet {
			implicit = append(implicit, required(path.at(field)))
		}
	})
	// Upstream reports the explicit offenders only when there are some.
	if len(explicit) > 0 {
		return explicit
	}
	return implicit
}

// sysctlsAllowed lists the safe sysctls per revision of the sysctls check.
var sysctlsAllowed = []struct {
	since psaapi.Version
	names []string
}{
	{psaapi.MajorMinorVersion(1, 0), []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}},
	{psaapi.MajorMinorVersion(1, 27), []string{"net.ipv4.ip_local_reserved_ports"}},
	{psaapi.MajorMinorVersion(1, 29), []string{"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}},
	{psaapi.MajorMinorVersion(1, 32), []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}},
	{psaapi.MajorMinorVersion(1, 37), []string{"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}},
}

func sysctlAllowed(name string, min psaapi.Version) bool {
	for _, set := range sysctlsAllowed {
		if min.Older(set.since) {
			break
		}
		for _, n := range set.names {
			if n == name {
				return true
			}
		}
	}
	return false
}

func sysctlsErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, min psaapi.Version) []FieldError {
	if spec.SecurityContext == nil {
		return nil
	}
	var errs []FieldError
	for i, s := range spec.SecurityContext.Sysctls {
		if !sysctlAllowed(s.Name, min) {
			errs = append(errs, forbidden("spec.securityContext.sysctls["+strconv.Itoa(i)+"].name", s.Name))
		}
	}
	return errs
}

func windowsHostProcessErrs(_ *metav1.ObjectMeta, spec *corev1.PodSpec, _ psaapi.Version) []FieldError {
	var errs []FieldError
	if sc := spec.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
		errs = append(errs, forbidden("spec.securityContext.windowsOptions.hostProcess", true))
	}
	visitContainers(spec, func(c *corev1.Container, path containerPath) {
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil && *sc.WindowsOptions.HostProcess {
			errs = append(errs, forbidden(path.at(".securityContext.windowsOptions.hostProcess"), true))
		}
	})
	return errs
}
