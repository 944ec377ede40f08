package mutate

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"
)

// The lazy conversion of resources (only where a patch reaches them) must
// give exactly what converting the whole resource gives. These tests apply
// every strategic merge patch of the golden corpus, eagerly and lazily, to
// the corpus resources and to random Pods full of what the merge walk
// rewrites (duplicate and missing merge keys, null and empty elements,
// ports without protocol, nested objects with apiVersion and kind).

func goldenMergePatches(t *testing.T) (patches []*StrategicMerge, resources []map[string]any) {
	t.Helper()
	for _, sec := range goldenSections {
		if sec.jsonPatch {
			continue
		}
		dirs, err := filepath.Glob(filepath.Join("testdata", sec.dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range dirs {
			raw, err := os.ReadFile(filepath.Join(dir, "patch.yaml"))
			if err != nil {
				continue
			}
			var patch any
			if err := yaml.Unmarshal(raw, &patch); err != nil {
				t.Fatal(err)
			}
			sm, err := CompileStrategicMerge(patch)
			if err != nil {
				continue
			}
			patches = append(patches, sm)
			resources = append(resources, readYAMLMap(t, filepath.Join(dir, "resource.yaml")))
		}
	}
	if len(patches) == 0 {
		t.Fatal("no strategic merge patches in testdata")
	}
	return patches, resources
}

func sameOutcome(t *testing.T, what string, sm *StrategicMerge, resource map[string]any) {
	t.Helper()
	want, werr := sm.mutate(resource, false, false)
	for _, mode := range []string{"copy", "share", "canonical"} {
		share := mode != "copy"
		if mode == "canonical" && !CanonicalTree(resource) {
			continue
		}
		got, gerr := sm.mutate(resource, share, true)
		if mode == "canonical" {
			got, gerr = sm.MutateCanonical(resource, nil)
		}
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("%s (share %v): error %v, eager %v", what, share, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if !reflect.DeepEqual(want.Object, got.Object) || want.Skipped != got.Skipped || want.Message != got.Message ||
			!reflect.DeepEqual(want.Condition, got.Condition) {
			t.Fatalf("%s (share %v):\nlazy  %v %v\neager %v %v", what, share, got.Skipped, got.Object, want.Skipped, want.Object)
		}
	}
}

func TestLazyMergeGolden(t *testing.T) {
	patches, resources := goldenMergePatches(t)
	for i, sm := range patches {
		for j, r := range resources {
			sameOutcome(t, fmt.Sprintf("patch %d on resource %d", i, j), sm, r)
		}
	}
}

func TestLazyMergeRandom(t *testing.T) {
	patches, _ := goldenMergePatches(t)
	rnd := rand.New(rand.NewSource(7))
	n := 150
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		pod := randomPod(rnd)
		for j, sm := range patches {
			sameOutcome(t, fmt.Sprintf("patch %d on random pod %d", j, i), sm, pod)
		}
	}
}

// randomPod builds a Pod-like resource (canonical: float64 numbers).
func randomPod(r *rand.Rand) map[string]any {
	pick := func(xs ...any) any { return xs[r.Intn(len(xs))] }
	name := func() any { return pick("a", "b", "c", "", nil, 1.0) }
	var containers []any
	for i := r.Intn(4); i >= 0; i-- {
		c := map[string]any{"image": pick("nginx", "busybox:1", "x/y@sha256:0")}
		if n := name(); n != nil || r.Intn(2) == 0 {
			c["name"] = n
		}
		if r.Intn(2) == 0 {
			var ports []any
			for j := r.Intn(3); j >= 0; j-- {
				p := map[string]any{"containerPort": pick(80.0, 443.0, 80.0)}
				if r.Intn(2) == 0 {
					p["protocol"] = pick("TCP", "UDP")
				}
				ports = append(ports, p)
			}
			c["ports"] = ports
		}
		if r.Intn(3) == 0 {
			c["securityContext"] = map[string]any{"privileged": pick(true, false, nil)}
		}
		if r.Intn(4) == 0 {
			c["env"] = []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": pick("A", "B")}}
		}
		containers = append(containers, pick(c, c, c, c, map[string]any{}, nil))
	}
	spec := map[string]any{"containers": containers}
	if r.Intn(2) == 0 {
		var vols []any
		for i := r.Intn(3); i >= 0; i-- {
			v := map[string]any{"name": name()}
			if r.Intn(2) == 0 {
				v["emptyDir"] = map[string]any{}
			} else {
				v["hostPath"] = map[string]any{"path": pick("/tmp", "/var/run")}
			}
			vols = append(vols, v)
		}
		spec["volumes"] = vols
	}
	if r.Intn(3) == 0 {
		spec["tolerations"] = []any{map[string]any{"key": "k", "operator": "Exists"}}
	}
	if r.Intn(4) == 0 {
		spec["hostNetwork"] = pick(true, nil)
	}
	md := map[string]any{"name": "p", "namespace": pick("default", "team")}
	if r.Intn(2) == 0 {
		md["labels"] = map[string]any{"app": pick("web", "db")}
	}
	if r.Intn(2) == 0 {
		md["annotations"] = map[string]any{"x": "y"}
	}
	if r.Intn(3) == 0 {
		md["finalizers"] = []any{pick("a", "b"), pick("a", "c", ""), pick(true, "true")}
	}
	if r.Intn(4) == 0 {
		md["ownerReferences"] = []any{map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "o", "uid": pick("u1", "u2")}}
	}
	obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
	if r.Intn(5) == 0 {
		obj["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready"}, map[string]any{"type": "Ready"}}}
	}
	return obj
}

