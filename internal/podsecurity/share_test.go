package podsecurity

import (
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

// TestStepSetKeys: Checks share their failures on a Decoded exactly when
// they run the same steps.
func TestStepSetKeys(t *testing.T) {
	other, err := NewEvaluator()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		a, b    string
		same    bool
		dupIDsA bool
	}{
		{"level: restricted\nversion: latest", "level: restricted", true, false},
		{"level: restricted\nversion: latest", "level: restricted\nversion: latest\nexclude:\n- controlName: Seccomp", true, false},
		{"level: restricted\nversion: latest", "level: baseline\nversion: latest", false, false},
		{"level: restricted\nversion: v1.24", "level: restricted\nversion: latest", false, true},
		{"level: restricted\nversion: v1.24", "level: restricted\nversion: v1.24\nexclude:\n- controlName: Host Namespaces", true, true},
		{"level: baseline\nversion: v1.0", "level: baseline\nversion: v1.1", true, false},
		{"level: baseline\nversion: v1.0", "level: baseline\nversion: v1.19", false, false},
		{"level: baseline\nversion: v1.19", "level: restricted\nversion: v1.19", false, true},
	}
	for _, tt := range tests {
		a := mustCompile(t, mustPodSecurity(t, tt.a), "a")
		b, err := other.Compile(mustPodSecurity(t, tt.b))
		if err != nil {
			t.Fatal(err)
		}
		sameSteps := len(a.steps) == len(b.steps)
		for i := 0; sameSteps && i < len(a.steps); i++ {
			sameSteps = a.steps[i].index == b.steps[i].index
		}
		if sameSteps != tt.same || (a.setKey == b.setKey) != tt.same {
			t.Errorf("%q / %q: same steps %v, same keys %v (%q, %q), want %v", tt.a, tt.b, sameSteps, a.setKey == b.setKey, a.setKey, b.setKey, tt.same)
		}
		if a.dupIDs != tt.dupIDsA {
			t.Errorf("%q: dupIDs %v", tt.a, a.dupIDs)
		}
	}
}

