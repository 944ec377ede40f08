package podsecurity

import (
	"fmt"
	"strings"
	"sync"

	"github.com/gavelpolicy/gavel/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckResult is a failed Pod Security Standards check.
type CheckResult struct {
	// ID is the library's check ID, for example "capabilities_restricted".
	ID string
	// ControlName is the control the check belongs to, for example
	// "Capabilities" ("" for a check this package does not know).
	ControlName string
	// ForbiddenReason and ForbiddenDetail are the library's explanation.
	ForbiddenReason string
	ForbiddenDetail string
	// FieldErrors are the offending fields, with paths in the evaluated
	// resource (for a Deployment: spec.template.spec...).
	FieldErrors []FieldError
	// Images are the images of the containers named in ForbiddenDetail (the
	// container name when the container is not found), as upstream lists
	// them in policy reports.
	Images []string
}

// Result is the outcome of a podSecurity rule on one resource.
type Result struct {
	// Allowed is true when no check fails (after all exemptions).
	Allowed bool
	// Exempted is true when the rule's checks fail but the exemptions of
	// PolicyExceptions (extraExcludes) clear every failure; upstream reports
	// the rule as skipped due to the exception. Allowed is true too.
	Exempted bool
	// Level and Version are the rule's level and version as written.
	Level, Version string
	// Checks are the failed checks, in the library's order. Empty when
	// Allowed. Results of one Decoded may share them: read only.
	Checks []CheckResult
	// Message is upstream's rule message: "Validation rule '<rule>' passed."
	// or "Validation rule '<rule>' failed. It violates PodSecurity
	// \"<level>:<version>\": <checks>"; empty when Exempted (upstream then
	// names the exception, which only the caller knows).
	Message string
}

// Evaluate checks a Pod, or the pod template of a pod controller, given as
// a JSON-like tree (which is only read). extraExcludes are the podSecurity
// exemptions of the PolicyExceptions that match the resource; they apply on
// top of the rule's own exemptions, only when the rule fails.
func (c *Check) Evaluate(resource map[string]any, extraExcludes []api.PodSecurityStandard) (Result, error) {
	d, err := Decode(resource)
	if err != nil {
		return Result{}, err
	}
	return c.EvaluateDecoded(d, extraExcludes)
}

// Decoded is a resource decoded once for every Check that evaluates it
// (see Decode); it is read-only and safe to share.
type Decoded struct {
	pod decodedPod
	w   workload

	// results caches the outcome of each check revision on this pod, by
	// step index (nil: not run yet; passed: the check passed), so that
	// several rules evaluating the same pod run each check once.
	mu      sync.Mutex
	results []*failure
	// sets are the failures of the step sets the rules ran on this pod
	// (every Check of a level and version runs the same steps), with the
	// results made from them
	sets []*stepSet
	// probes are the reduced pods exemptions evaluate, with the outcomes
	// of the checks on them
	probes []*probe
}

// passed is the outcome of a step that passed in Decoded.results (never
// written: only its address is compared).
var passed = &failure{}

// probe is the reduced pod an exemption evaluates, with the outcomes of
// the steps exemptions covered on it (an exemption covers a step or two).
type probe struct {
	key  string // exclusion.probeKey
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
	outs []probeOutcome // appended to, never changed
	buf  [2]probeOutcome
}

// probeWithSpec is a probe and its pod spec, in one allocation.
type probeWithSpec struct {
	probe
	own corev1.PodSpec
}

// probeOutcome is the outcome of step index on a probe: its failure, or
// nil when the check passed.
type probeOutcome struct {
	index int
	f     *failure
}

// newProbe makes the probe of exemption x on pod.
func newProbe(x *exclusion, pod *decodedPod) *probe {
	if len(x.images) > 0 && !anyContainerMatches(pod, x.images) {
		pr := &probe{key: x.probeKey, meta: imagesMeta, spec: noContainersSpec}
		pr.outs = pr.buf[:0]
		return pr
	}
	pp := &probeWithSpec{probe: probe{key: x.probeKey}}
	if len(x.images) > 0 {
		pp.meta = imagesMeta
		matchingContainersSpecInto(&pp.own, &pod.Spec, x.images)
	} else {
		pp.meta = &pod.ObjectMeta
		podLevelSpecInto(&pp.own, &pod.Spec)
	}
	pp.spec = &pp.own
	pp.outs = pp.buf[:0]
	return &pp.probe
}

// stepSet holds the failures of a set of steps on a pod, shared by the
// rules that run those steps (read only), and, made once, the check results
// and message texts of rules whose exemptions leave them as they are.
type stepSet struct {
	key   string // Check.setKey
	fails []failure
	// checks are the results of fails (nil until made, unless the set
	// found the failures), tail their texts in rule messages,
	// concatenated (see FormatChecks): the end of the first message made,
	// made tells that it is; converted is what ConvertChecks made of
	// checks. Under Decoded.mu.
	checks    []CheckResult
	made      bool
	tail      string
	converted any
}

// probeOutcomes returns the spec of the pod exemption x evaluates and the
// outcomes of the steps it covers on it (computed once per pod); steps are
// those of x's Check (see coverSteps). The outcomes are shared: read only.
func (d *Decoded) probeOutcomes(x *exclusion, steps []step) (*corev1.PodSpec, []probeOutcome) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var pr *probe
	for _, p := range d.probes {
		if p.key == x.probeKey {
			pr = p
			break
		}
	}
	if pr == nil {
		pr = newProbe(x, &d.pod)
		d.probes = append(d.probes, pr)
	}
	for _, i := range x.steps {
		if s := &steps[i]; !pr.has(s.index) {
			var out *failure
			if f, failed := evalStep(s, pr.meta, pr.spec); failed {
				out = new(failure)
				*out = f
			}
			pr.outs = append(pr.outs, probeOutcome{index: s.index, f: out})
		}
	}
	// the slice read under the lock: later appends write past its end, or
	// into a new array
	return pr.spec, pr.outs
}

