package podsecurity

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// jsonDecodePod decodes the pod the way upstream does, with encoding/json.
func jsonDecodePod(t *testing.T, obj map[string]any) *corev1.Pod {
	t.Helper()
	w := workloads[obj["kind"].(string)]
	pod := &corev1.Pod{}
	for i, path := range [][]string{w.meta, w.spec} {
		v, found, _ := nested(obj, path)
		if !found {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var target any = &pod.ObjectMeta
		if i == 1 {
			target = &pod.Spec
		}
		if err := json.Unmarshal(raw, target); err != nil {
			t.Fatal(err)
		}
	}
	return pod
}

// TestDecoderMatchesJSON: every revision of every check gives the same
// verdict and field errors on the pod read by the tree decoder as on the
// pod encoding/json decodes.
func TestDecoderMatchesJSON(t *testing.T) {
	files, _ := filepath.Glob("testdata/conformance/*/*/*.yaml")
	var objs []map[string]any
	for _, f := range files {
		for _, obj := range mustReadObjects(t, f) {
			if _, ok := workloads[obj["kind"].(string)]; ok {
				objs = append(objs, obj)
			}
		}
	}
	for _, c := range fieldErrorCases {
		objs = append(objs, mustObject(t, c.pod))
	}
	objs = append(objs, mustObject(t, typicalPod), mustObject(t, sub(docIstioPod, "%CAPS%", "          - NET_ADMIN")))
	for _, obj := range objs {
		fast, _, err := decodePod(obj)
		if err != nil {
			t.Fatal(err)
		}
		slow := jsonDecodePod(t, obj)
		for _, c := range testEvaluator.checks {
			for _, v := range c.versions {
				a := v.CheckPod(&fast.ObjectMeta, &fast.Spec)
				b := v.CheckPod(&slow.ObjectMeta, &slow.Spec)
				if a != b {
					t.Errorf("%s %s %v: %+v vs json %+v", fast.Name, c.id, v.MinimumVersion.String(), a, b)
				}
				if ea, eb := c.errs(&fast.ObjectMeta, &fast.Spec, v.MinimumVersion), c.errs(&slow.ObjectMeta, &slow.Spec, v.MinimumVersion); !reflect.DeepEqual(ea, eb) {
					t.Errorf("%s %s: field errors %v vs json %v", fast.Name, c.id, ea, eb)
				}
			}
		}
		if fast.Name != slow.Name || fast.Namespace != slow.Namespace || !reflect.DeepEqual(fast.Annotations, slow.Annotations) {
			t.Errorf("metadata %v vs %v", fast.ObjectMeta, slow.ObjectMeta)
		}
		for i := range slow.Spec.Containers {
			if fast.Spec.Containers[i].Image != slow.Spec.Containers[i].Image {
				t.Errorf("image %q vs %q", fast.Spec.Containers[i].Image, slow.Spec.Containers[i].Image)
			}
		}
	}
}

func TestResourcePath(t *testing.T) {
	for in, want := range map[string]string{
		"spec.hostIPC":                       "spec.template.spec.hostIPC",
		"spec":                               "spec.template.spec",
		"metadata.annotations[a.spec.io/x]":  "spec.template.metadata.annotations[a.spec.io/x]",
		"specimen":                           "specimen",
		"spec.containers[0].securityContext": "spec.template.spec.containers[0].securityContext",
	} {
		if got := templateWorkload.resourcePath(in); got != want {
			t.Errorf("resourcePath(%q) = %q, want %q", in, got, want)
		}
	}
	if got := podWorkload.resourcePath("spec.hostIPC"); got != "spec.hostIPC" {
		t.Errorf("pod path %q", got)
	}
	if got := cronJobWorkload.resourcePath("metadata.annotations[x]"); !strings.HasPrefix(got, "spec.jobTemplate.spec.template.metadata") {
		t.Errorf("cronjob path %q", got)
	}
}

func TestDecodeIntegers(t *testing.T) {
	ok := []any{float64(7), float32(7), int(7), int8(7), int16(7), int32(7), int64(7), uint(7), uint8(7), uint16(7), uint32(7), uint64(7), json.Number("7")}
	for _, v := range ok {
		d := &decoder{}
		if n, set := d.integer(map[string]any{"k": v}, "k", &jsonPath{key: "p"}, 0, 100); !set || n != 7 || d.err != nil {
			t.Errorf("%T: %d %v %v", v, n, set, d.err)
		}
	}
	bad := map[string]any{
		"fraction":   1.5,
		"float32":    float32(0.5),
		"huge float": 1e300,
		"uint":       uint(1) << 63,
		"uint64":     uint64(1) << 63,
		"number":     json.Number("x"),
		"string":     "7",
		"range":      int64(101),
	}
	for name, v := range bad {
		d := &decoder{}
		if _, set := d.integer(map[string]any{"k": v}, "k", &jsonPath{key: "p"}, 0, 100); set || d.err == nil || !strings.HasPrefix(d.err.Error(), "p.k: ") {
			t.Errorf("%s: set=%v err=%v", name, set, d.err)
		}
	}
	d := &decoder{}
	if _, set := d.integer(map[string]any{"k": nil}, "k", &jsonPath{key: "p"}, 0, 1); set || d.err != nil {
		t.Errorf("null: %v %v", set, d.err)
	}
}

// decodeOutcome is what decodePod gives, for comparisons.
type decodeOutcome struct {
	pod *decodedPod
	w   workload
	err string
}

func decodeBoth(obj map[string]any) (got, want decodeOutcome) {
	pod, w, err := decodePod(obj)
	got = decodeOutcome{pod: pod, w: w}
	if err != nil {
		got.err = err.Error() + " @" + err.(*ResourceError).Path
	}
	old, w, err := oldDecodePod(obj)
	want = decodeOutcome{w: w}
	if old != nil {
		want.pod = &decodedPod{ObjectMeta: old.ObjectMeta, Spec: old.Spec}
		withoutHostlessProbes(&want.pod.Spec)
	}
	if err != nil {
		want.err = err.Error() + " @" + err.(*ResourceError).Path
	}
	return got, want
}

// withoutHostlessProbes drops the probes, lifecycle handlers and actions
// of the former decoder's pod that set no host: the decoder leaves them
// out, as the checks only look for hosts.
func withoutHostlessProbes(spec *corev1.PodSpec) {
	action := func(h **corev1.HTTPGetAction, t **corev1.TCPSocketAction) bool {
		if *h != nil && (*h).Host == "" {
			*h = nil
		}
		if *t != nil && (*t).Host == "" {
			*t = nil
		}
		return *h != nil || *t != nil
	}
	probe := func(p **corev1.Probe) {
		if *p != nil && !action(&(*p).HTTPGet, &(*p).TCPSocket) {
			*p = nil
		}
	}
	handler := func(h **corev1.LifecycleHandler) {
		if *h != nil && !action(&(*h).HTTPGet, &(*h).TCPSocket) {
			*h = nil
		}
	}
	fix := func(c *corev1.Container) {
		probe(&c.LivenessProbe)
		probe(&c.ReadinessProbe)
		probe(&c.StartupProbe)
		if c.Lifecycle != nil {
			handler(&c.Lifecycle.PostStart)
			handler(&c.Lifecycle.PreStop)
			if c.Lifecycle.PostStart == nil && c.Lifecycle.PreStop == nil {
				c.Lifecycle = nil
			}
		}
	}
	for i := range spec.InitContainers {
		fix(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		fix(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		fix((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
}

// TestDecoderMatchesFormerDecoder compares decodePod with the former
// decoder (paths written for every value, volume sources looked up one by
// one) on the bench Pods and the corpus, and on variants of them where one
// value at a time is replaced by values of other types: same pods, same
// first error at the same path.
func TestDecoderMatchesFormerDecoder(t *testing.T) {
	objs := referenceObjects(t)
	for _, c := range fieldErrorCases {
		objs = append(objs, mustObject(t, c.pod))
	}
	objs = append(objs, mustObject(t, typicalPod), mustObject(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template:
    metadata: {annotations: {a: b, c: null}}
    spec:
      volumes:
      - {name: all, hostPath: {path: /x}, emptyDir: {}, gcePersistentDisk: {}, awsElasticBlockStore: {}, gitRepo: {}, secret: {}, nfs: {}, iscsi: {}, glusterfs: {}, persistentVolumeClaim: {}, rbd: {}, flexVolume: {}, cinder: {}, cephfs: {}, flocker: {}, downwardAPI: {}, fc: {}, azureFile: {}, configMap: {}, vsphereVolume: {}, quobyte: {}, azureDisk: {}, photonPersistentDisk: {}, projected: {}, portworxVolume: {}, scaleIO: {}, storageos: {}, csi: {}, ephemeral: {}, image: {}, other: {}}
      - {name: bad, nfs: x, csi: 1, secret: null, image: [], emptyDir: {}}
      - null
      securityContext: {sysctls: [{name: a, value: b}, null], seccompProfile: {type: Localhost}}
      containers:
      - name: c
        ports: [{hostPort: 80}, null, {containerPort: 1}]
        lifecycle: {postStart: {httpGet: {host: h}}, preStop: {tcpSocket: {host: t}}}
        securityContext: {procMount: Unmasked, capabilities: {add: [A, null], drop: []}}
      ephemeralContainers: [{name: e, image: busybox}]
`))
	bad := []any{"x", 1.5, true, int64(1) << 40, []any{"x", 1}, map[string]any{"name": 1, "x": "y"}, map[string]any(nil), json.Number("2")}
	compared := 0
	for n, obj := range objs {
		got, want := decodeBoth(obj)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("object %d: %+v, former decoder %+v", n, got, want)
		}
		compared++
		if n%7 != 0 && n < len(objs)-len(fieldErrorCases)-2 {
			continue
		}
		// one value replaced at a time (the tree is restored after each)
		fatalf := t.Fatalf
		var visit func(v any)
		visit = func(v any) {
			switch t := v.(type) {
			case map[string]any:
				for k, child := range t {
					for _, b := range bad {
						t[k] = b
						got, want := decodeBoth(obj)
						if !reflect.DeepEqual(got, want) {
							t[k] = child
							fatalf("object %d, %q set to %#v: %+v, former decoder %+v", n, k, b, got, want)
						}
						compared++
					}
					t[k] = child
					visit(child)
				}
			case []any:
				for i, child := range t {
					for _, b := range bad {
						t[i] = b
						got, want := decodeBoth(obj)
						if !reflect.DeepEqual(got, want) {
							t[i] = child
							fatalf("object %d, element %d set to %#v: %+v, former decoder %+v", n, i, b, got, want)
						}
						compared++
					}
					t[i] = child
					visit(child)
				}
			}
		}
		visit(obj)
	}
	t.Logf("%d decodings compared", compared)
}

// TestVolumeSources: volumeSourceIndex and setVolumeSource agree with
// volumeSourceKeys and with the JSON names of the VolumeSource fields.
func TestVolumeSources(t *testing.T) {
	fields := map[string]int{}
	typ := reflect.TypeOf(corev1.VolumeSource{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		fields[name] = i
	}
	for i, key := range volumeSourceKeys {
		if got := volumeSourceIndex(key); got != i {
			t.Errorf("volumeSourceIndex(%q) = %d, want %d", key, got, i)
		}
		var s corev1.VolumeSource
		setVolumeSource(&s, i)
		v := reflect.ValueOf(s)
		for j := 0; j < v.NumField(); j++ {
			if set := !v.Field(j).IsNil(); set != (j == fields[key]) {
				t.Errorf("setVolumeSource(%q) sets %s: %v", key, typ.Field(j).Name, set)
			}
		}
	}
	for _, key := range []string{"", "hostPath", "name", "EmptyDir", "emptydir", "images"} {
		if got := volumeSourceIndex(key); got != -1 {
			t.Errorf("volumeSourceIndex(%q) = %d", key, got)
		}
	}
	for kind, w := range workloads {
		if strings.Join(w.meta, ".") != w.metaPrefix || strings.Join(w.spec, ".") != w.specPrefix {
			t.Errorf("%s: paths %v %v, prefixes %q %q", kind, w.meta, w.spec, w.metaPrefix, w.specPrefix)
		}
	}
}
