package podsecurity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/internal/jsonnum"
)

// ErrUnsupportedKind is wrapped by the error Evaluate returns for a resource
// that is neither a Pod nor a pod controller (upstream: "could not find
// correct resource type").
var ErrUnsupportedKind = errors.New("could not find correct resource type")

// ResourceError reports a resource that cannot be evaluated: a kind without
// a pod spec, or a field the checks read holding a value of the wrong type.
// Path is the JSON path of the offending value ("" for the resource itself).
type ResourceError struct {
	Path string
	Err  error
}

// Error renders "<path>: <cause>".
func (e *ResourceError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *ResourceError) Unwrap() error { return e.Err }

// workload says where a kind keeps its pod metadata and spec, and how
// field paths of the pod are rewritten into paths of the resource.
type workload struct {
	meta, spec []string // paths in the resource
	metaPrefix string   // replaces the leading "metadata" of a field path,
	specPrefix string   // and the leading "spec": also the paths joined
}

var (
	podWorkload = workload{
		meta: []string{"metadata"}, spec: []string{"spec"},
		metaPrefix: "metadata", specPrefix: "spec",
	}
	templateWorkload = workload{
		meta: []string{"spec", "template", "metadata"}, spec: []string{"spec", "template", "spec"},
		metaPrefix: "spec.template.metadata", specPrefix: "spec.template.spec",
	}
	cronJobWorkload = workload{
		meta:       []string{"spec", "jobTemplate", "spec", "template", "metadata"},
		spec:       []string{"spec", "jobTemplate", "spec", "template", "spec"},
		metaPrefix: "spec.jobTemplate.spec.template.metadata", specPrefix: "spec.jobTemplate.spec.template.spec",
	}
	workloads = map[string]workload{
		"Pod":                   podWorkload,
		"Deployment":            templateWorkload,
		"DaemonSet":             templateWorkload,
		"StatefulSet":           templateWorkload,
		"ReplicaSet":            templateWorkload,
		"ReplicationController": templateWorkload,
		"Job":                   templateWorkload,
		"CronJob":               cronJobWorkload,
	}
)

// isPod reports whether the paths of the resource are those of the pod.
func (w workload) isPod() bool {
	return w.specPrefix == "spec" && w.metaPrefix == "metadata"
}

// resourcePath rewrites a field path of the pod into the resource's path.
func (w workload) resourcePath(field string) string {
	if w.isPod() {
		return field // a Pod: the paths are the pod's
	}
	switch {
	case field == "spec" || strings.HasPrefix(field, "spec."):
		return w.specPrefix + field[len("spec"):]
	case field == "metadata" || strings.HasPrefix(field, "metadata."):
		return w.metaPrefix + field[len("metadata"):]
	}
	return field
}

// decodedPod is what the checks read of a pod: its metadata and spec (a
// corev1.Pod without its status, a third of its size).
type decodedPod struct {
	metav1.ObjectMeta
	Spec corev1.PodSpec
}

// decodePod extracts the pod (metadata and spec) a resource describes,
// reading only the fields the checks use. The input is not modified.
func decodePod(obj map[string]any) (*decodedPod, workload, error) {
	pod := &decodedPod{}
	w, err := decodePodInto(obj, pod)
	if err != nil {
		return nil, w, err
	}
	return pod, w, nil
}

// decodePodInto is decodePod writing into pod, which is left partly
// written on an error.
func decodePodInto(obj map[string]any, pod *decodedPod) (workload, error) {
	if obj == nil {
		return workload{}, &ResourceError{Err: errors.New("no resource")}
	}
	kind, _ := obj["kind"].(string)
	w, ok := workloads[kind]
	if !ok {
		return workload{}, &ResourceError{Path: "kind", Err: fmt.Errorf("%w: %q", ErrUnsupportedKind, kind)}
	}
	d := &decoder{}
	if meta := d.walk(obj, w.meta); meta != nil {
		d.meta(meta, &jsonPath{key: w.metaPrefix}, pod)
	}
	if spec := d.walk(obj, w.spec); spec != nil {
		d.spec(spec, &jsonPath{key: w.specPrefix}, &pod.Spec)
	}
	return w, d.err
}