// has reports whether the outcome of step index is known.
func (pr *probe) has(index int) bool {
	for _, o := range pr.outs {
		if o.index == index {
			return true
		}
	}
	return false
}

// probeFailure returns the failure of step index in outs (nil when it
// passed or was not run).
func probeFailure(outs []probeOutcome, index int) *failure {
	for _, o := range outs {
		if o.index == index {
			return o.f
		}
	}
	return nil
}

// stepSet returns the failures of c's steps on the decoded pod, running the
// steps not run yet on it, and computed once per pod for every Check that
// runs the same steps.
func (d *Decoded) stepSet(c *Check) *stepSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, set := range d.sets {
		if set.key == c.setKey {
			return set
		}
	}
	fresh, checks := d.runSteps(c)
	n := 0
	for i := range c.steps {
		if d.results[c.steps[i].index] != passed {
			n++
		}
	}
	set := d.newStepSet()
	set.key = c.setKey
	switch {
	case n == len(fresh):
		// every failure is new (the first rule on the pod, nearly
		// always): the set is the blocks runSteps made, in step order
		set.fails, set.checks = fresh, checks
	case n > 0:
		set.fails = make([]failure, 0, n)
		for i := range c.steps {
			if f := d.results[c.steps[i].index]; f != passed {
				set.fails = append(set.fails, *f)
			}
		}
	}
	d.sets = append(d.sets, set)
	return set
}

// newStepSet returns a zero stepSet.
func (d *Decoded) newStepSet() *stepSet { return new(stepSet) }

