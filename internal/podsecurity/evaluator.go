package podsecurity

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"k8s.io/apimachinery/pkg/util/validation/field"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Evaluator holds the Pod Security Standards checks of the library, indexed
// for compilation. Build it once with NewEvaluator and share it: it is
// immutable and safe for concurrent use.
type Evaluator struct {
	checks []checkDef // in the library's registration order
	size   int        // number of check revisions
}

type checkDef struct {
	id       string
	level    psaapi.Level
	versions []policy.VersionedCheck
	errs     errFn
	// first is the catalogue index of versions[0] (see step.index)
	first int
}

// NewEvaluator builds the catalogue of checks from the library.
func NewEvaluator() (*Evaluator, error) {
	lib := policy.DefaultChecks()
	e := &Evaluator{checks: make([]checkDef, 0, len(lib))}
	for _, c := range lib {
		if len(c.Versions) == 0 {
			return nil, fmt.Errorf("pod security check %q has no versions", c.ID)
		}
		for _, v := range c.Versions {
			if v.CheckPod == nil {
				return nil, fmt.Errorf("pod security check %q %s has no check function", c.ID, v.MinimumVersion)
			}
		}
		fn := fieldErrorFns[string(c.ID)]
		if fn == nil {
			fn = unknownCheckErrs
		}
		e.checks = append(e.checks, checkDef{id: string(c.ID), level: c.Level, versions: c.Versions, errs: fn, first: e.size})
		e.size += len(c.Versions)
	}
	return e, nil
}

// step is one check revision a compiled rule runs.
type step struct {
	id   string
	min  psaapi.Version
	run  policy.CheckPodFn
	errs errFn
	// index numbers the check revision in the library's catalogue, the
	// same for every Evaluator (they all list the library's checks in its
	// order): Decoded caches outcomes by it.
	index int
	// control is the index in controlTable of the check's control (-1
	// for a check no control names)
	control int
}

// Check is a compiled validate.podSecurity rule: immutable, safe for
// concurrent use.
type Check struct {
	level    string // as written in the policy, for messages
	version  string // as written in the policy, for messages
	ruleName string
	steps    []step
	excludes []exclusion
	// slots is the size of the catalogue: outcomes cached by step index
	// fit in that many slots
	slots int
	// setKey names the steps (their indexes): Checks with the same key
	// share their failures on a Decoded (see Decoded.stepSet)
	setKey string
	// dupIDs is set when two steps are revisions of the same check (a
	// pinned version): exemptions then keep one failure per check
	dupIDs bool
	// passMessage and failPrefix are the rule's messages, made once.
	passMessage, failPrefix string
}

// CompileOption configures Compile.
type CompileOption func(*compileConfig) error

type compileConfig struct {
	ruleName string
}

// WithRuleName sets the rule name used in result messages.
func WithRuleName(name string) CompileOption {
	return func(c *compileConfig) error {
		c.ruleName = name
		return nil
	}
}

// CompileError lists everything wrong with a podSecurity block. Field paths
// are rooted at "podSecurity".
type CompileError struct {
	Errs field.ErrorList
}