// jsonPath is the path of a value in the resource, written only for an
// error: a key or an index under a parent (the root is a dotted path).
type jsonPath struct {
	parent  *jsonPath
	key     string
	index   int
	isIndex bool
}

// child is the path of p's field key.
func (p *jsonPath) child(key string) jsonPath {
	return jsonPath{parent: p, key: key}
}

// at is the path of p's element i.
func (p *jsonPath) at(i int) jsonPath {
	return jsonPath{parent: p, index: i, isIndex: true}
}

// String writes the path: "spec.containers[0].securityContext".
func (p *jsonPath) String() string {
	return string(p.appendTo(nil))
}

func (p *jsonPath) appendTo(b []byte) []byte {
	if p.parent == nil {
		return append(b, p.key...)
	}
	b = p.parent.appendTo(b)
	if p.isIndex {
		return append(strconv.AppendInt(append(b, '['), int64(p.index), 10), ']')
	}
	return append(append(b, '.'), p.key...)
}

// decoder reads JSON-like trees into the typed pod, keeping the first error.
type decoder struct {
	err error
}

// fail records an error on the value at p (the first one only).
func (d *decoder) fail(p *jsonPath, format string, args ...any) {
	if d.err == nil {
		d.err = &ResourceError{Path: p.String(), Err: fmt.Errorf(format, args...)}
	}
}

// failKey records an error on p's field key.
func (d *decoder) failKey(p *jsonPath, key string, format string, args ...any) {
	if d.err == nil {
		c := p.child(key)
		d.fail(&c, format, args...)
	}
}

// walk follows path through nested objects: nil when a step is missing or
// null, and an error when a step is not an object.
func (d *decoder) walk(obj map[string]any, path []string) map[string]any {
	cur := obj
	for i, key := range path {
		v, ok := cur[key]
		if !ok || v == nil {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			d.fail(&jsonPath{key: strings.Join(path[:i+1], ".")}, "expected an object, got %s", typeName(v))
			return nil
		}
		cur = m
	}
	return cur
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	}
	if jsonnum.Is(v) {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// object returns m[key] as an object (nil when absent or null).
func (d *decoder) object(m map[string]any, key string, p *jsonPath) map[string]any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	return d.asObject(v, key, p)
}

// asObject returns v, the value of p's field key, as an object.
func (d *decoder) asObject(v any, key string, p *jsonPath) map[string]any {
	o, ok := v.(map[string]any)
	if !ok {
		d.failKey(p, key, "expected an object, got %s", typeName(v))
		return nil
	}
	return o
}

func (d *decoder) list(m map[string]any, key string, p *jsonPath) []any {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		d.failKey(p, key, "expected an array, got %s", typeName(v))
		return nil
	}
	return l
}

func (d *decoder) str(m map[string]any, key string, p *jsonPath) string {
	v, ok := m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		d.failKey(p, key, "expected a string, got %s", typeName(v))
	}
	return s
}

func (d *decoder) boolean(m map[string]any, key string, p *jsonPath) bool {
	b := d.boolPtr(m, key, p)
	return b != nil && *b
}

func (d *decoder) boolPtr(m map[string]any, key string, p *jsonPath) *bool {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	b, ok := v.(bool)
	if !ok {
		d.failKey(p, key, "expected a boolean, got %s", typeName(v))
		return nil
	}
	return &b
}

// integer reads an integral number of any of the numeric types JSON-like
// trees carry, within [min, max].
func (d *decoder) integer(m map[string]any, key string, p *jsonPath, min, max int64) (int64, bool) {
	v, ok := m[key]
	if !ok || v == nil {
		return 0, false
	}
	i, f, kind := jsonnum.Read(v)
	switch kind {
	case jsonnum.Integer:
	case jsonnum.Real:
		switch t := v.(type) {
		case json.Number: // a fraction, an exponent, or too large
			d.failKey(p, key, "expected an integer, got %s", t)
			return 0, false
		case uint, uint64, uintptr: // above math.MaxInt64
			d.failKey(p, key, "integer %d out of range", t)
			return 0, false
		}
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			d.failKey(p, key, "expected an integer, got %v", v)
			return 0, false
		}
		i = int64(f)
	case jsonnum.Invalid:
		d.failKey(p, key, "expected an integer, got %s", v)
		return 0, false
	default:
		d.failKey(p, key, "expected an integer, got %s", typeName(v))
		return 0, false
	}
	if i < min || i > max {
		d.failKey(p, key, "integer %d out of range", i)
		return 0, false
	}
	return i, true
}

