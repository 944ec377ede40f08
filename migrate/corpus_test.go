package migrate

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/testshared"
	"github.com/gavelpolicy/gavel/policytest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// corpusRow is the outcome of one policy of the corpus.
type corpusRow struct {
	folder, policy string
	types          []string
	status         string
	detail         string
}

func (r corpusRow) String() string {
	s := fmt.Sprintf("%s %s [%s]: %s", r.folder, r.policy, strings.Join(r.types, ","), r.status)
	if r.detail != "" {
		s += ": " + r.detail
	}
	return s
}

// Statuses of a policy of the corpus.
const (
	statusEqual        = "equal"
	statusDiffers      = "differs"
	statusNotConverted = "not converted"
	statusUnverified   = "not verified"
)

// TestCorpus converts every ClusterPolicy of the shared corpus's
// kyverno-policies folders and verifies each conversion on the folder's
// resources: those its chainsaw test applies and those of its
// kyverno-test.yaml (with the test's values and mocks). Every policy is
// equal, or says why not; testdata/corpus.golden records the outcome of
// each (go test -run TestCorpus -update rewrites it).
func TestCorpus(t *testing.T) {
	root := filepath.Join(testshared.Dir(t, "conformance"), "kyverno-policies")
	var rows []corpusRow
	for _, dir := range policyFolders(t, root) {
		folder, _ := filepath.Rel(root, dir)
		rows = append(rows, corpusFolder(t, dir, folder)...)
	}
	var lines []string
	for _, r := range rows {
		lines = append(lines, r.String())
		if r.status != statusEqual && r.detail == "" {
			t.Errorf("%s: %s without a reason", r.policy, r.status)
		}
	}
	summary := corpusSummary(rows)
	t.Log("\n" + summary)
	golden(t, "corpus.golden", strings.Join(lines, "\n")+"\n\n"+summary)
	equal := 0
	for _, r := range rows {
		if r.status == statusEqual {
			equal++
		}
	}
	// today's figure: a regression of the converter or of the engine
	// fails the test. (222 since round 4: 8 of them on gavel's own
	// requests and 3 with the image data of gavel's registry, both in
	// testdata/resources; a side that needed a host the test has not is
	// not compared.)
	if min := 222; equal < min {
		t.Errorf("%d of %d policies convert with equal results, want at least %d", equal, len(rows), min)
	}
}

