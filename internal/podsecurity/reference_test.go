package podsecurity

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/internal/testshared"
)

// This file holds a straightforward evaluation of a compiled Check, without
// any of the caches and shortcuts of EvaluateDecoded (outcomes shared per
// pod, shared failures and texts, exemptions that leave failures as they
// are): every check runs on a fresh pod, every exemption evaluates its own
// reduced pod, every field path is scanned into a new string and every text
// is concatenated. EvaluateDecoded must give the same Result, to the byte.

// refEvaluate is Check.Evaluate done the straightforward way.
func refEvaluate(c *Check, obj map[string]any, extra []api.PodSecurityStandard) (Result, error) {
	pod, w, err := decodePod(obj)
	if err != nil {
		return Result{}, err
	}
	var extraX []exclusion
	if len(extra) > 0 {
		x, errs := compileExclusions(extra, field.NewPath("podSecurity"))
		if len(errs) > 0 {
			return Result{}, &CompileError{Errs: errs}
		}
		extraX = x
	}
	fails := runSteps(c.steps, nil, pod)
	if len(fails) > 0 {
		for i := range c.excludes {
			fails = refExempt(c, &c.excludes[i], fails, pod)
		}
	}
	res := Result{Level: c.level, Version: c.version}
	if len(fails) == 0 {
		res.Allowed = true
		res.Message = "Validation rule '" + c.ruleName + "' passed."
		return res, nil
	}
	if len(extraX) > 0 {
		for i := range extraX {
			fails = refExempt(c, &extraX[i], fails, pod)
		}
		if len(fails) == 0 {
			res.Allowed, res.Exempted = true, true
			return res, nil
		}
	}
	msg := "Validation rule '" + c.ruleName + "' failed. It violates PodSecurity \"" + c.level + ":" + c.version + "\": "
	for _, f := range fails {
		errs := make([]FieldError, len(f.errs))
		texts := make([]string, len(f.errs))
		for i, e := range f.errs {
			e.Field = w.resourcePath(e.Field)
			errs[i] = e
			texts[i] = stringRef(e)
		}
		res.Checks = append(res.Checks, CheckResult{
			ID:              f.id,
			ControlName:     ControlName(f.id),
			ForbiddenReason: f.res.reason,
			ForbiddenDetail: f.res.detail,
			FieldErrors:     errs,
			Images:          detailImagesRef(f.res.detail, pod),
		})
		msg += "(Forbidden reason: " + f.res.reason + ", field error list: [" + strings.Join(texts, ", ") + "])"
	}
	res.Message = msg
	return res, nil
}

// refExempt is the upstream exemption algorithm with no shortcut.
func refExempt(c *Check, x *exclusion, fails []failure, pod *decodedPod) []failure {
	var kept []failure
	index := map[string]int{}
	for _, f := range fails {
		f.errs = append([]FieldError(nil), f.errs...)
		f.check = nil
		if i, ok := index[f.id]; ok {
			kept[i] = f
			continue
		}
		index[f.id] = len(kept)
		kept = append(kept, f)
	}
	var probe *decodedPod
	if len(x.images) > 0 {
		probe = &decodedPod{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}
		for _, ct := range pod.Spec.Containers {
			if wildcard.MatchAny(x.images, ct.Image) {
				probe.Spec.Containers = append(probe.Spec.Containers, ct)
			}
		}
		for _, ct := range pod.Spec.InitContainers {
			if wildcard.MatchAny(x.images, ct.Image) {
				probe.Spec.InitContainers = append(probe.Spec.InitContainers, ct)
			}
		}
		for _, ct := range pod.Spec.EphemeralContainers {
			if wildcard.MatchAny(x.images, ct.Image) {
				probe.Spec.EphemeralContainers = append(probe.Spec.EphemeralContainers, ct)
			}
		}
	} else {
		p := *pod
		p.Spec.Containers = []corev1.Container{{Name: "fake"}}
		p.Spec.InitContainers = nil
		p.Spec.EphemeralContainers = nil
		probe = &p
	}
	containerLevel := len(x.images) > 0
	removed := map[int]bool{}
	for _, pf := range runSteps(c.steps, x, probe) {
		for _, perr := range pf.errs {
			exField, exName, _ := refLocate(perr.Field, containerLevel, probe)
			if x.restrictedField != "" && exField != x.restrictedField {
				continue
			}
			if !valuesAllowed(x.values, perr.BadValue) {
				continue
			}
			i, ok := index[pf.id]
			if !ok || removed[i] {
				continue
			}
			d := &kept[i]
			for j, derr := range d.errs {
				dField, dName, dContainer := refLocate(derr.Field, containerLevel, pod)
				if exField != dField || (dContainer && exName != dName) {
					continue
				}
				d.errs[j] = d.errs[len(d.errs)-1]
				d.errs = d.errs[:len(d.errs)-1]
				break
			}
			if len(d.errs) == 0 {
				removed[i] = true
			}
		}
	}
	var out []failure
	for i, f := range kept {
		if !removed[i] {
			out = append(out, f)
		}
	}
	return out
}

