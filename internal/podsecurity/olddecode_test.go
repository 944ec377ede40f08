package podsecurity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// oldDecodePod is decodePod as it was before paths were written only for
// errors and volume sources read in one pass, the reference for both.
//
// It extracts the pod (metadata and spec) a resource describes,
// reading only the fields the checks use. The input is not modified.
func oldDecodePod(obj map[string]any) (*corev1.Pod, workload, error) {
	if obj == nil {
		return nil, workload{}, &ResourceError{Err: errors.New("no resource")}
	}
	kind, _ := obj["kind"].(string)
	w, ok := workloads[kind]
	if !ok {
		return nil, workload{}, &ResourceError{Path: "kind", Err: fmt.Errorf("%w: %q", ErrUnsupportedKind, kind)}
	}
	d := &oldDecoder{}
	pod := &corev1.Pod{}
	if meta := d.walk(obj, w.meta); meta != nil {
		d.meta(meta, strings.Join(w.meta, "."), pod)
	}
	if spec := d.walk(obj, w.spec); spec != nil {
		d.spec(spec, strings.Join(w.spec, "."), &pod.Spec)
	}
	if d.err != nil {
		return nil, w, d.err
	}
	return pod, w, nil
}

// oldDecoder reads JSON-like trees into the typed pod, keeping the first error.
type oldDecoder struct {
	err error
}

func (d *oldDecoder) fail(path string, format string, args ...any) {
	if d.err == nil {
		d.err = &ResourceError{Path: path, Err: fmt.Errorf(format, args...)}
	}
}

// walk follows path through nested objects: nil when a step is missing or
// null, and an error when a step is not an object.
func (d *oldDecoder) walk(obj map[string]any, path []string) map[string]any {
	cur := obj
	for i, key := range path {
		v, ok := cur[key]
		if !ok || v == nil {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(strings.Join(path[:i+1], "."), "expected an object, got %s", typeName(v))
			return nil
		}
		cur = m
	}
	return cur
}

// object returns m[key] as an object (nil when absent or null).
func (d *oldDecoder) object(m map[string]any, key, path string) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		d.fail(path+"."+key, "expected an object, got %s", typeName(v))
		return nil
	}
	return o
}

// present reports whether m[key] is set and not null (an object is
// expected, as for volume sources).
func (d *oldDecoder) present(m map[string]any, key, path string) bool {
	return d.object(m, key, path) != nil
}

func (d *oldDecoder) list(m map[string]any, key, path string) []any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.fail(path+"."+key, "expected an array, got %s", typeName(v))
		return nil
	}
	return l
}

func (d *oldDecoder) str(m map[string]any, key, path string) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.fail(path+"."+key, "expected a string, got %s", typeName(v))
	}
	return s
}

func (d *oldDecoder) boolean(m map[string]any, key, path string) bool {
	b := d.boolPtr(m, key, path)
	return b != nil && *b
}

func (d *oldDecoder) boolPtr(m map[string]any, key, path string) *bool {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	b, ok := v.(bool)
	if !ok {
		d.fail(path+"."+key, "expected a boolean, got %s", typeName(v))
		return nil
	}
	return &b
}

// integer reads an integral number of any of the numeric types JSON-like
// trees carry, within [min, max].
func (d *oldDecoder) integer(m map[string]any, key, path string, min, max int64) (int64, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	var n int64
	switch t := v.(type) {
	case float64:
		if t != math.Trunc(t) || t < math.MinInt64 || t >= math.MaxInt64 {
			d.fail(path+"."+key, "expected an integer, got %v", t)
			return 0, false
		}
		n = int64(t)
	case float32:
		f := float64(t)
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			d.fail(path+"."+key, "expected an integer, got %v", t)
			return 0, false
		}
		n = int64(f)
	case int:
		n = int64(t)
	case int8:
		n = int64(t)
	case int16:
		n = int64(t)
	case int32:
		n = int64(t)
	case int64:
		n = t
	case uint:
		if uint64(t) > math.MaxInt64 {
			d.fail(path+"."+key, "integer %d out of range", t)
			return 0, false
		}
		n = int64(t)
	case uint8:
		n = int64(t)
	case uint16:
		n = int64(t)
	case uint32:
		n = int64(t)
	case uint64:
		if t > math.MaxInt64 {
			d.fail(path+"."+key, "integer %d out of range", t)
			return 0, false
		}
		n = int64(t)
	case json.Number:
		i, err := strconv.ParseInt(string(t), 10, 64)
		if err != nil {
			d.fail(path+"."+key, "expected an integer, got %s", t)
			return 0, false
		}
		n = i
	default:
		d.fail(path+"."+key, "expected an integer, got %s", typeName(v))
		return 0, false
	}
	if n < min || n > max {
		d.fail(path+"."+key, "integer %d out of range", n)
		return 0, false
	}
	return n, true
}