// policyFolders are the folders under root (hidden ones left out) whose
// own files hold a ClusterPolicy or Policy, sorted.
func policyFolders(t *testing.T, root string) []string {
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			return filepath.SkipDir
		}
		if policies, _ := readFolderPolicies(t, p); len(policies) > 0 {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// corpusSummary counts the statuses per rule type.
func corpusSummary(rows []corpusRow) string {
	byType := map[string]map[string]int{}
	total := map[string]int{}
	for _, r := range rows {
		for _, tp := range append([]string{"all"}, r.types...) {
			if byType[tp] == nil {
				byType[tp] = map[string]int{}
			}
			byType[tp][r.status]++
			total[tp]++
		}
	}
	var b strings.Builder
	for _, tp := range []string{"all", TypeValidate, TypeMutate, TypeGenerate, TypeVerifyImages} {
		if total[tp] == 0 {
			continue
		}
		c := byType[tp]
		fmt.Fprintf(&b, "%-12s %3d policies: %3d equal, %3d differ, %3d not converted, %3d not verified\n", tp, total[tp],
			c[statusEqual], c[statusDiffers], c[statusNotConverted], c[statusUnverified])
	}
	return b.String()
}

// corpusFolder converts and verifies the policies of one folder.
func corpusFolder(t *testing.T, dir, folder string) []corpusRow {
	t.Helper()
	policies, exceptions := readFolderPolicies(t, dir)
	var convs []*Conversion
	for _, d := range policies {
		c, err := Convert(d)
		if err != nil {
			t.Errorf("%s: %v", folder, err)
			continue
		}
		convs = append(convs, c)
	}
	all := append([]*Conversion(nil), convs...)
	for _, d := range exceptions {
		c, err := Convert(d, WithPolicies(convs...))
		if err == nil {
			all = append(all, c)
		}
	}
	ctx := context.Background()
	results := map[*Conversion]*PolicyVerification{}
	merge := func(v *Verification) {
		for i := range v.Policies {
			p := &v.Policies[i]
			for _, c := range convs {
				if p.Policy == c.Kind+" "+policyKey(c) {
					acc := results[c]
					if acc == nil {
						acc = &PolicyVerification{Policy: p.Policy}
						results[c] = acc
					}
					acc.Compared = append(acc.Compared, p.Compared...)
					acc.Evaluations += p.Evaluations
					acc.Differences = append(acc.Differences, p.Differences...)
					acc.Unverified = append(acc.Unverified, p.Unverified...)
					acc.NotCompared = append(acc.NotCompared, p.NotCompared...)
				}
			}
		}
	}
	// gavel's images, for the folders whose resources name images the
	// policy reads
	images := loadGavelImages(t, folder)
	if objs := chainsawResources(t, dir); len(objs) > 0 {
		cluster := inmem.New(clusterObjects(objs)...)
		opts := []engine.Option{engine.WithClient(cluster), engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster)}
		if images != nil {
			opts = append(opts, engine.WithRegistryClient(images.Client))
		}
		v, err := Verify(ctx, all, objs, WithEngineOptions(opts...))
		if err != nil {
			t.Errorf("%s: %v", folder, err)
		} else {
			merge(v)
		}
	}
	tests, _ := policytest.Discover(policytest.DefaultFileName, dir)
	for _, file := range tests {
		ts, err := policytest.LoadAll(file)
		if err != nil {
			continue
		}
		for _, tt := range ts {
			env, err := tt.Environment()
			if err != nil {
				continue
			}
			for _, r := range env.Resources {
				// as the API server stores them, like the chainsaw
				// test's objects
				templateMetadata(r)
			}
			v, err := Verify(ctx, all, env.Resources, WithEngineOptions(env.EngineOptions...), WithRequests(env.Request),
				WithContextValues(env.RuleValues))
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			merge(v)
		}
	}
	// gavel's own requests, for the folders that give none
	gavel := loadGavelCases(t, folder)
	if gavel != nil {
		verifyGavelCases(t, folder, gavel, all, convs, merge)
	}
	if images != nil {
		if missing := images.unserved(); len(missing) > 0 {
			t.Errorf("%s: images asked for and not in images.yaml: %s", folder, strings.Join(missing, ", "))
		}
	}
	var rows []corpusRow
	for _, c := range convs {
		row := corpusOutcome(folder, c, results[c], noResourceReason(dir, len(tests) > 0))
		switch {
		case row.status != statusEqual:
		case gavel != nil:
			row.detail = "on gavel's resources (" + filepath.Join(gavelResourcesDir, folder) + ")"
		case images != nil:
			row.detail = "with the image data of gavel's registry (" + filepath.Join(gavelResourcesDir, folder, "images.yaml") + ")"
		}
		rows = append(rows, row)
	}
	return rows
}