func (d *decoder) int64Ptr(m map[string]any, key string, p *jsonPath) *int64 {
	n, ok := d.integer(m, key, p, math.MinInt64, math.MaxInt64)
	if !ok {
		return nil
	}
	return &n
}

// stringList returns m[key] as a list whose elements are strings or null
// (nil when absent or null), recording an error for another element.
func (d *decoder) stringList(m map[string]any, key string, p *jsonPath) []any {
	l := d.list(m, key, p)
	if l == nil {
		return nil
	}
	for i, v := range l {
		if _, ok := v.(string); !ok && v != nil {
			lp := p.child(key)
			ip := lp.at(i)
			d.fail(&ip, "expected a string, got %s", typeName(v))
		}
	}
	return l
}

// meta reads name, namespace and annotations.
func (d *decoder) meta(m map[string]any, p *jsonPath, pod *decodedPod) {
	pod.Name = d.str(m, "name", p)
	pod.Namespace = d.str(m, "namespace", p)
	ann := d.object(m, "annotations", p)
	if ann == nil {
		return
	}
	ap := p.child("annotations")
	pod.Annotations = make(map[string]string, len(ann))
	for k, v := range ann {
		if v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			d.failKey(&ap, k, "expected a string, got %s", typeName(v))
			continue
		}
		pod.Annotations[k] = s
	}
}

func (d *decoder) spec(m map[string]any, p *jsonPath, spec *corev1.PodSpec) {
	spec.HostNetwork = d.boolean(m, "hostNetwork", p)
	spec.HostPID = d.boolean(m, "hostPID", p)
	spec.HostIPC = d.boolean(m, "hostIPC", p)
	spec.HostUsers = d.boolPtr(m, "hostUsers", p)
	if os := d.object(m, "os", p); os != nil {
		op := p.child("os")
		spec.OS = &corev1.PodOS{Name: corev1.OSName(d.str(os, "name", &op))}
	}
	if sc := d.object(m, "securityContext", p); sc != nil {
		sp := p.child("securityContext")
		spec.SecurityContext = d.podSecurityContext(sc, &sp)
	}
	if vols := d.list(m, "volumes", p); len(vols) > 0 {
		vp := p.child("volumes")
		spec.Volumes = make([]corev1.Volume, len(vols))
		for i, v := range vols {
			ip := vp.at(i)
			vm, ok := v.(map[string]any)
			if !ok {
				if v != nil {
					d.fail(&ip, "expected an object, got %s", typeName(v))
				}
				continue
			}
			d.volume(vm, &ip, &spec.Volumes[i])
		}
	}
	spec.InitContainers = d.containers(m, "initContainers", p)
	spec.Containers = d.containers(m, "containers", p)
	for _, c := range d.containers(m, "ephemeralContainers", p) {
		spec.EphemeralContainers = append(spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon(c)})
	}
}

func (d *decoder) podSecurityContext(m map[string]any, p *jsonPath) *corev1.PodSecurityContext {
	sc := &corev1.PodSecurityContext{
		RunAsNonRoot:    d.boolPtr(m, "runAsNonRoot", p),
		RunAsUser:       d.int64Ptr(m, "runAsUser", p),
		SeccompProfile:  d.seccomp(m, p),
		SELinuxOptions:  d.seLinux(m, p),
		WindowsOptions:  d.windows(m, p),
		AppArmorProfile: d.appArmor(m, p),
	}
	if list := d.list(m, "sysctls", p); len(list) > 0 {
		lp := p.child("sysctls")
		sc.Sysctls = make([]corev1.Sysctl, len(list))
		for i, v := range list {
			ip := lp.at(i)
			s, ok := v.(map[string]any)
			if !ok {
				if v != nil {
					d.fail(&ip, "expected an object, got %s", typeName(v))
				}
				continue
			}
			sc.Sysctls[i] = corev1.Sysctl{Name: d.str(s, "name", &ip), Value: d.str(s, "value", &ip)}
		}
	}
	return sc
}

