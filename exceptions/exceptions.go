package exceptions

import (
	"context"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/polex"
)

// PriorityLabel is the label by which the CEL PolicyException that decides
// how an excepted result is reported (spec.reportResult) is chosen among
// several: the highest integer wins, the first given on a tie.
const PriorityLabel = polex.PriorityLabel

// Option configures Compile.
type Option = polex.Option

// Namespaces accepts only exceptions living in one of the given namespaces
// (wildcards allowed; "*" accepts all), like upstream's exceptionNamespace
// setting. Exceptions from other namespaces are ignored, not validated.
// Without this option every exception is accepted.
func Namespaces(namespaces ...string) Option { return polex.Namespaces(namespaces...) }

// CEL adds policies.kyverno.io PolicyExceptions to the set Compile builds.
// They apply to the CEL policy kinds their policyRefs name (by name and
// kind); their matchConditions are compiled by the engine, on the
// environment of the policy they except.
func CEL(excs ...*api.CELPolicyException) Option { return polex.CEL(excs...) }

// Set is a compiled, immutable, concurrency-safe set of exceptions, for
// the engine (engine.WithExceptions: a Set is an engine.ExceptionSource
// that always gives itself). It holds
// the exceptions indexed by the policies and rules they name, their match
// and exclude blocks compiled.
type Set polex.Set

// Compile validates and compiles exceptions. Invalid exceptions make Compile
// fail with one *ValidationError per invalid exception (joined with
// errors.Join), each naming the exception and the fields at fault.
//
// Validation is upstream's: policyName is required in every spec.exceptions
// entry; spec.match (and spec.exclude) are checked like match blocks (any
// and all only, well-formed subjects, roles and selectors); background
// exceptions may not use roles, clusterRoles or subjects; podSecurity
// entries name images exactly for container-level controls and give
// restrictedField and values together. CEL exceptions (the CEL option)
// need at least one policyRef with a name and a kind, a reportResult of
// skip or pass, and named, non-empty matchConditions.
func Compile(excs []*api.PolicyException, opts ...Option) (*Set, error) {
	s, err := polex.Compile(excs, opts...)
	if err != nil {
		return nil, err
	}
	return (*Set)(s), nil
}

// Len returns the number of compiled exceptions (CEL exceptions
// included).
func (s *Set) Len() int { return (*polex.Set)(s).Len() }

// Exceptions returns s: a fixed Set is the engine's ExceptionSource
// (engine.WithExceptions(set)).
func (s *Set) Exceptions(context.Context) (*Set, error) { return s, nil }

// ValidationError reports an invalid PolicyException: its namespace and
// name, and the fields at fault.
type ValidationError = polex.ValidationError