// corpusOutcome classifies a conversion and its verification.
func corpusOutcome(folder string, c *Conversion, v *PolicyVerification, noResource string) corpusRow {
	row := corpusRow{folder: folder, policy: c.Name}
	seen := map[string]bool{}
	for _, r := range c.Rules {
		if !seen[r.Type] {
			seen[r.Type] = true
			row.types = append(row.types, r.Type)
		}
	}
	for _, r := range c.Rules {
		if !r.Converted() {
			row.status, row.detail = statusNotConverted, r.Rule+": "+r.Problems[0].String()
			return row
		}
	}
	switch {
	case v != nil && len(v.Differences) > 0:
		row.status, row.detail = statusDiffers, v.Differences[0].String()
		if n := len(v.Differences); n > 1 {
			row.detail += fmt.Sprintf(" (and %d more)", n-1)
		}
	case v != nil && len(v.Unverified) > 0:
		row.status, row.detail = statusUnverified, dedup(v.Unverified)
	case v != nil && len(v.NotCompared) > 0:
		// a side failed for want of a host on some resources: equal on the
		// others is not proof
		row.status, row.detail = statusUnverified, fmt.Sprintf("equal on %d evaluations, %d not compared: %s", v.Evaluations, len(v.NotCompared), v.NotCompared[0])
	case v == nil || v.Evaluations == 0:
		row.status, row.detail = statusUnverified, "no resource to verify on: "+noResource
		if seen[TypeVerifyImages] {
			row.detail += "; the images' signatures and attestations are in registries, out of reach offline"
		}
	default:
		row.status = statusEqual
	}
	return row
}

// noResourceReason says why a folder gives no resource to verify on.
func noResourceReason(dir string, kyvernoTests bool) string {
	_, err := os.Stat(filepath.Join(dir, ".chainsaw-test", "chainsaw-test.yaml"))
	switch {
	case kyvernoTests:
		return "its kyverno-test.yaml gives none the policy applies to"
	case err != nil:
		return "the folder has no test (no resource file, no chainsaw test, no kyverno-test.yaml)"
	}
	return "its chainsaw test applies none (its scripts run kubectl on a cluster)"
}

func dedup(xs []string) string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return strings.Join(out, "; ")
}

// readFolderPolicies reads the policies (and cleanup policies) of a
// folder's own files, and the kyverno.io PolicyExceptions its chainsaw
// test applies.
func readFolderPolicies(t *testing.T, dir string) (policies, exceptions []api.Document) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() || !isYAML(e.Name()) {
			continue
		}
		for _, d := range readDocs(t, filepath.Join(dir, e.Name())) {
			if strings.HasPrefix(d.APIVersion(), api.GroupKyverno+"/") && (d.Kind() == api.KindClusterPolicy || d.Kind() == api.KindPolicy) {
				policies = append(policies, d)
			}
		}
	}
	for _, f := range chainsawFiles(t, dir) {
		for _, d := range readDocs(t, f) {
			if d.Kind() == api.KindPolicyException && strings.HasPrefix(d.APIVersion(), api.GroupKyverno+"/") {
				exceptions = append(exceptions, d)
			}
		}
	}
	return policies, exceptions
}

func isYAML(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")
}

func readDocs(t *testing.T, name string) []api.Document {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	docs, err := api.ReadDocuments(f, name)
	if err != nil {
		return nil
	}
	return docs
}