// refLocate is locateField written with plain string operations.
func refLocate(f string, containerLevel bool, pod *decodedPod) (pattern, name string, isContainer bool) {
	var b strings.Builder
	var words []string
	index, hasIndex := 0, false
	for i := 0; i < len(f); {
		switch ch := f[i]; {
		case ch >= '0' && ch <= '9':
			j := i
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				j++
			}
			if !hasIndex {
				hasIndex = true
				for _, d := range f[i:j] {
					if index < 1<<30 {
						index = index*10 + int(d-'0')
					}
				}
			}
			b.WriteByte('*')
			i = j
		case isLetter(ch):
			j := i
			for j < len(f) && isLetter(f[j]) {
				j++
			}
			words = append(words, f[i:j])
			b.WriteString(f[i:j])
			i = j
		default:
			b.WriteByte(ch)
			i++
		}
	}
	pattern = b.String()
	if !containerLevel || len(words) < 2 {
		return pattern, "", false
	}
	var names []string
	switch words[1] {
	case "containers":
		for _, c := range pod.Spec.Containers {
			names = append(names, c.Name)
		}
	case "initContainers":
		for _, c := range pod.Spec.InitContainers {
			names = append(names, c.Name)
		}
	case "ephemeralContainers":
		for _, c := range pod.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
	default:
		return pattern, "", false
	}
	if hasIndex && index < len(names) {
		name = names[index]
	}
	return pattern, name, true
}

// referenceRules are podSecurity blocks covering the bench rules, pinned
// versions (a check reported twice), every exemption form and values.
var referenceRules = []string{
	"level: baseline\nversion: latest",
	"level: restricted\nversion: latest",
	"level: restricted\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [ghcr.io/kyverno/test-nginx*, redis*]",
	"level: restricted\nversion: latest\nexclude:\n- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']",
	"level: restricted\nversion: v1.24",
	"level: baseline\nversion: v1.0",
	"level: restricted\nversion: v1.19\nexclude:\n- controlName: Seccomp\n  images: ['*']\n- controlName: Capabilities\n  images: ['*']",
	"level: restricted\nexclude:\n- controlName: Running as Non-root\n- controlName: Running as Non-root\n  images: [nginx*, '*/acme/*']",
	"level: restricted\nexclude:\n- controlName: Capabilities\n  images: ['*']\n  restrictedField: spec.containers[*].securityContext.capabilities.add\n  values: [NET_RAW, SYS_ADMIN]",
	"level: baseline\nexclude:\n- controlName: Host Ports\n  images: ['*']\n  restrictedField: spec.containers[*].ports[*].hostPort\n  values: ['5000', '80*']\n- controlName: Host Namespaces\n- controlName: HostPath Volumes\n  restrictedField: spec.volumes[*].hostPath\n  values: ['/var/*']",
	"level: restricted\nexclude:\n- controlName: Seccomp\n  images: [busybox*]\n  restrictedField: spec.initContainers[*].securityContext.seccompProfile.type\n  values: [Unconfined]\n- controlName: Privilege Escalation\n  images: ['*']\n- controlName: Volume Types\n- controlName: AppArmor\n- controlName: SELinux\n  images: ['ghcr.io/*']",
	"level: privileged",
}

// referenceExtra are PolicyException exemptions tried on every rule.
var referenceExtra = []string{
	"",
	"- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']\n- controlName: Running as Non-root\n  images: ['*']",
	"- controlName: Capabilities\n  images: ['*']\n- controlName: Privilege Escalation\n  images: ['*']\n- controlName: Running as Non-root\n- controlName: Running as Non-root\n  images: ['*']\n- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']",
}

