package polex

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/api"
)

// PriorityLabel is the label by which the CEL PolicyException that decides
// how an excepted result is reported (spec.reportResult) is chosen among
// several: the highest integer wins, the first given on a tie.
const PriorityLabel = "polex.kyverno.io/priority"

// CEL adds policies.kyverno.io PolicyExceptions to the set Compile builds.
// They apply to the CEL policy kinds their policyRefs name (by name and
// kind); their matchConditions are compiled by the engine, on the
// environment of the policy they except.
func CEL(excs ...*api.CELPolicyException) Option {
	return func(o *options) { o.cel = append(o.cel, excs...) }
}

// CELException is one compiled policies.kyverno.io PolicyException.
type CELException struct {
	// Source is the exception as given to Compile; do not modify it.
	Source   *api.CELPolicyException
	key      string
	priority int
}

// Key returns "namespace/name" ("name" without a namespace), as results
// name the exception.
func (e *CELException) Key() string { return e.key }

// Priority is the value of the PriorityLabel label (0 without one).
func (e *CELException) Priority() int { return e.priority }

// Expired reports whether spec.expiresAt is at or before now: an expired
// exception applies no more.
func (e *CELException) Expired(now time.Time) bool {
	at := e.Source.Spec.ExpiresAt
	return at != nil && !now.Before(at.Time)
}

// FullExemption reports whether the exception exempts the resource from
// the policy altogether (it lists no images nor allowedValues, which are
// otherwise handed to the policy's expressions).
func (e *CELException) FullExemption() bool {
	return len(e.Source.Spec.Images) == 0 && len(e.Source.Spec.AllowedValues) == 0
}

// ReportsPass reports whether an excepted result is a pass
// (spec.reportResult: pass) rather than a skip.
func (e *CELException) ReportsPass() bool {
	return e.Source.Spec.ReportResult == api.ExceptionReportPass
}

// CELCandidates returns the CEL exceptions whose policyRefs name the policy
// of the given kind and name, in the order given to Compile (an exception
// that names it twice once). The result must not be modified.
func (s *Set) CELCandidates(kind, name string) []*CELException {
	if s == nil {
		return nil
	}
	return s.celByRef[kind+"/"+name]
}

// addCEL validates and indexes the CEL exceptions.
func (s *Set) addCEL(o *options) []error {
	var errs []error
	for i, pe := range o.cel {
		if pe == nil {
			errs = append(errs, &ValidationError{Name: "cel[" + strconv.Itoa(i) + "]",
				Errors: field.ErrorList{field.Required(field.NewPath("spec"), "nil exception")}})
			continue
		}
		if len(o.namespaces) > 0 && !namespaceAccepted(o.namespaces, pe.Namespace) {
			continue
		}
		if verrs := validateCEL(pe); len(verrs) > 0 {
			errs = append(errs, &ValidationError{Namespace: pe.Namespace, Name: pe.Name, Errors: verrs})
			continue
		}
		e := &CELException{Source: pe, key: exceptionKey(pe.Namespace, pe.Name)}
		if v, ok := pe.Labels[PriorityLabel]; ok {
			e.priority, _ = strconv.Atoi(v)
		}
		s.celAll = append(s.celAll, e)
		seen := map[string]bool{}
		for _, ref := range pe.Spec.PolicyRefs {
			k := ref.Kind + "/" + ref.Name
			if seen[k] {
				continue
			}
			seen[k] = true
			s.celByRef[k] = append(s.celByRef[k], e)
		}
	}
	return errs
}

// validateCEL checks what upstream's API validation checks: at least one
// policyRef, each with a name and a kind; a reportResult of skip or pass;
// named, non-empty matchConditions (their expressions are type-checked by
// the engine, which knows the policy's environment).
func validateCEL(pe *api.CELPolicyException) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if len(pe.Spec.PolicyRefs) == 0 {
		errs = append(errs, field.Required(spec.Child("policyRefs"), "must specify at least one policy ref"))
	}
	for i, ref := range pe.Spec.PolicyRefs {
		p := spec.Child("policyRefs").Index(i)
		if ref.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "must specify policy name"))
		}
		if ref.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), "must specify policy kind"))
		}
	}
	switch pe.Spec.ReportResult {
	case "", "skip", api.ExceptionReportPass:
	default:
		errs = append(errs, field.NotSupported(spec.Child("reportResult"), pe.Spec.ReportResult, []string{"skip", "pass"}))
	}
	names := map[string]bool{}
	for i, m := range pe.Spec.MatchConditions {
		p := spec.Child("matchConditions").Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else if names[m.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), m.Name))
		}
		names[m.Name] = true
		if m.Expression == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		}
	}
	return errs
}
