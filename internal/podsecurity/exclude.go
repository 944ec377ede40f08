package podsecurity

import (
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/wildcard"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// exclusion is a compiled podSecurity exemption.
type exclusion struct {
	ids             []string
	images          []wildcard.Pattern // none: pod-level exemption
	restrictedField string
	values          []wildcard.Pattern
	// probeKey names the pod the exemption evaluates (see Decoded.probe):
	// "" for the pod-level one, else the image patterns
	probeKey string
	// control is the index of the control in controlTable
	control int
	// steps are the positions in the Check's steps of those the exemption
	// covers (see coverSteps)
	steps []int
}

// coverSteps sets, for each exemption, the positions of the steps it
// covers: a step or two of a Check's dozens.
func coverSteps(excls []exclusion, steps []step) {
	for i := range excls {
		x := &excls[i]
		x.steps = nil
		for j := range steps {
			if x.coversStep(&steps[j]) {
				x.steps = append(x.steps, j)
			}
		}
	}
}

// coversStep is covers(s.id) by the control indexes: a check belongs to
// one control at most.
func (x *exclusion) coversStep(s *step) bool {
	return s.control >= 0 && s.control == x.control
}

func (x *exclusion) covers(id string) bool {
	for _, v := range x.ids {
		if v == id {
			return true
		}
	}
	return false
}

// compileExclusions validates exemptions as upstream (control name known,
// images required for container-level controls and forbidden for pod-level
// ones, restrictedField and values given together) and compiles them.
func compileExclusions(in []api.PodSecurityStandard, path *field.Path) ([]exclusion, field.ErrorList) {
	if len(in) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	out := make([]exclusion, 0, len(in))
	for i, ex := range in {
		p := path.Index(i)
		ctl, ok := controlsByName[ex.ControlName]
		switch {
		case ex.ControlName == "":
			errs = append(errs, field.Required(p.Child("controlName"), ""))
		case !ok:
			errs = append(errs, field.NotSupported(p.Child("controlName"), ex.ControlName, ControlNames()))
		case ctl.scope == scopeContainer && len(ex.Images) == 0:
			errs = append(errs, field.Invalid(p.Child("controlName"), ex.ControlName, "exclude.images must be specified for the container level control"))
		case ctl.scope == scopePod && len(ex.Images) != 0:
			errs = append(errs, field.Invalid(p.Child("controlName"), ex.ControlName, "exclude.images must not be specified for the pod level control"))
		}
		if ex.RestrictedField != "" && len(ex.Values) == 0 {
			errs = append(errs, field.Forbidden(p.Child("values"), "values is required"))
		}
		if ex.RestrictedField == "" && len(ex.Values) != 0 {
			errs = append(errs, field.Forbidden(p.Child("restrictedField"), "restrictedField is required"))
		}
		x := exclusion{
			ids:             ctl.ids,
			control:         -1,
			images:          wildcard.CompileAll(ex.Images),
			restrictedField: ex.RestrictedField,
			values:          wildcard.CompileAll(ex.Values),
		}
		if i, ok := controlIndex[ex.ControlName]; ok {
			x.control = i
		}
		if len(x.images) > 0 {
			x.probeKey = "images\x00" + strings.Join(ex.Images, "\x00")
		}
		out = append(out, x)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// failure is a failed check revision with its field errors, paths relative
// to the pod.
type failure struct {
	id   string
	res  checkOutcome
	errs []FieldError
	// check is set on the failures a Decoded caches, to their check
	// result: errs is then shared by every rule evaluating the pod and must
	// be copied before a change.
	check *CheckResult
}

// checkOutcome is the library's verdict text for a failed check.
type checkOutcome struct {
	reason, detail string
}

// run evaluates the compiled steps on a pod.
func (c *Check) run(pod *decodedPod) []failure {
	return runSteps(c.steps, nil, pod)
}

// runSteps evaluates steps on a pod; with an exclusion, only the steps of
// the checks it covers (the others cannot change its outcome).
func runSteps(steps []step, only *exclusion, pod *decodedPod) []failure {
	var out []failure
	for _, s := range steps {
		if only != nil && !only.covers(s.id) {
			continue
		}
		if f := runStep(s, pod); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// runStep evaluates one step on a pod: its failure, or nil.
func runStep(s step, pod *decodedPod) *failure {
	if f, failed := evalStep(&s, &pod.ObjectMeta, &pod.Spec); failed {
		return &f
	}
	return nil
}

// evalStep evaluates one step on a pod: its failure, if it failed, with
// its field paths written into a.
func evalStep(s *step, meta *metav1.ObjectMeta, spec *corev1.PodSpec) (failure, bool) {
	r := s.run(meta, spec)
	if r.Allowed {
		return failure{}, false
	}
	return failure{
		id:   s.id,
		res:  checkOutcome{reason: r.ForbiddenReason, detail: r.ForbiddenDetail},
		errs: s.errs(meta, spec, s.min),
	}, true
}

// applyExclusions applies exemptions one after the other, as upstream. It
// reports whether they changed the failures; when they did not, fails
// itself is returned. fails is never modified.
func (c *Check) applyExclusions(excls []exclusion, fails []failure, d *Decoded) ([]failure, bool) {
	changed := false
	for i := range excls {
		var ch bool
		fails, ch = c.exempt(&excls[i], fails, d)
		changed = changed || ch
	}
	return fails, changed
}

// exempt applies one exemption. Upstream keys the failures by check ID
// (a check failing in several revisions keeps its last result), evaluates
// the reduced pod, and lets each field error of an excluded check there
// remove one matching field error of the full pod on the same field (and,
// for container fields of an image exemption, the same container); a
// failure left without field errors is removed.
//
// fails is only read: when the exemption changes nothing, it is returned
// as it is with changed false (the rules sharing a pod's failures then
// share their results); otherwise the change is made on a copy.
func (c *Check) exempt(x *exclusion, fails []failure, d *Decoded) (kept []failure, changed bool) {
	kept = fails
	if c.dupIDs {
		kept = lastPerCheck(fails)
		changed = len(kept) != len(fails)
	}
	if !x.coversAny(kept) {
		// no failure the exemption could remove: its pod need not be
		// evaluated
		return kept, changed
	}
	r := remover{kept: kept, copied: c.dupIDs, containerLevel: len(x.images) > 0, spec: &d.pod.Spec}
	var outcomes []probeOutcome
	r.probe, outcomes = d.probeOutcomes(x, c.steps)
	for _, si := range x.steps {
		pf := probeFailure(outcomes, c.steps[si].index)
		if pf == nil {
			continue
		}
		for _, perr := range pf.errs {
			if x.exempts(perr) {
				r.remove(pf.id, perr)
			}
		}
	}
	if !r.changed {
		return kept, changed
	}
	return r.result(), true
}

// lastPerCheck returns the failures with one per check ID, the last one
// of a check failing in several revisions, in a new slice.
func lastPerCheck(fails []failure) []failure {
	kept := make([]failure, 0, len(fails))
	for _, f := range fails {
		if i := indexOf(kept, f.id); i >= 0 {
			kept[i] = f
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

// indexOf finds the failure of a check (a few dozen at most).
func indexOf(fails []failure, id string) int {
	for i := range fails {
		if fails[i].id == id {
			return i
		}
	}
	return -1
}

// coversAny reports whether the exemption covers the check of a failure.
func (x *exclusion) coversAny(fails []failure) bool {
	for i := range fails {
		if x.covers(fails[i].id) {
			return true
		}
	}
	return false
}

// exempts reports whether a field error of the reduced pod is within the
// exemption's restricted field and values.
func (x *exclusion) exempts(perr FieldError) bool {
	return (x.restrictedField == "" || patternIs(perr.Field, x.restrictedField)) && valuesAllowed(x.values, perr.BadValue)
}

// remover removes the field errors an exemption's reduced pod excuses from
// the failures of the full pod.
type remover struct {
	kept []failure
	// copied: kept is the remover's own copy (made at the first change); a
	// failure's errs are shared with the Decoded's cache while its check is
	// set, and copied before they change
	copied, changed bool
	containerLevel  bool
	probe, spec     *corev1.PodSpec // the reduced pod's and the full pod's
}

// remove removes from the failure of check id the first field error that
// perr, a field error of the reduced pod, excuses; and the failure when it
// is left without field errors.
func (r *remover) remove(id string, perr FieldError) {
	i := indexOf(r.kept, id) // removed failures have no id
	if i < 0 {
		return
	}
	if j := r.excused(r.kept[i].errs, perr); j >= 0 {
		f := r.own(i)
		if f.check != nil {
			f.errs = append([]FieldError(nil), f.errs...)
			f.check = nil
		}
		// Upstream removes by swapping in the last element.
		last := len(f.errs) - 1
		f.errs[j] = f.errs[last]
		f.errs = f.errs[:last]
	}
	if len(r.kept[i].errs) == 0 {
		r.own(i).id = ""
	}
}

// excused returns the index of the first of errs on the same field as perr
// (for a container field of an image exemption, of the same container), or
// -1.
func (r *remover) excused(errs []FieldError, perr FieldError) int {
	exRef := locateField(perr.Field, r.containerLevel, r.probe)
	for j := range errs {
		if !samePattern(perr.Field, errs[j].Field) {
			continue
		}
		if dRef := locateField(errs[j].Field, r.containerLevel, r.spec); dRef.isContainer && exRef.name != dRef.name {
			continue
		}
		return j
	}
	return -1
}

// own returns failure i of the remover's copy of the failures.
func (r *remover) own(i int) *failure {
	if !r.copied {
		r.kept = append([]failure(nil), r.kept...)
		r.copied = true
	}
	r.changed = true
	return &r.kept[i]
}

// result returns the failures left.
func (r *remover) result() []failure {
	out := r.kept[:0]
	for _, f := range r.kept {
		if f.id != "" {
			out = append(out, f)
		}
	}
	return out
}

// valuesAllowed reports whether every value of a field error matches one of
// the exemption's values (always true without values).
func valuesAllowed(values []wildcard.Pattern, bad any) bool {
	if len(values) == 0 {
		return true
	}
	for _, v := range badValues(bad) {
		if !wildcard.MatchAny(values, v) {
			return false
		}
	}
	return true
}

// podLevelSpecInto writes into p the spec of the pod upstream evaluates
// for an exemption without images: the same pod with a single bare
// container named "fake" and no init or ephemeral containers (its metadata
// is the pod's).
func podLevelSpecInto(p, spec *corev1.PodSpec) {
	*p = *spec
	p.Containers = fakeContainers
	p.InitContainers = nil
	p.EphemeralContainers = nil
}

// fakeContainers is the container list of podLevelSpecInto, shared: checks
// only read pods.
var fakeContainers = []corev1.Container{{Name: "fake"}}

// imagesMeta is the metadata of the pods exemptions with images evaluate,
// shared: checks only read pods. Upstream gives them the name and
// namespace of the pod, which no check reads (they read annotations, and
// these pods have none).
var imagesMeta = &metav1.ObjectMeta{}

// noContainersSpec is the spec an exemption with images evaluates when no
// container matches, shared: checks only read pods.
var noContainersSpec = &corev1.PodSpec{}

// matchingContainersSpecInto writes into p the spec of the pod upstream
// evaluates for an exemption with images: only the containers whose image
// matches, without any pod-level field.
func matchingContainersSpecInto(p, spec *corev1.PodSpec, images []wildcard.Pattern) {
	*p = corev1.PodSpec{}
	p.Containers = matchingContainers(spec.Containers, images, func(c *corev1.Container) string { return c.Image })
	p.InitContainers = matchingContainers(spec.InitContainers, images, func(c *corev1.Container) string { return c.Image })
	p.EphemeralContainers = matchingContainers(spec.EphemeralContainers, images, func(c *corev1.EphemeralContainer) string { return c.Image })
}

// matchingContainers returns the containers of list whose image matches
// one of the patterns (nil for none). When all match it returns list
// itself: checks only read pods, and containers are large to copy.
func matchingContainers[C any](list []C, images []wildcard.Pattern, image func(*C) string) []C {
	n := 0
	for i := range list {
		if wildcard.MatchAny(images, image(&list[i])) {
			n++
		}
	}
	switch n {
	case 0:
		return nil
	case len(list):
		return list
	}
	out := make([]C, 0, n)
	for i := range list {
		if wildcard.MatchAny(images, image(&list[i])) {
			out = append(out, list[i])
		}
	}
	return out
}

// anyContainerMatches reports whether the image of a container of the pod
// matches one of the patterns.
func anyContainerMatches(pod *decodedPod, images []wildcard.Pattern) bool {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if wildcard.MatchAny(images, list[i].Image) {
				return true
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if wildcard.MatchAny(images, pod.Spec.EphemeralContainers[i].Image) {
			return true
		}
	}
	return false
}

// containerRef identifies the container a field path points into.
type containerRef struct {
	isContainer bool
	name        string
}

// locateField resolves, for container-level exemptions, the container a
// field path points into (the second word of the path is containers,
// initContainers or ephemeralContainers, the first number its index).
// Upstream compares the paths themselves with every run of digits replaced
// by '*' (see samePattern and patternIs).
func locateField(f string, containerLevel bool, spec *corev1.PodSpec) containerRef {
	if !containerLevel {
		return containerRef{}
	}
	firstIndex, hasIndex, secondWord := scanField(f)
	var name string
	switch secondWord {
	case "containers":
		if hasIndex && firstIndex < len(spec.Containers) {
			name = spec.Containers[firstIndex].Name
		}
	case "initContainers":
		if hasIndex && firstIndex < len(spec.InitContainers) {
			name = spec.InitContainers[firstIndex].Name
		}
	case "ephemeralContainers":
		if hasIndex && firstIndex < len(spec.EphemeralContainers) {
			name = spec.EphemeralContainers[firstIndex].Name
		}
	default:
		return containerRef{}
	}
	return containerRef{isContainer: true, name: name}
}

// patternByte returns the byte of f's pattern (f with every run of digits
// replaced by '*') that f[i] starts, and where the next one starts in f.
func patternByte(f string, i int) (byte, int) {
	c := f[i]
	if c < '0' || c > '9' {
		return c, i + 1
	}
	for i++; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
	}
	return '*', i
}

// samePattern reports whether the patterns of two field paths are equal
// (every run of digits replaced by '*'), without writing them.
func samePattern(a, b string) bool {
	// the common prefix has the same pattern in both, up to the digit
	// run it may end in (which may go on differently)
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	if k == len(a) && k == len(b) {
		return true
	}
	for k > 0 && a[k-1] >= '0' && a[k-1] <= '9' {
		k--
	}
	i, j := k, k
	for i < len(a) && j < len(b) {
		ca, ni := patternByte(a, i)
		cb, nj := patternByte(b, j)
		if ca != cb {
			return false
		}
		i, j = ni, nj
	}
	return i == len(a) && j == len(b)
}

// patternIs reports whether the pattern of field path f is lit.
func patternIs(f, lit string) bool {
	i, j := 0, 0
	for i < len(f) && j < len(lit) {
		c, ni := patternByte(f, i)
		if c != lit[j] {
			return false
		}
		i, j = ni, j+1
	}
	return i == len(f) && j == len(lit)
}

// scanField returns the first number in a field path and its second run of
// ASCII letters.
func scanField(f string) (firstIndex int, hasIndex bool, secondWord string) {
	words := 0
	for i := 0; i < len(f); {
		ch := f[i]
		switch {
		case ch >= '0' && ch <= '9':
			j := i
			n := 0
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				if n < 1<<30 {
					n = n*10 + int(f[j]-'0')
				}
				j++
			}
			if !hasIndex {
				firstIndex, hasIndex = n, true
				if words >= 2 {
					return firstIndex, hasIndex, secondWord
				}
			}
			i = j
		case isLetter(ch):
			j := i
			for j < len(f) && isLetter(f[j]) {
				j++
			}
			words++
			if words == 2 {
				secondWord = f[i:j]
				if hasIndex {
					return firstIndex, hasIndex, secondWord
				}
			}
			i = j
		default:
			i++
		}
	}
	return firstIndex, hasIndex, secondWord
}

func isLetter(ch byte) bool {
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')
}