// chainsawFiles are the files a folder's chainsaw test applies or
// creates (not those it asserts).
func chainsawFiles(t *testing.T, dir string) []string {
	cdir := filepath.Join(dir, ".chainsaw-test")
	raw, err := os.ReadFile(filepath.Join(cdir, "chainsaw-test.yaml"))
	if err != nil {
		return nil
	}
	var test struct {
		Spec struct {
			Steps []struct {
				Try []map[string]struct {
					File string `json:"file"`
				} `json:"try"`
			} `json:"steps"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &test); err != nil {
		return nil
	}
	var out []string
	for _, s := range test.Spec.Steps {
		for _, op := range s.Try {
			for _, verb := range []string{"apply", "create"} {
				if f := op[verb].File; f != "" && isYAML(f) {
					out = append(out, filepath.Join(cdir, f))
				}
			}
		}
	}
	return out
}

// chainsawResources are the resources a folder's chainsaw test applies
// (policies and exceptions left out), each once, in "default" when they
// give no namespace.
func chainsawResources(t *testing.T, dir string) []map[string]any {
	seen := map[string]bool{}
	var out []map[string]any
	for _, f := range chainsawFiles(t, dir) {
		for _, d := range readDocs(t, f) {
			av := d.APIVersion()
			if d.Kind() == "" || strings.HasPrefix(av, api.GroupKyverno+"/") || strings.HasPrefix(av, api.GroupPolicies+"/") {
				continue
			}
			md, ok := d.Object["metadata"].(map[string]any)
			if !ok {
				continue
			}
			if ns, _ := md["namespace"].(string); ns == "" && d.Kind() != "Namespace" {
				md["namespace"] = "default"
			}
			templateMetadata(d.Object)
			k := resourceName(d.Object)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, d.Object)
		}
	}
	return out
}

// clusterObjects are the objects of the cluster a chainsaw test runs in:
// the test's, and the Namespace default every cluster has.
func clusterObjects(objs []map[string]any) []map[string]any {
	for _, o := range objs {
		if resourceName(o) == "Namespace default" {
			return objs
		}
	}
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default",
		"labels": map[string]any{"kubernetes.io/metadata.name": "default"}}}
	return append(append([]map[string]any(nil), objs...), ns)
}

// templateMetadata gives a Pod controller's templates the metadata the
// API server writes when it stores the object (its ObjectMeta is not
// optional: {creationTimestamp: null}), as the admission request that
// the chainsaw test's apply makes holds it.
func templateMetadata(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	withMetadata := func(m map[string]any) {
		if m == nil {
			return
		}
		if _, ok := m["metadata"]; !ok {
			m["metadata"] = map[string]any{"creationTimestamp": nil}
		}
	}
	switch obj["kind"] {
	case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "ReplicationController":
		tmpl, _ := spec["template"].(map[string]any)
		withMetadata(tmpl)
	case "CronJob":
		jt, _ := spec["jobTemplate"].(map[string]any)
		withMetadata(jt)
		if js, _ := jt["spec"].(map[string]any); js != nil {
			tmpl, _ := js["template"].(map[string]any)
			withMetadata(tmpl)
		}
	}
}

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (go test -run %s -update rewrites it):\n%s", path, t.Name(), firstDiff(string(want), got))
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, x, y)
		}
	}
	return ""
}

// TestHandMigrations compares, where the corpus holds both a policy and
// upstream's hand migration of it (kyverno-policies-new/<folder>-vpol,
// -mpol, -gpol), each of the hand migration and gavel's conversion with the
// source policy, on the source folder's resources (and the hand
// migration's chainsaw resources): testdata/hand.golden records the
// outcomes.
func TestHandMigrations(t *testing.T) {
	conf := testshared.Dir(t, "conformance")
	hands, err := filepath.Glob(filepath.Join(conf, "kyverno-policies-new", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(hands)
	var lines []string
	equal := map[string]int{}
	for _, hand := range hands {
		cat := filepath.Base(filepath.Dir(hand))
		base := cat[:strings.LastIndex(cat, "-")]
		src := filepath.Join(conf, "kyverno-policies", base, filepath.Base(hand))
		policies, _ := readFolderPolicies(t, src)
		if len(policies) != 1 {
			continue
		}
		ours, err := Convert(policies[0])
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		theirs := handConversion(t, ours, hand)
		if theirs == nil {
			continue
		}
		objs := append(chainsawResources(t, src), chainsawResources(t, hand)...)
		folder, _ := filepath.Rel(filepath.Join(conf, "kyverno-policies-new"), hand)
		line := folder + ":"
		for _, side := range []struct {
			name string
			c    *Conversion
		}{{"upstream's", theirs}, {"gavel's", ours}} {
			outcome := verifyHand(t, side.c, objs, src)
			if outcome == statusEqual {
				equal[side.name]++
			}
			line += " " + side.name + " " + outcome + ";"
		}
		lines = append(lines, strings.TrimSuffix(line, ";"))
	}
	summary := fmt.Sprintf("%d hand migrations: upstream's equal to the source on %d, gavel's on %d\n",
		len(lines), equal["upstream's"], equal["gavel's"])
	t.Log(summary)
	golden(t, "hand.golden", strings.Join(lines, "\n")+"\n\n"+summary)
}

// handConversion is upstream's hand migration of a policy as a
// conversion whose outputs hold every rule of the source.
func handConversion(t *testing.T, ours *Conversion, dir string) *Conversion {
	hand := &Conversion{Kind: ours.Kind, Name: ours.Name, Namespace: ours.Namespace, Source: ours.Source}
	p := ours.Source.(api.ClassicPolicy)
	var rules []string
	for _, r := range p.GetSpec().Rules {
		rules = append(rules, r.Name)
		hand.Rules = append(hand.Rules, RuleOutcome{Rule: r.Name, Type: ruleType(&r)})
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() || !isYAML(e.Name()) {
			continue
		}
		for _, d := range readDocs(t, filepath.Join(dir, e.Name())) {
			if !strings.HasPrefix(d.APIVersion(), api.GroupPolicies+"/") {
				continue
			}
			obj, err := api.DecodePolicy(d)
			if err != nil {
				t.Logf("%s: %v", dir, err)
				continue
			}
			typ := map[string]string{api.KindValidatingPolicy: TypeValidate, api.KindMutatingPolicy: TypeMutate,
				api.KindGeneratingPolicy: TypeGenerate, api.KindImageValidatingPolicy: TypeVerifyImages}[api.KindOf(obj)]
			mo, ok := obj.(metav1.Object)
			if !ok {
				continue
			}
			hand.Outputs = append(hand.Outputs, &Output{Object: mo, Type: typ, Rules: rules})
		}
	}
	if len(hand.Outputs) == 0 {
		return nil
	}
	for i := range hand.Rules {
		hand.Rules[i].Policy = hand.Outputs[0].Object.GetName()
	}
	return hand
}

// verifyHand verifies a conversion on the resources and the source
// folder's tests, as TestCorpus does.
func verifyHand(t *testing.T, c *Conversion, objs []map[string]any, src string) string {
	ctx := context.Background()
	var diffs []Difference
	var unverified []string
	evaluations := 0
	collect := func(v *Verification) {
		for _, p := range v.Policies {
			diffs = append(diffs, p.Differences...)
			unverified = append(unverified, p.Unverified...)
			evaluations += p.Evaluations
		}
	}
	if len(objs) > 0 {
		cluster := inmem.New(clusterObjects(objs)...)
		if v, err := Verify(ctx, []*Conversion{c}, objs, WithEngineOptions(engine.WithClient(cluster),
			engine.WithConfigMapResolver(cluster), engine.WithAPIClient(cluster))); err == nil {
			collect(v)
		}
	}
	tests, _ := policytest.Discover(policytest.DefaultFileName, src)
	for _, file := range tests {
		ts, err := policytest.LoadAll(file)
		if err != nil {
			continue
		}
		for _, tt := range ts {
			env, err := tt.Environment()
			if err != nil {
				continue
			}
			for _, r := range env.Resources {
				templateMetadata(r)
			}
			if v, err := Verify(ctx, []*Conversion{c}, env.Resources, WithEngineOptions(env.EngineOptions...),
				WithRequests(env.Request), WithContextValues(env.RuleValues)); err == nil {
				collect(v)
			}
		}
	}
	for _, r := range c.Rules {
		if !r.Converted() {
			return statusNotConverted
		}
	}
	switch {
	case len(diffs) > 0:
		return fmt.Sprintf("%s (%d: %s)", statusDiffers, len(diffs), diffs[0])
	case len(unverified) > 0:
		return statusUnverified + " (" + dedup(unverified) + ")"
	case evaluations == 0:
		return statusUnverified + " (no resource)"
	}
	return statusEqual
}