func (d *decoder) seccomp(m map[string]any, p *jsonPath) *corev1.SeccompProfile {
	o := d.object(m, "seccompProfile", p)
	if o == nil {
		return nil
	}
	op := p.child("seccompProfile")
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileType(d.str(o, "type", &op))}
}

func (d *decoder) appArmor(m map[string]any, p *jsonPath) *corev1.AppArmorProfile {
	o := d.object(m, "appArmorProfile", p)
	if o == nil {
		return nil
	}
	op := p.child("appArmorProfile")
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(d.str(o, "type", &op))}
}

func (d *decoder) seLinux(m map[string]any, p *jsonPath) *corev1.SELinuxOptions {
	o := d.object(m, "seLinuxOptions", p)
	if o == nil {
		return nil
	}
	op := p.child("seLinuxOptions")
	return &corev1.SELinuxOptions{
		User:  d.str(o, "user", &op),
		Role:  d.str(o, "role", &op),
		Type:  d.str(o, "type", &op),
		Level: d.str(o, "level", &op),
	}
}

func (d *decoder) windows(m map[string]any, p *jsonPath) *corev1.WindowsSecurityContextOptions {
	o := d.object(m, "windowsOptions", p)
	if o == nil {
		return nil
	}
	op := p.child("windowsOptions")
	return &corev1.WindowsSecurityContextOptions{HostProcess: d.boolPtr(o, "hostProcess", &op)}
}

// volumeSourceKeys are the volume sources the checks tell apart, in the
// order the decoder reads them (see volumeSourceIndex and
// setVolumeSource); hostPath is read first, on its own.
var volumeSourceKeys = [...]string{
	"emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
	"glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
	"downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
	"photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi",
	"ephemeral", "image",
}

// volumeSourceIndex is the index of a key in volumeSourceKeys, or -1.
func volumeSourceIndex(key string) int {
	switch key {
	case "emptyDir":
		return 0
	case "gcePersistentDisk":
		return 1
	case "awsElasticBlockStore":
		return 2
	case "gitRepo":
		return 3
	case "secret":
		return 4
	case "nfs":
		return 5
	case "iscsi":
		return 6
	case "glusterfs":
		return 7
	case "persistentVolumeClaim":
		return 8
	case "rbd":
		return 9
	case "flexVolume":
		return 10
	case "cinder":
		return 11
	case "cephfs":
		return 12
	case "flocker":
		return 13
	case "downwardAPI":
		return 14
	case "fc":
		return 15
	case "azureFile":
		return 16
	case "configMap":
		return 17
	case "vsphereVolume":
		return 18
	case "quobyte":
		return 19
	case "azureDisk":
		return 20
	case "photonPersistentDisk":
		return 21
	case "projected":
		return 22
	case "portworxVolume":
		return 23
	case "scaleIO":
		return 24
	case "storageos":
		return 25
	case "csi":
		return 26
	case "ephemeral":
		return 27
	case "image":
		return 28
	}
	return -1
}