// runSteps runs the steps of c not run yet on the pod, and caches their
// outcomes: it returns the new failures, in step order, and their check
// results, each kind in one allocation. d.mu is held.
func (d *Decoded) runSteps(c *Check) ([]failure, []CheckResult) {
	if len(d.results) < c.slots {
		d.results = append(d.results, make([]*failure, c.slots-len(d.results))...)
	}
	type fresh struct {
		index int
		f     failure
		// group names the containers of the detail (see detailImages)
		group    string
		hasGroup bool
	}
	// The failures are gathered on the stack: growing a slice instead
	// costs BenchmarkValidate 909 B/op (+3.3%), 4 allocs/op and 0.4% more
	// instructions (.ci/icount).
	var buf [8]fresh
	fails := buf[:0]
	for i := range c.steps {
		s := &c.steps[i]
		if d.results[s.index] != nil {
			continue
		}
		if f, failed := evalStep(s, &d.pod.ObjectMeta, &d.pod.Spec); failed {
			fails = append(fails, fresh{index: s.index, f: f})
			continue
		}
		d.results[s.index] = passed
	}
	if len(fails) == 0 {
		return nil, nil
	}
	// the images of the results (see detailImages), counted
	nImages := 0
	for i := range fails {
		fr := &fails[i]
		if fr.group, fr.hasGroup = containerNames(fr.f.res.detail); fr.hasGroup {
			nImages += strings.Count(fr.group, ",") + 1
		}
	}
	var images []string
	if nImages > 0 {
		images = make([]string, 0, nImages)
	}
	failBlock := make([]failure, len(fails))
	checks := make([]CheckResult, len(fails))
	for i := range fails {
		// shared: exemptions copy errs before removing any
		f, ch := &failBlock[i], &checks[i]
		*f = fails[i].f
		f.check = ch
		*ch = checkResult(*f, &d.pod, d.w)
		if fails[i].hasGroup {
			start := len(images)
			images = appendImages(images, fails[i].group, &d.pod)
			ch.Images = images[start:len(images):len(images)]
		}
		d.results[fails[i].index] = f
	}
	return failBlock, checks
}