func (d *oldDecoder) int64Ptr(m map[string]any, key, path string) *int64 {
	n, ok := d.integer(m, key, path, math.MinInt64, math.MaxInt64)
	if !ok {
		return nil
	}
	return &n
}

func (d *oldDecoder) strings(m map[string]any, key, path string) []string {
	l := d.list(m, key, path)
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, v := range l {
		s, ok := v.(string)
		if !ok && v != nil {
			d.fail(path+"."+key+"["+strconv.Itoa(i)+"]", "expected a string, got %s", typeName(v))
		}
		out[i] = s
	}
	return out
}

// meta reads name, namespace and annotations.
func (d *oldDecoder) meta(m map[string]any, path string, pod *corev1.Pod) {
	pod.Name = d.str(m, "name", path)
	pod.Namespace = d.str(m, "namespace", path)
	ann := d.object(m, "annotations", path)
	if ann == nil {
		return
	}
	pod.Annotations = make(map[string]string, len(ann))
	for k, v := range ann {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			d.fail(path+".annotations."+k, "expected a string, got %s", typeName(v))
			continue
		}
		pod.Annotations[k] = s
	}
}

func (d *oldDecoder) spec(m map[string]any, path string, spec *corev1.PodSpec) {
	spec.HostNetwork = d.boolean(m, "hostNetwork", path)
	spec.HostPID = d.boolean(m, "hostPID", path)
	spec.HostIPC = d.boolean(m, "hostIPC", path)
	spec.HostUsers = d.boolPtr(m, "hostUsers", path)
	if os := d.object(m, "os", path); os != nil {
		spec.OS = &corev1.PodOS{Name: corev1.OSName(d.str(os, "name", path+".os"))}
	}
	if sc := d.object(m, "securityContext", path); sc != nil {
		spec.SecurityContext = d.podSecurityContext(sc, path+".securityContext")
	}
	for i, v := range d.list(m, "volumes", path) {
		p := path + ".volumes[" + strconv.Itoa(i) + "]"
		vm, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				d.fail(p, "expected an object, got %s", typeName(v))
			}
			spec.Volumes = append(spec.Volumes, corev1.Volume{})
			continue
		}
		spec.Volumes = append(spec.Volumes, d.volume(vm, p))
	}
	spec.InitContainers = d.containers(m, "initContainers", path)
	spec.Containers = d.containers(m, "containers", path)
	for _, c := range d.containers(m, "ephemeralContainers", path) {
		spec.EphemeralContainers = append(spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)})
	}
}

func (d *oldDecoder) podSecurityContext(m map[string]any, path string) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:    d.boolPtr(m, "runAsNonRoot", path),
		RunAsUser:       d.int64Ptr(m, "runAsUser", path),
		SeccompProfile:  d.seccomp(m, path),
		SELinuxOptions:  d.seLinux(m, path),
		WindowsOptions:  d.windows(m, path),
		AppArmorProfile: d.appArmor(m, path),
	}
	for i, v := range d.list(m, "sysctls", path) {
		p := path + ".sysctls[" + strconv.Itoa(i) + "]"
		s, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				d.fail(p, "expected an object, got %s", typeName(v))
			}
			sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{})
			continue
		}
		sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Name: d.str(s, "name", p), Value: d.str(s, "value", p)})
	}
	return sc
}

func (d *oldDecoder) seccomp(m map[string]any, path string) *corev1.SeccompProfile {
	o := d.object(m, "seccompProfile", path)
	if o == nil {
		return nil
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileType(d.str(o, "type", path+".seccompProfile"))}
}

func (d *oldDecoder) appArmor(m map[string]any, path string) *corev1.AppArmorProfile {
	o := d.object(m, "appArmorProfile", path)
	if o == nil {
		return nil
	}
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(d.str(o, "type", path+".appArmorProfile"))}
}