// setVolumeSource marks the source volumeSourceKeys[i] as used (the checks
// only test for presence).
func setVolumeSource(s *corev1.VolumeSource, i int) {
	switch i {
	case 0:
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	case 1:
		s.GCEPersistentDisk = &corev1.GCEPersistentDiskVolumeSource{}
	case 2:
		s.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{}
	case 3:
		s.GitRepo = &corev1.GitRepoVolumeSource{}
	case 4:
		s.Secret = &corev1.SecretVolumeSource{}
	case 5:
		s.NFS = &corev1.NFSVolumeSource{}
	case 6:
		s.ISCSI = &corev1.ISCSIVolumeSource{}
	case 7:
		s.Glusterfs = &corev1.GlusterfsVolumeSource{}
	case 8:
		s.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{}
	case 9:
		s.RBD = &corev1.RBDVolumeSource{}
	case 10:
		s.FlexVolume = &corev1.FlexVolumeSource{}
	case 11:
		s.Cinder = &corev1.CinderVolumeSource{}
	case 12:
		s.CephFS = &corev1.CephFSVolumeSource{}
	case 13:
		s.Flocker = &corev1.FlockerVolumeSource{}
	case 14:
		s.DownwardAPI = &corev1.DownwardAPIVolumeSource{}
	case 15:
		s.FC = &corev1.FCVolumeSource{}
	case 16:
		s.AzureFile = &corev1.AzureFileVolumeSource{}
	case 17:
		s.ConfigMap = &corev1.ConfigMapVolumeSource{}
	case 18:
		s.VsphereVolume = &corev1.VsphereVirtualDiskVolumeSource{}
	case 19:
		s.Quobyte = &corev1.QuobyteVolumeSource{}
	case 20:
		s.AzureDisk = &corev1.AzureDiskVolumeSource{}
	case 21:
		s.PhotonPersistentDisk = &corev1.PhotonPersistentDiskVolumeSource{}
	case 22:
		s.Projected = &corev1.ProjectedVolumeSource{}
	case 23:
		s.PortworxVolume = &corev1.PortworxVolumeSource{}
	case 24:
		s.ScaleIO = &corev1.ScaleIOVolumeSource{}
	case 25:
		s.StorageOS = &corev1.StorageOSVolumeSource{}
	case 26:
		s.CSI = &corev1.CSIVolumeSource{}
	case 27:
		s.Ephemeral = &corev1.EphemeralVolumeSource{}
	case 28:
		s.Image = &corev1.ImageVolumeSource{}
	}
}

// volume reads the volume's name and which source it uses (the checks only
// test for presence, and read the hostPath path). The sources are found in
// one pass over the volume's keys (a volume has a few), and read in the
// order of volumeSourceKeys, so that the first error is always the same.
func (d *decoder) volume(m map[string]any, p *jsonPath, v *corev1.Volume) {
	v.Name = d.str(m, "name", p)
	s := &v.VolumeSource
	if hp := d.object(m, "hostPath", p); hp != nil {
		hpp := p.child("hostPath")
		s.HostPath = &corev1.HostPathVolumeSource{Path: d.str(hp, "path", &hpp)}
	}
	var values [len(volumeSourceKeys)]any
	var found uint64
	for k, val := range m {
		if i := volumeSourceIndex(k); i >= 0 && val != nil {
			values[i] = val
			found |= 1 << i
		}
	}
	for found != 0 {
		i := bits.TrailingZeros64(found)
		found &= found - 1
		if o := d.asObject(values[i], volumeSourceKeys[i], p); o != nil {
			setVolumeSource(s, i)
		}
	}
}

func (d *decoder) containers(m map[string]any, key string, p *jsonPath) []corev1.Container {
	l := d.list(m, key, p)
	if l == nil {
		return nil
	}
	lp := p.child(key)
	out := make([]corev1.Container, len(l))
	for i, v := range l {
		ip := lp.at(i)
		c, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				d.fail(&ip, "expected an object, got %s", typeName(v))
			}
			continue
		}
		d.container(c, &ip, &out[i])
	}
	return out
}