// setMessage returns the check results of the set's failures, made once
// (shared: read only), and the message of a rule reporting them with
// prefix. The first message is written whole, and the texts of the checks
// in it are the tail of the next ones.
func (d *Decoded) setMessage(s *stepSet, prefix string) ([]CheckResult, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.made {
		return s.checks, prefix + s.tail
	}
	if s.checks == nil {
		s.checks = make([]CheckResult, len(s.fails))
		for i := range s.fails {
			s.checks[i] = s.fails[i].checkResult(&d.pod, d.w)
		}
	}
	n := len(prefix)
	for i := range s.checks {
		n += checkTextLen(&s.checks[i])
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(prefix)
	for i := range s.checks {
		writeCheck(&b, &s.checks[i])
	}
	msg := b.String()
	s.tail, s.made = msg[len(prefix):], true
	return s.checks, msg
}

// ConvertChecks returns convert(checks), where checks are the Checks of a
// Result of d. Results that share their Checks (see EvaluateDecoded) share
// the converted slice too, made once: it must be read only, as the checks.
// convert must not use d.
func ConvertChecks[T any](d *Decoded, checks []CheckResult, convert func([]CheckResult) []T) []T {
	if d == nil || len(checks) == 0 {
		return convert(checks)
	}
	d.mu.Lock()
	set := d.setOfChecks(checks)
	if set != nil {
		if v, ok := set.converted.([]T); ok {
			d.mu.Unlock()
			return v
		}
	}
	d.mu.Unlock()
	v := convert(checks)
	if set != nil {
		d.mu.Lock()
		if set.converted == nil {
			set.converted = v
		}
		d.mu.Unlock()
	}
	return v
}

// setOfChecks returns the set whose shared check results checks are, or
// nil. d.mu is held.
func (d *Decoded) setOfChecks(checks []CheckResult) *stepSet {
	for _, s := range d.sets {
		if s.made && len(s.checks) == len(checks) && &s.checks[0] == &checks[0] {
			return s
		}
	}
	return nil
}

// Decode extracts the pod spec of a Pod or pod controller once, so that
// several checks can evaluate it with EvaluateDecoded.
func Decode(resource map[string]any) (*Decoded, error) {
	d := &Decoded{}
	w, err := decodePodInto(resource, &d.pod)
	if err != nil {
		return nil, err
	}
	d.w = w
	return d, nil
}

// EvaluateDecoded is Evaluate on a resource decoded with Decode.
//
// Results of the same Decoded may share their Checks (and the slices in
// them) when they report the same failures: they are read only.
func (c *Check) EvaluateDecoded(d *Decoded, extraExcludes []api.PodSecurityStandard) (Result, error) {
	if c == nil {
		return Result{}, fmt.Errorf("podsecurity: nil Check")
	}
	if d == nil {
		return Result{}, fmt.Errorf("podsecurity: nil Decoded")
	}
	var extra []exclusion
	if len(extraExcludes) > 0 {
		var errs field.ErrorList
		extra, errs = compileExclusions(extraExcludes, field.NewPath("podSecurity"))
		if len(errs) > 0 {
			return Result{}, &CompileError{Errs: errs}
		}
		coverSteps(extra, c.steps)
	}
	pod, w := &d.pod, d.w
	set := d.stepSet(c)
	fails, changed := set.fails, false
	if len(fails) > 0 && len(c.excludes) > 0 {
		fails, changed = c.applyExclusions(c.excludes, fails, d)
	}
	res := Result{Level: c.level, Version: c.version}
	if len(fails) == 0 {
		res.Allowed = true
		res.Message = c.passMessage
		return res, nil
	}
	if len(extra) > 0 {
		var more bool
		fails, more = c.applyExclusions(extra, fails, d)
		changed = changed || more
		if len(fails) == 0 {
			res.Allowed = true
			res.Exempted = true
			return res, nil
		}
	}
	if !changed {
		// the failures of every rule running these steps with no effective
		// exemption: their results and texts are made once
		res.Checks, res.Message = d.setMessage(set, c.failPrefix)
		return res, nil
	}
	res.Checks = make([]CheckResult, len(fails))
	n := len(c.failPrefix)
	for i := range fails {
		res.Checks[i] = fails[i].checkResult(pod, w)
		n += checkTextLen(&res.Checks[i])
	}
	// the texts are written into the message (a rule's message is the
	// only place they show)
	var msg strings.Builder
	msg.Grow(n)
	msg.WriteString(c.failPrefix)
	for i := range res.Checks {
		writeCheck(&msg, &res.Checks[i])
	}
	res.Message = msg.String()
	return res, nil
}

// checkResult returns the check result of a failure: the cached one for a
// failure cached on a Decoded.
func (f *failure) checkResult(pod *decodedPod, w workload) CheckResult {
	if f.check != nil {
		return *f.check
	}
	cr := checkResult(*f, pod, w)
	cr.Images = detailImages(f.res.detail, pod)
	return cr
}

// checkResult makes the check result of a failure, without its images;
// for a resource other than a Pod, the field paths are written into a
// (nil: each in its own allocation).
func checkResult(f failure, pod *decodedPod, w workload) CheckResult {
	var errs []FieldError
	switch {
	case f.errs == nil:
		errs = []FieldError{}
	case w.isPod():
		// the paths are the pod's: the field errors are shared, read
		// only (the cached ones are never changed: exemptions copy them)
		errs = f.errs[:len(f.errs):len(f.errs)]
	default:
		errs = make([]FieldError, len(f.errs))
		for i, e := range f.errs {
			e.Field = w.resourcePath(e.Field)
			errs[i] = e
		}
	}
	return CheckResult{
		ID:              f.id,
		ControlName:     ControlName(f.id),
		ForbiddenReason: f.res.reason,
		ForbiddenDetail: f.res.detail,
		FieldErrors:     errs,
	}
}

// FormatChecks renders failed checks as upstream does in rule messages:
// "(Forbidden reason: <reason>, field error list: [<error>, ...])" for each
// check, concatenated.
func FormatChecks(checks []CheckResult) string {
	n := 0
	for i := range checks {
		n += checkTextLen(&checks[i])
	}
	var b strings.Builder
	b.Grow(n)
	for i := range checks {
		writeCheck(&b, &checks[i])
	}
	return b.String()
}

const checkHead, checkMiddle, checkEnd = "(Forbidden reason: ", ", field error list: [", "])"

// checkTextLen is the length of the text writeCheck writes (see
// FieldError.textLen).
func checkTextLen(ch *CheckResult) int {
	n := len(checkHead) + len(ch.ForbiddenReason) + len(checkMiddle) + len(checkEnd)
	for i := range ch.FieldErrors {
		if i > 0 {
			n += len(", ")
		}
		n += ch.FieldErrors[i].textLen()
	}
	return n
}

// writeCheck writes the text of a check in rule messages.
func writeCheck(b *strings.Builder, ch *CheckResult) {
	b.WriteString(checkHead)
	b.WriteString(ch.ForbiddenReason)
	b.WriteString(checkMiddle)
	for i := range ch.FieldErrors {
		if i > 0 {
			b.WriteString(", ")
		}
		ch.FieldErrors[i].writeTo(b)
	}
	b.WriteString(checkEnd)
}

// detailImages lists the images of the containers a forbidden detail such
// as `containers "a", "b" must set ...` names: upstream reads the names
// with the expression container(?:s)?\s*(.*?)\s*must (see containerNames).
func detailImages(detail string, pod *decodedPod) []string {
	group, ok := containerNames(detail)
	if !ok {
		return nil
	}
	return appendImages(make([]string, 0, strings.Count(group, ",")+1), group, pod)
}

// appendImages appends the images of the containers a group of
// containerNames names: the names are the group without quotes and
// spaces, split at commas.
func appendImages(images []string, group string, pod *decodedPod) []string {
	for {
		part, rest, more := strings.Cut(group, ",")
		images = append(images, imageOf(withoutQuotesAndSpaces(part), pod))
		if !more {
			return images
		}
		group = rest
	}
}

// withoutQuotesAndSpaces removes every '"' and ' ' of s (a substring of s
// when they only surround the rest).
func withoutQuotesAndSpaces(s string) string {
	i, j := 0, len(s)
	for i < j && (s[i] == '"' || s[i] == ' ') {
		i++
	}
	for j > i && (s[j-1] == '"' || s[j-1] == ' ') {
		j--
	}
	s = s[i:j]
	for k := 0; k < len(s); k++ {
		if s[k] == '"' || s[k] == ' ' {
			return strings.NewReplacer(`"`, "", " ", "").Replace(s)
		}
	}
	return s
}

// imageOf returns the image of the named container, looking at containers,
// then init containers, then ephemeral containers, or the name itself.
func imageOf(name string, pod *decodedPod) string {
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; c.Name == name {
			return c.Image
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == name {
			return c.Image
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return c.Image
		}
	}
	return name
}

// containerNames returns the group container(?:s)?\s*(.*?)\s*must captures in s,
// with the leftmost-first semantics of Go's regexp: the first "container"
// from which a match exists, the optional "s" and the spaces taken when
// possible, then the shortest text (no line break) followed by optional
// spaces and "must".
func containerNames(s string) (string, bool) {
	const word = "container"
	for from := 0; ; {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return "", false
		}
		i += from
		j := i + len(word)
		starts := [2]int{j, j}
		n := 1
		if j < len(s) && s[j] == 's' {
			starts[0], n = j+1, 2
		}
		for _, st := range starts[:n] {
			k := st
			for k < len(s) && isRESpace(s[k]) {
				k++
			}
			if end, ok := lazyUntilMust(s, k); ok {
				return s[k:end], true
			}
		}
		from = i + 1
	}
}

// lazyUntilMust returns the smallest end >= start such that s[start:end]
// holds no line break and s[end:] starts with optional spaces and "must":
// the start of the spaces before the first "must" from start, when no line
// break comes before it.
func lazyUntilMust(s string, start int) (int, bool) {
	i := strings.Index(s[start:], "must")
	if i < 0 {
		return 0, false
	}
	end := start + i
	for end > start && isRESpace(s[end-1]) {
		end--
	}
	if strings.IndexByte(s[start:end], '\n') >= 0 {
		return 0, false
	}
	return end, true
}

// isRESpace is the \s class of Go's regexp.
func isRESpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}