// TestSharedResults: rules running the same steps, whose exemptions leave
// the failures as they are, share their check results; an exemption that
// removes a field error gets results of its own and leaves the shared ones
// intact.
func TestSharedResults(t *testing.T) {
	obj := mustObject(t, docBadPod01)
	d, err := Decode(obj)
	if err != nil {
		t.Fatal(err)
	}
	plain := mustCompile(t, mustPodSecurity(t, "level: restricted"), "plain")
	noMatch := mustCompile(t, mustPodSecurity(t, "level: restricted\nexclude:\n- controlName: Capabilities\n  images: [no-such-image]"), "nomatch")
	seccomp := mustCompile(t, mustPodSecurity(t, "level: restricted\nexclude:\n- controlName: Seccomp\n  images: ['*']"), "seccomp")

	want := map[*Check]Result{}
	for _, c := range []*Check{plain, noMatch, seccomp} {
		r, err := refEvaluate(c, obj, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[c] = r
	}
	results := map[*Check]Result{}
	for _, c := range []*Check{seccomp, plain, noMatch, seccomp, plain} {
		got, err := c.EvaluateDecoded(d, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got.Message != want[c].Message || len(got.Checks) != len(want[c].Checks) {
			t.Fatalf("%s: got %q, want %q", c.ruleName, got.Message, want[c].Message)
		}
		results[c] = got
	}
	if len(results[plain].Checks) == 0 || len(results[seccomp].Checks) == 0 {
		t.Fatalf("the pod should fail: %q", results[plain].Message)
	}
	if &results[plain].Checks[0] != &results[noMatch].Checks[0] {
		t.Errorf("an exemption matching no container should share the results of the rule without it")
	}
	if &results[plain].Checks[0] == &results[seccomp].Checks[0] {
		t.Errorf("an exemption removing field errors shares the results of the rule without it")
	}
	if results[plain].Message == want[seccomp].Message {
		t.Fatalf("the seccomp exemption should change the message")
	}

	// ConvertChecks converts the shared results once, the others each time
	calls := 0
	ids := func(checks []CheckResult) []string {
		calls++
		out := make([]string, len(checks))
		for i := range checks {
			out[i] = checks[i].ID
		}
		return out
	}
	a := ConvertChecks(d, results[plain].Checks, ids)
	b := ConvertChecks(d, results[noMatch].Checks, ids)
	if calls != 1 || &a[0] != &b[0] || !reflect.DeepEqual(a, checkIDs(want[plain])) {
		t.Errorf("shared results: %d conversions, %v (want %v)", calls, a, checkIDs(want[plain]))
	}
	if n := len(ConvertChecks(d, results[plain].Checks, func(c []CheckResult) []int { return make([]int, len(c)) })); n != len(a) {
		t.Errorf("a conversion to another type: %d elements", n)
	}
	s1 := ConvertChecks(d, results[seccomp].Checks, ids)
	s2 := ConvertChecks(d, results[seccomp].Checks, ids)
	if calls != 3 || &s1[0] == &s2[0] || !reflect.DeepEqual(s1, checkIDs(want[seccomp])) {
		t.Errorf("results of their own: %d conversions, %v (want %v)", calls, s1, checkIDs(want[seccomp]))
	}
}

// twoSeccompRevisions fails both revisions of seccompProfile_baseline up
// to v1.24 (annotations, then fields).
const twoSeccompRevisions = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  annotations: {seccomp.security.alpha.kubernetes.io/pod: unconfined}
spec:
  securityContext: {seccompProfile: {type: Unconfined}}
  containers:
  - {name: a, image: nginx, ports: [{containerPort: 80, hostPort: 80}]}
`

// TestExemptChangedFlag: exempt returns its input, unchanged, when it
// removes nothing, and a copy otherwise (the input is never written).
func TestExemptChangedFlag(t *testing.T) {
	tests := []struct {
		ps, pod     string
		wantChanged bool
	}{
		{"level: restricted\nexclude:\n- controlName: Capabilities\n  images: [no-such-image]", docBadPod01, false},
		{"level: restricted\nexclude:\n- controlName: Host Ports\n  images: ['*']", docBadPod01, false},
		{"level: restricted\nexclude:\n- controlName: Seccomp\n  images: ['*']", docBadPod01, true},
		{"level: restricted\nexclude:\n- controlName: Seccomp\n  images: ['*']\n  restrictedField: spec.no.such.field\n  values: ['*']", docBadPod01, false},
		{"level: restricted\nexclude:\n- controlName: Running as Non-root", docRootPod, true},
		// pinned version: the failures are keyed by check, a change when
		// two revisions of one check fail
		{"level: restricted\nversion: v1.24\nexclude:\n- controlName: Host Ports\n  images: ['*']", docBadPod01, false},
		{"level: baseline\nversion: v1.24\nexclude:\n- controlName: Privileged Containers\n  images: ['*']", twoSeccompRevisions, true},
		{"level: baseline\nversion: latest\nexclude:\n- controlName: Privileged Containers\n  images: ['*']", twoSeccompRevisions, false},
	}
	for _, tt := range tests {
		c := mustCompile(t, mustPodSecurity(t, tt.ps), "r")
		d, err := Decode(mustObject(t, tt.pod))
		if err != nil {
			t.Fatal(err)
		}
		fails := d.stepSet(c).fails
		if len(fails) == 0 {
			t.Fatalf("%q: no failure", tt.ps)
		}
		before := make([]failure, len(fails))
		copy(before, fails)
		errsBefore := make([][]FieldError, len(fails))
		for i := range fails {
			errsBefore[i] = append([]FieldError(nil), fails[i].errs...)
		}
		got, changed := c.exempt(&c.excludes[0], fails, d)
		if changed != tt.wantChanged {
			t.Errorf("%q: changed %v, want %v", tt.ps, changed, tt.wantChanged)
		}
		if !changed && !c.dupIDs && (len(got) != len(fails) || &got[0] != &fails[0]) {
			t.Errorf("%q: unchanged failures are not the input", tt.ps)
		}
		for i := range fails {
			if fails[i].id != before[i].id || len(fails[i].errs) != len(errsBefore[i]) {
				t.Fatalf("%q: the input failures were changed", tt.ps)
			}
			for j := range fails[i].errs {
				if fails[i].errs[j].String() != errsBefore[i][j].String() {
					t.Fatalf("%q: the input field errors were changed", tt.ps)
				}
			}
		}
	}
}

// TestCoversStep: an exemption covers a step by its control index exactly
// when it covers the step's check ID, for every control and every revision
// of the catalogue.
func TestCoversStep(t *testing.T) {
	var all []step
	for _, c := range testEvaluator.checks {
		for i := range c.versions {
			all = append(all, step{id: c.id, index: c.first + i, control: controlOf(c.id)})
		}
	}
	all = append(all, step{id: "someNewCheck", control: controlOf("someNewCheck")})
	covered := 0
	for _, name := range ControlNames() {
		ex := api.PodSecurityStandard{ControlName: name}
		if controlsByName[name].scope == scopeContainer {
			ex.Images = []string{"*"}
		}
		xs, errs := compileExclusions([]api.PodSecurityStandard{ex}, nil)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		for i := range all {
			if got, want := xs[0].coversStep(&all[i]), xs[0].covers(all[i].id); got != want {
				t.Errorf("%s covers %s: %v, by ID %v", name, all[i].id, got, want)
			} else if got {
				covered++
			}
		}
	}
	if covered < len(all)-1 {
		t.Errorf("only %d of %d revisions covered by a control", covered, len(all))
	}
	if controlOf("someNewCheck") != -1 {
		t.Errorf("an unknown check has a control")
	}
}