func (d *decoder) container(m map[string]any, p *jsonPath, c *corev1.Container) {
	c.Name = d.str(m, "name", p)
	c.Image = d.str(m, "image", p)
	if ports := d.list(m, "ports", p); len(ports) > 0 {
		pp := p.child("ports")
		c.Ports = make([]corev1.ContainerPort, len(ports))
		for i, v := range ports {
			ip := pp.at(i)
			pm, ok := v.(map[string]any)
			if !ok {
				if v != nil {
					d.fail(&ip, "expected an object, got %s", typeName(v))
				}
				continue
			}
			hp, _ := d.integer(pm, "hostPort", &ip, math.MinInt32, math.MaxInt32)
			c.Ports[i].HostPort = int32(hp)
		}
	}
	c.LivenessProbe = d.probe(m, "livenessProbe", p)
	c.ReadinessProbe = d.probe(m, "readinessProbe", p)
	c.StartupProbe = d.probe(m, "startupProbe", p)
	if lc := d.object(m, "lifecycle", p); lc != nil {
		lp := p.child("lifecycle")
		post, pre := d.handler(lc, "postStart", &lp), d.handler(lc, "preStop", &lp)
		if post != nil || pre != nil {
			c.Lifecycle = &corev1.Lifecycle{PostStart: post, PreStop: pre}
		}
	}
	sc := d.object(m, "securityContext", p)
	if sc == nil {
		return
	}
	sp := p.child("securityContext")
	c.SecurityContext = &corev1.SecurityContext{
		Privileged:               d.boolPtr(sc, "privileged", &sp),
		AllowPrivilegeEscalation: d.boolPtr(sc, "allowPrivilegeEscalation", &sp),
		RunAsNonRoot:             d.boolPtr(sc, "runAsNonRoot", &sp),
		RunAsUser:                d.int64Ptr(sc, "runAsUser", &sp),
		SeccompProfile:           d.seccomp(sc, &sp),
		SELinuxOptions:           d.seLinux(sc, &sp),
		WindowsOptions:           d.windows(sc, &sp),
		AppArmorProfile:          d.appArmor(sc, &sp),
	}
	if v, ok := sc["procMount"]; ok && v != nil {
		pm := corev1.ProcMountType(d.str(sc, "procMount", &sp))
		c.SecurityContext.ProcMount = &pm
	}
	if caps := d.object(sc, "capabilities", &sp); caps != nil {
		cp := sp.child("capabilities")
		c.SecurityContext.Capabilities = d.capabilities(caps, &cp)
	}
}

// capabilities reads the add and drop lists of a capabilities object (null
// elements are read as "").
func (d *decoder) capabilities(m map[string]any, p *jsonPath) *corev1.Capabilities {
	return &corev1.Capabilities{
		Add:  d.capabilityList(m, "add", p),
		Drop: d.capabilityList(m, "drop", p),
	}
}

// capabilityList reads m[key] as a list of capabilities: nil when absent
// or null, empty (not nil) when empty.
func (d *decoder) capabilityList(m map[string]any, key string, p *jsonPath) []corev1.Capability {
	l := d.stringList(m, key, p)
	if l == nil {
		return nil
	}
	out := make([]corev1.Capability, len(l))
	for i, v := range l {
		s, _ := v.(string)
		out[i] = corev1.Capability(s)
	}
	return out
}

// probe reads a probe for its hosts: the checks only look for a host set
// in its httpGet or tcpSocket action, so a probe without one is decoded as
// none (its values are still checked).
func (d *decoder) probe(m map[string]any, key string, p *jsonPath) *corev1.Probe {
	o := d.object(m, key, p)
	if o == nil {
		return nil
	}
	pp := p.child(key)
	h, t := d.hosts(o, &pp)
	if h == nil && t == nil {
		return nil
	}
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: h, TCPSocket: t}}
}

// handler reads a lifecycle handler as probe reads a probe.
func (d *decoder) handler(m map[string]any, key string, p *jsonPath) *corev1.LifecycleHandler {
	o := d.object(m, key, p)
	if o == nil {
		return nil
	}
	hp := p.child(key)
	h, t := d.hosts(o, &hp)
	if h == nil && t == nil {
		return nil
	}
	return &corev1.LifecycleHandler{HTTPGet: h, TCPSocket: t}
}

// hosts reads the host of the httpGet and tcpSocket actions of a probe or
// lifecycle handler: an action without a host is decoded as none.
func (d *decoder) hosts(m map[string]any, p *jsonPath) (*corev1.HTTPGetAction, *corev1.TCPSocketAction) {
	var h *corev1.HTTPGetAction
	var t *corev1.TCPSocketAction
	if o := d.object(m, "httpGet", p); o != nil {
		op := p.child("httpGet")
		if host := d.str(o, "host", &op); host != "" {
			h = &corev1.HTTPGetAction{Host: host}
		}
	}
	if o := d.object(m, "tcpSocket", p); o != nil {
		op := p.child("tcpSocket")
		if host := d.str(o, "host", &op); host != "" {
			t = &corev1.TCPSocketAction{Host: host}
		}
	}
	return h, t
}