func (d *oldDecoder) seLinux(m map[string]any, path string) *corev1.SELinuxOptions {
	o := d.object(m, "seLinuxOptions", path)
	if o == nil {
		return nil
	}
	p := path + ".seLinuxOptions"
	return &corev1.SELinuxOptions{
		User:  d.str(o, "user", p),
		Role:  d.str(o, "role", p),
		Type:  d.str(o, "type", p),
		Level: d.str(o, "level", p),
	}
}

func (d *oldDecoder) windows(m map[string]any, path string) *corev1.WindowsSecurityContextOptions {
	o := d.object(m, "windowsOptions", path)
	if o == nil {
		return nil
	}
	return &corev1.WindowsSecurityContextOptions{HostProcess: d.boolPtr(o, "hostProcess", path+".windowsOptions")}
}

// volume reads the volume's name and which source it uses (the checks only
// test for presence, and read the hostPath path).
func (d *oldDecoder) volume(m map[string]any, path string) corev1.Volume {
	v := corev1.Volume{Name: d.str(m, "name", path)}
	s := &v.VolumeSource
	if hp := d.object(m, "hostPath", path); hp != nil {
		s.HostPath = &corev1.HostPathVolumeSource{Path: d.str(hp, "path", path+".hostPath")}
	}
	set := func(key string, assign func()) {
		if d.present(m, key, path) {
			assign()
		}
	}
	set("emptyDir", func() { s.EmptyDir = &corev1.EmptyDirVolumeSource{} })
	set("gcePersistentDisk", func() { s.GCEPersistentDisk = &corev1.GCEPersistentDiskVolumeSource{} })
	set("awsElasticBlockStore", func() { s.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{} })
	set("gitRepo", func() { s.GitRepo = &corev1.GitRepoVolumeSource{} })
	set("secret", func() { s.Secret = &corev1.SecretVolumeSource{} })
	set("nfs", func() { s.NFS = &corev1.NFSVolumeSource{} })
	set("iscsi", func() { s.ISCSI = &corev1.ISCSIVolumeSource{} })
	set("glusterfs", func() { s.Glusterfs = &corev1.GlusterfsVolumeSource{} })
	set("persistentVolumeClaim", func() { s.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{} })
	set("rbd", func() { s.RBD = &corev1.RBDVolumeSource{} })
	set("flexVolume", func() { s.FlexVolume = &corev1.FlexVolumeSource{} })
	set("cinder", func() { s.Cinder = &corev1.CinderVolumeSource{} })
	set("cephfs", func() { s.CephFS = &corev1.CephFSVolumeSource{} })
	set("flocker", func() { s.Flocker = &corev1.FlockerVolumeSource{} })
	set("downwardAPI", func() { s.DownwardAPI = &corev1.DownwardAPIVolumeSource{} })
	set("fc", func() { s.FC = &corev1.FCVolumeSource{} })
	set("azureFile", func() { s.AzureFile = &corev1.AzureFileVolumeSource{} })
	set("configMap", func() { s.ConfigMap = &corev1.ConfigMapVolumeSource{} })
	set("vsphereVolume", func() { s.VsphereVolume = &corev1.VsphereVirtualDiskVolumeSource{} })
	set("quobyte", func() { s.Quobyte = &corev1.QuobyteVolumeSource{} })
	set("azureDisk", func() { s.AzureDisk = &corev1.AzureDiskVolumeSource{} })
	set("photonPersistentDisk", func() { s.PhotonPersistentDisk = &corev1.PhotonPersistentDiskVolumeSource{} })
	set("projected", func() { s.Projected = &corev1.ProjectedVolumeSource{} })
	set("portworxVolume", func() { s.PortworxVolume = &corev1.PortworxVolumeSource{} })
	set("scaleIO", func() { s.ScaleIO = &corev1.ScaleIOVolumeSource{} })
	set("storageos", func() { s.StorageOS = &corev1.StorageOSVolumeSource{} })
	set("csi", func() { s.CSI = &corev1.CSIVolumeSource{} })
	set("ephemeral", func() { s.Ephemeral = &corev1.EphemeralVolumeSource{} })
	set("image", func() { s.Image = &corev1.ImageVolumeSource{} })
	return v
}