// referenceObjects gathers the pods of testdata and, with the shared
// corpus (GAVEL_SHARED), the 1,000 bench Pods and the pods of the
// conformance corpus.
func referenceObjects(t *testing.T) []map[string]any {
	t.Helper()
	var objs []map[string]any
	roots := []string{"testdata/conformance"}
	if bench, ok := testshared.Optional(t, "bench"); ok {
		objs = append(objs, mustReadObjects(t, filepath.Join(bench, "pods-1000.yaml"))...)
	}
	if conf, ok := testshared.Optional(t, "conformance"); ok {
		roots = append([]string{conf}, roots...)
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, obj := range lenientObjects(data) {
				if _, ok := workloads[fmtKind(obj)]; ok {
					objs = append(objs, obj)
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return objs
}

func fmtKind(obj map[string]any) string {
	k, _ := obj["kind"].(string)
	return k
}

// lenientObjects is mustObjects skipping documents that are not objects.
func lenientObjects(data []byte) []map[string]any {
	var out []map[string]any
	for _, doc := range splitYAML(data) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err == nil && obj != nil {
			out = append(out, obj)
		}
	}
	return out
}

// TestEvaluateDecodedMatchesReference evaluates every reference rule, with
// and without PolicyException exemptions, on one Decoded per object (as the
// engine shares it between the rules of a request) and compares each Result
// with the straightforward evaluation.
func TestEvaluateDecodedMatchesReference(t *testing.T) {
	objs := referenceObjects(t)
	if len(objs) < 100 {
		t.Fatalf("only %d objects", len(objs))
	}
	var checks []*Check
	for i, doc := range referenceRules {
		checks = append(checks, mustCompile(t, mustPodSecurity(t, doc), "rule-"+string(rune('a'+i))))
	}
	var extras [][]api.PodSecurityStandard
	for _, doc := range referenceExtra {
		extras = append(extras, excludesOrNil(t, doc))
	}
	evaluated, failed, exempted := 0, 0, 0
	for n, obj := range objs {
		d, derr := Decode(obj)
		// the order of the rules changes with the object, so that caches
		// are filled by different rules first
		for k := range checks {
			c := checks[(k+n)%len(checks)]
			for _, extra := range extras {
				want, werr := refEvaluate(c, obj, extra)
				if derr != nil {
					if werr == nil || werr.Error() != derr.Error() {
						t.Fatalf("object %d: decode error %v, reference %v", n, derr, werr)
					}
					continue
				}
				got, err := c.EvaluateDecoded(d, extra)
				if (err == nil) != (werr == nil) {
					t.Fatalf("object %d rule %q: error %v, reference %v", n, c.ruleName, err, werr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("object %d rule %q extra %v:\n got %#v\nwant %#v", n, c.ruleName, extra, got, want)
				}
				for _, ch := range got.Checks {
					for _, e := range ch.FieldErrors {
						// the texts are sized exactly
						if e.textLen() != len(e.String()) {
							t.Fatalf("%+v: textLen %d, text %q", e, e.textLen(), e.String())
						}
					}
				}
				evaluated++
				if !got.Allowed {
					failed++
				}
				if got.Exempted {
					exempted++
				}
			}
		}
	}
	t.Logf("%d objects, %d evaluations, %d failing, %d exempted", len(objs), evaluated, failed, exempted)
	if failed == 0 || exempted == 0 || failed == evaluated {
		t.Fatalf("the corpus does not exercise both outcomes")
	}
}

// TestEvaluateDecodedConcurrentMatchesReference shares each Decoded between
// goroutines evaluating the rules in different orders (run with -race).
func TestEvaluateDecodedConcurrentMatchesReference(t *testing.T) {
	objs := referenceObjects(t)
	if len(objs) > 300 {
		objs = objs[:300]
	}
	var checks []*Check
	for i, doc := range referenceRules {
		checks = append(checks, mustCompile(t, mustPodSecurity(t, doc), "rule-"+string(rune('a'+i))))
	}
	extra := excludesOrNil(t, referenceExtra[1])
	for n, obj := range objs {
		d, err := Decode(obj)
		if err != nil {
			continue
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range checks {
					c := checks[(k*(g+1)+g)%len(checks)]
					var ex []api.PodSecurityStandard
					if (k+g)%2 == 0 {
						ex = extra
					}
					got, err := c.EvaluateDecoded(d, ex)
					want, werr := refEvaluate(c, obj, ex)
					if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("object %d rule %q: %v %v\n got %#v\nwant %#v", n, c.ruleName, err, werr, got, want)
						return
					}
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