// Error joins the field errors with "; ".
func (e *CompileError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

// Unwrap returns the individual field errors.
func (e *CompileError) Unwrap() []error {
	out := make([]error, len(e.Errs))
	for i, err := range e.Errs {
		out[i] = err
	}
	return out
}

// Compile validates the level, version and exclusions of a podSecurity
// block and returns the checker for it.
func (e *Evaluator) Compile(ps api.PodSecurity, opts ...CompileOption) (*Check, error) {
	if e == nil {
		return nil, errors.New("podsecurity: nil Evaluator")
	}
	var cfg compileConfig
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	root := field.NewPath("podSecurity")
	var errs field.ErrorList

	var level psaapi.Level
	if ps.Level == "" {
		errs = append(errs, field.Required(root.Child("level"), "must be one of privileged, baseline, restricted"))
	} else if l, err := psaapi.ParseLevel(ps.Level); err != nil {
		errs = append(errs, field.NotSupported(root.Child("level"), ps.Level, []string{"privileged", "baseline", "restricted"}))
	} else {
		level = l
	}
	version, verr := parseVersion(ps.Version)
	if verr != nil {
		errs = append(errs, field.Invalid(root.Child("version"), ps.Version, verr.Error()))
	}
	excludes, xerrs := compileExclusions(ps.Exclude, root.Child("exclude"))
	errs = append(errs, xerrs...)
	if level == psaapi.LevelBaseline {
		// Upstream rejects exempting a restricted-only control at the
		// baseline level (Seccomp and Capabilities exist at both levels).
		for i, ex := range ps.Exclude {
			if restrictedOnlyControls[ex.ControlName] {
				errs = append(errs, field.Invalid(root.Child("exclude").Index(i).Child("controlName"), ex.ControlName,
					"Invalid control name defined at the given level"))
			}
		}
	}
	if len(errs) > 0 {
		return nil, &CompileError{Errs: errs}
	}
	steps := e.steps(level, version)
	coverSteps(excludes, steps)
	return &Check{
		level:       ps.Level,
		version:     ps.Version,
		ruleName:    cfg.ruleName,
		steps:       steps,
		setKey:      stepsKey(steps),
		dupIDs:      hasDuplicateIDs(steps),
		excludes:    excludes,
		slots:       e.size,
		passMessage: fmt.Sprintf("Validation rule '%s' passed.", cfg.ruleName),
		failPrefix:  fmt.Sprintf(`Validation rule '%s' failed. It violates PodSecurity "%s:%s": `, cfg.ruleName, ps.Level, ps.Version),
	}, nil
}

// stepsKey names a list of steps by their catalogue indexes.
func stepsKey(steps []step) string {
	b := make([]byte, 0, 3*len(steps))
	for _, s := range steps {
		b = strconv.AppendInt(b, int64(s.index), 10)
		b = append(b, ',')
	}
	return string(b)
}

// hasDuplicateIDs reports whether two steps are revisions of one check.
func hasDuplicateIDs(steps []step) bool {
	for i := range steps {
		for j := range i {
			if steps[j].id == steps[i].id {
				return true
			}
		}
	}
	return false
}

// parseVersion accepts "", "latest" or "v1.N".
func parseVersion(v string) (psaapi.Version, error) {
	if v == "" || v == "latest" {
		return psaapi.LatestVersion(), nil
	}
	parsed, err := psaapi.ParseVersion(v)
	if err != nil {
		return psaapi.Version{}, err
	}
	return psaapi.MajorMinorVersion(parsed.Major(), parsed.Minor()), nil
}

// steps selects the check revisions for a level and version, as upstream:
// the newest revision of each check for "latest", and every revision not
// newer than a pinned version otherwise.
func (e *Evaluator) steps(level psaapi.Level, version psaapi.Version) []step {
	if level == psaapi.LevelPrivileged {
		return nil
	}
	var out []step
	for _, c := range e.checks {
		if level == psaapi.LevelBaseline && c.level != psaapi.LevelBaseline {
			continue
		}
		if version.Latest() {
			newest, newestAt := c.versions[0], 0
			for i, v := range c.versions[1:] {
				if !v.MinimumVersion.Older(newest.MinimumVersion) {
					newest, newestAt = v, i+1
				}
			}
			out = append(out, step{id: c.id, min: newest.MinimumVersion, run: newest.CheckPod, errs: c.errs, index: c.first + newestAt, control: controlOf(c.id)})
			continue
		}
		for i, v := range c.versions {
			if version.Older(v.MinimumVersion) {
				continue
			}
			out = append(out, step{id: c.id, min: v.MinimumVersion, run: v.CheckPod, errs: c.errs, index: c.first + i, control: controlOf(c.id)})
		}
	}
	return out
}

// ValidateExcludes validates podSecurity exemptions (of a rule or of a
// PolicyException) the way upstream does, with paths under path.
func ValidateExcludes(excludes []api.PodSecurityStandard, path *field.Path) field.ErrorList {
	_, errs := compileExclusions(excludes, path)
	return errs
}