// TestMemo: patches applied in turn with one Memo give what they give
// without it, also when the Memo goes from one resource to another (a
// stable one, then one whose lists merging would change).
func TestMemo(t *testing.T) {
	patches, resources := goldenMergePatches(t)
	rnd := rand.New(rand.NewSource(11))
	for i := 0; i < 40; i++ {
		resources = append(resources, randomPod(rnd))
	}
	var shared Memo // deliberately reused across resources
	for j, r := range resources {
		if !CanonicalTree(r) {
			continue
		}
		var own Memo
		for i, sm := range patches {
			want, werr := sm.MutateCanonical(r, nil)
			for _, memo := range []*Memo{&own, &shared} {
				got, gerr := sm.MutateCanonical(r, memo)
				if fmt.Sprint(werr) != fmt.Sprint(gerr) {
					t.Fatalf("patch %d on resource %d: error %v, want %v", i, j, gerr, werr)
				}
				if werr == nil && (!reflect.DeepEqual(want.Object, got.Object) || want.Skipped != got.Skipped || want.Message != got.Message) {
					t.Fatalf("patch %d on resource %d: %v %v, want %v %v", i, j, got.Skipped, got.Object, want.Skipped, want.Object)
				}
			}
		}
	}
}

// TestCanonicalMemo: the single walk of CanonicalMemo agrees with
// CanonicalTree and with the walk a Memo makes (stableRaw), on the golden
// resources, random Pods (stable or not: duplicate merge keys, null
// elements), the same with non-canonical values planted in them, and a
// Memo it returns serves merges as one built by merging.
func TestCanonicalMemo(t *testing.T) {
	patches, resources := goldenMergePatches(t)
	rnd := rand.New(rand.NewSource(13))
	n := 120
	if testing.Short() {
		n = 30
	}
	for i := 0; i < n; i++ {
		resources = append(resources, randomPod(rnd))
	}
	for i := 0; i < 40; i++ {
		pod := randomPod(rnd)
		// a value no JSON decoder produces, somewhere in the pod
		switch i % 4 {
		case 0:
			pod["spec"].(map[string]any)["replicas"] = 3
		case 1:
			pod["metadata"].(map[string]any)["labels"] = map[string]string{"a": "b"}
		case 2:
			pod["spec"].(map[string]any)["containers"] = append(pod["spec"].(map[string]any)["containers"].([]any), []string{"x"})
		case 3:
			pod["metadata"].(map[string]any)["annotations"] = map[string]any(nil)
		}
		resources = append(resources, pod)
	}
	stableSeen, unstableSeen := 0, 0
	for j, r := range resources {
		canonical, memo := CanonicalMemo(r)
		if canonical != CanonicalTree(r) {
			t.Fatalf("resource %d: canonical %v, CanonicalTree %v", j, canonical, CanonicalTree(r))
		}
		if !canonical {
			if memo.of != nil || memo.stable != 0 {
				t.Fatalf("resource %d: a Memo for a tree that is not canonical", j)
			}
			continue
		}
		if want := stableRaw(r, nil); (memo.stable > 0) != want || memo.stable == 0 || !sameMap(memo.of, r) {
			t.Fatalf("resource %d: memo %+v, stableRaw %v", j, memo.stable, want)
		}
		if memo.stable > 0 {
			stableSeen++
		} else {
			unstableSeen++
		}
		for i, sm := range patches {
			want, werr := sm.MutateCanonical(r, nil)
			m := memo
			got, gerr := sm.MutateCanonical(r, &m)
			if fmt.Sprint(werr) != fmt.Sprint(gerr) || (werr == nil && (!reflect.DeepEqual(want.Object, got.Object) || want.Skipped != got.Skipped)) {
				t.Fatalf("patch %d on resource %d: %v %v, want %v %v", i, j, got.Object, gerr, want.Object, werr)
			}
		}
	}
	if stableSeen == 0 || unstableSeen == 0 {
		t.Fatalf("stable %d, unstable %d: both kinds must be tested", stableSeen, unstableSeen)
	}
}
