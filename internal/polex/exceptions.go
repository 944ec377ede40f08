package polex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"github.com/gavelpolicy/gavel/internal/wildcard"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Option configures Compile.
type Option func(*options)

type options struct {
	namespaces []string
	cel        []*api.CELPolicyException
}

// Namespaces accepts only exceptions living in one of the given namespaces
// (wildcards allowed; "*" accepts all), like upstream's exceptionNamespace
// setting. Exceptions from other namespaces are ignored, not validated.
// Without this option every exception is accepted.
func Namespaces(namespaces ...string) Option {
	return func(o *options) { o.namespaces = append(o.namespaces, namespaces...) }
}

// Exception is one compiled PolicyException.
type Exception struct {
	// Source is the exception as given to Compile; do not modify it.
	Source *api.PolicyException
	// Match is the compiled spec.match block.
	Match *match.Filter
	// Exclude is the compiled spec.exclude block, nil when absent.
	Exclude *match.Filter
	// Conditions are spec.conditions, nil when absent. The caller evaluates
	// them (after Matches holds) with its variable substitution; the
	// exception applies only when they pass.
	Conditions *api.AnyAllConditions

	key string
}

// Matches reports whether the exception's match block selects the resource
// and its exclude block (if any) does not. Conditions are not evaluated. An
// error is returned only when Request.NamespaceLabels fails.
func (e *Exception) Matches(res match.Resource, req match.Request) (bool, error) {
	ok, err := e.Match.Matches(res, req)
	if err != nil || !ok || e.Exclude == nil {
		return ok, err
	}
	excluded, err := e.Exclude.Matches(res, req)
	if err != nil {
		return false, err
	}
	return !excluded, nil
}

// Background reports whether the exception applies to background processing
// (spec.background, true by default).
func (e *Exception) Background() bool { return e.Source.Spec.BackgroundEnabled() }

// PodSecurity returns the Pod Security Standards controls the exception
// exempts (spec.podSecurity). An exception with controls is applied by the
// podSecurity subrule after the checks run rather than skipping the rule
// outright, as upstream does. The slice must not be modified.
func (e *Exception) PodSecurity() []api.PodSecurityStandard { return e.Source.Spec.PodSecurity }

// Key returns "namespace/name" (just "name" for an exception without a
// namespace), as rule results and reports name the exception.
func (e *Exception) Key() string { return e.key }

// Set is a compiled, immutable, concurrency-safe set of exceptions indexed
// by policy key and rule name.
type Set struct {
	byPolicy map[string][]candidate
	all      []*Exception
	// celByRef holds the CEL exceptions by "kind/name" of the policies
	// they name; celAll in order
	celByRef map[string][]*CELException
	celAll   []*CELException
}

// candidate is an exception and the rule-name patterns it gives one policy.
type candidate struct {
	exc   *Exception
	rules []string
}

// Compile validates and compiles exceptions. Invalid exceptions make Compile
// fail with one *ValidationError per invalid exception (joined with
// errors.Join), each naming the exception and the fields at fault.
//
// Validation is upstream's: policyName is required in every spec.exceptions
// entry; spec.match (and spec.exclude) are checked like match blocks (see
// match.CompileFilter: any and all only, well-formed subjects, roles and
// selectors); background exceptions may not use roles, clusterRoles or
// subjects; podSecurity entries name images exactly for container-level
// controls and give restrictedField and values together.
func Compile(excs []*api.PolicyException, opts ...Option) (*Set, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Set{byPolicy: map[string][]candidate{}, celByRef: map[string][]*CELException{}}
	var errs []error
	for i, pe := range excs {
		if pe == nil {
			errs = append(errs, fmt.Errorf("exceptions: entry %d is nil", i))
			continue
		}
		if len(o.namespaces) > 0 && !namespaceAccepted(o.namespaces, pe.Namespace) {
			continue
		}
		e, verrs := compileOne(pe)
		if len(verrs) > 0 {
			errs = append(errs, &ValidationError{Namespace: pe.Namespace, Name: pe.Name, Errors: verrs})
			continue
		}
		s.all = append(s.all, e)
		seen := map[string]int{}
		for _, item := range pe.Spec.Exceptions {
			if j, ok := seen[item.PolicyName]; ok {
				c := &s.byPolicy[item.PolicyName][j]
				c.rules = append(c.rules, item.RuleNames...)
				continue
			}
			seen[item.PolicyName] = len(s.byPolicy[item.PolicyName])
			s.byPolicy[item.PolicyName] = append(s.byPolicy[item.PolicyName],
				candidate{exc: e, rules: append([]string(nil), item.RuleNames...)})
		}
	}
	errs = append(errs, s.addCEL(&o)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

func namespaceAccepted(patterns []string, ns string) bool {
	for _, p := range patterns {
		if wildcard.Match(p, ns) {
			return true
		}
	}
	return false
}

// Candidates returns the exceptions that name the policy and, in ruleNames,
// the rule, in the order they were given to Compile. The result is nil when
// there are none; it must not be modified.
func (s *Set) Candidates(policyKey, ruleName string) []*Exception {
	cands := s.byPolicy[policyKey]
	if len(cands) == 0 {
		return nil
	}
	var out []*Exception
	for i := range cands {
		for _, pattern := range cands[i].rules {
			if wildcard.Match(pattern, ruleName) {
				if out == nil {
					out = make([]*Exception, 0, len(cands)-i)
				}
				out = append(out, cands[i].exc)
				break
			}
		}
	}
	return out
}

// Len returns the number of compiled exceptions (CEL exceptions
// included).
func (s *Set) Len() int { return len(s.all) + len(s.celAll) }

// SkipMessage is the message of a rule result skipped because of exceptions,
// as upstream writes it: "rule is skipped due to policy exception: " followed
// by the exception keys joined with ", ".
func SkipMessage(keys ...string) string {
	return "rule is skipped due to policy exception: " + strings.Join(keys, ", ")
}

// keys returns the keys of exceptions, in order (for SkipMessage).
func keys(excs []*Exception) []string {
	out := make([]string, len(excs))
	for i, e := range excs {
		out[i] = e.Key()
	}
	return out
}

// ValidationError reports an invalid PolicyException.
type ValidationError struct {
	Namespace, Name string
	Errors          field.ErrorList
}

func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return "PolicyException " + exceptionKey(e.Namespace, e.Name) + ": " + strings.Join(msgs, "; ")
}

func exceptionKey(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