func (d *oldDecoder) containers(m map[string]any, key, path string) []corev1.Container {
	l := d.list(m, key, path)
	if l == nil {
		return nil
	}
	out := make([]corev1.Container, len(l))
	for i, v := range l {
		p := path + "." + key + "[" + strconv.Itoa(i) + "]"
		c, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				d.fail(p, "expected an object, got %s", typeName(v))
			}
			continue
		}
		d.container(c, p, &out[i])
	}
	return out
}

func (d *oldDecoder) container(m map[string]any, path string, c *corev1.Container) {
	c.Name = d.str(m, "name", path)
	c.Image = d.str(m, "image", path)
	for i, v := range d.list(m, "ports", path) {
		p := path + ".ports[" + strconv.Itoa(i) + "]"
		pm, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				d.fail(p, "expected an object, got %s", typeName(v))
			}
			c.Ports = append(c.Ports, corev1.ContainerPort{})
			continue
		}
		hp, _ := d.integer(pm, "hostPort", p, math.MinInt32, math.MaxInt32)
		c.Ports = append(c.Ports, corev1.ContainerPort{HostPort: int32(hp)})
	}
	c.LivenessProbe = d.probe(m, "livenessProbe", path)
	c.ReadinessProbe = d.probe(m, "readinessProbe", path)
	c.StartupProbe = d.probe(m, "startupProbe", path)
	if lc := d.object(m, "lifecycle", path); lc != nil {
		p := path + ".lifecycle"
		c.Lifecycle = &corev1.Lifecycle{
			PostStart: d.handler(lc, "postStart", p),
			PreStop:   d.handler(lc, "preStop", p),
		}
	}
	sc := d.object(m, "securityContext", path)
	if sc == nil {
		return
	}
	p := path + ".securityContext"
	c.SecurityContext = &corev1.SecurityContext{
		Privileged:               d.boolPtr(sc, "privileged", p),
		AllowPrivilegeEscalation: d.boolPtr(sc, "allowPrivilegeEscalation", p),
		RunAsNonRoot:             d.boolPtr(sc, "runAsNonRoot", p),
		RunAsUser:                d.int64Ptr(sc, "runAsUser", p),
		SeccompProfile:           d.seccomp(sc, p),
		SELinuxOptions:           d.seLinux(sc, p),
		WindowsOptions:           d.windows(sc, p),
		AppArmorProfile:          d.appArmor(sc, p),
	}
	if v, ok := sc["procMount"]; ok && v != nil {
		pm := corev1.ProcMountType(d.str(sc, "procMount", p))
		c.SecurityContext.ProcMount = &pm
	}
	if caps := d.object(sc, "capabilities", p); caps != nil {
		cp := p + ".capabilities"
		c.SecurityContext.Capabilities = &corev1.Capabilities{
			Add:  capabilities(d.strings(caps, "add", cp)),
			Drop: capabilities(d.strings(caps, "drop", cp)),
		}
	}
}

func (d *oldDecoder) probe(m map[string]any, key, path string) *corev1.Probe {
	o := d.object(m, key, path)
	if o == nil {
		return nil
	}
	p := path + "." + key
	pr := &corev1.Probe{}
	pr.HTTPGet, pr.TCPSocket = d.hosts(o, p)
	return pr
}

func (d *oldDecoder) handler(m map[string]any, key, path string) *corev1.LifecycleHandler {
	o := d.object(m, key, path)
	if o == nil {
		return nil
	}
	h := &corev1.LifecycleHandler{}
	h.HTTPGet, h.TCPSocket = d.hosts(o, path+"."+key)
	return h
}

// hosts reads the host of the httpGet and tcpSocket actions of a probe or
// lifecycle handler.
func (d *oldDecoder) hosts(m map[string]any, path string) (*corev1.HTTPGetAction, *corev1.TCPSocketAction) {
	var h *corev1.HTTPGetAction
	var t *corev1.TCPSocketAction
	if o := d.object(m, "httpGet", path); o != nil {
		h = &corev1.HTTPGetAction{Host: d.str(o, "host", path+".httpGet")}
	}
	if o := d.object(m, "tcpSocket", path); o != nil {
		t = &corev1.TCPSocketAction{Host: d.str(o, "host", path+".tcpSocket")}
	}
	return h, t
}

func capabilities(names []string) []corev1.Capability {
	if names == nil {
		return nil
	}
	out := make([]corev1.Capability, len(names))
	for i, n := range names {
		out[i] = corev1.Capability(n)
	}
	return out
}
