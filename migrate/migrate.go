package migrate

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
)

// Rule types, as RuleOutcome.Type names them.
const (
	TypeValidate     = "validate"
	TypeMutate       = "mutate"
	TypeGenerate     = "generate"
	TypeVerifyImages = "verifyImages"
	TypeCleanup      = "cleanup"
	TypeException    = "exception"
)

// Conversion is what Convert made of one document: the CEL policy
// objects and the outcome of each rule.
type Conversion struct {
	// Kind, Name and Namespace identify the source document.
	Kind, Name, Namespace string
	// Source is the source policy (a ClusterPolicy or Policy; a
	// *api.PolicyException; nil for cleanup policies).
	Source any
	// Outputs are the CEL policy objects, in the order of their types:
	// ValidatingPolicy, MutatingPolicy, GeneratingPolicy,
	// ImageValidatingPolicy (DeletingPolicy, PolicyException).
	Outputs []*Output
	// Rules are the outcomes of the source's rules in order (one entry,
	// named after the document, for kinds without rules).
	Rules []RuleOutcome
}

// Output is one CEL policy object of a conversion.
type Output struct {
	// Object is the policy: *api.ValidatingPolicy, *api.MutatingPolicy,
	// *api.GeneratingPolicy, *api.ImageValidatingPolicy,
	// *api.DeletingPolicy (api.PolicyObjects) or *api.CELPolicyException.
	Object metav1.Object
	// Type is the rule type it holds (TypeValidate, ...).
	Type string
	// Rules are the names of the source rules it holds.
	Rules []string
	// comments are YAML comments by the path of the node they explain.
	comments map[string]string
	// owners are the rules each expression comes from, by its path
	owners map[string][]string
	// entries are the variables of the rules' context entries: rule →
	// entry → variable
	entries map[string]map[string]string
	// numbers are the variables known to hold numbers
	numbers map[string]bool
	// binds are the cel.bind names of the rules' foreach context
	// entries: rule → entry → binding
	binds map[string]map[string]localBind
	// imageVars are the variables that hold image.GetMetadata's value
	imageVars map[string]bool
}

// localBind is a foreach context entry bound with cel.bind: its name and
// the text of the expression it is bound to.
type localBind struct {
	name, init string
	// imageData: the value of image.GetMetadata, whose field names
	// differ from Kyverno's image data
	imageData bool
}

// RuleOutcome is what became of one rule.
type RuleOutcome struct {
	// Rule is the rule's name, Type its type.
	Rule, Type string
	// Policy is the name of the output policy that holds the rule
	// ("" when it was not converted).
	Policy string
	// Problems say why the rule could not be converted (none when it
	// was).
	Problems []Problem
}

// Converted reports whether the rule was converted.
func (r RuleOutcome) Converted() bool { return len(r.Problems) == 0 }

// Problem is a construct the converter could not express.
type Problem struct {
	// Path is the construct's field path in the source document
	// (spec.rules[1].validate.pattern.spec.containers).
	Path string
	// Construct names it (operator ~, JMESPath function regex_replace_all).
	Construct string
	// Detail says why.
	Detail string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Construct)
	if p.Detail != "" {
		b.WriteString(": " + p.Detail)
	}
	return b.String()
}

// Converted reports whether every rule of the source was converted.
func (c *Conversion) Converted() bool {
	for _, r := range c.Rules {
		if !r.Converted() {
			return false
		}
	}
	return len(c.Rules) > 0
}

// problemOf turns a conversion error into a Problem located under base.
func problemOf(base string, err error) Problem {
	if err == nil {
		return Problem{Path: base}
	}
	path := base
	var pe *pathError
	for errors.As(err, &pe) {
		if strings.HasPrefix(pe.path, "spec.") {
			path = pe.path
		} else {
			path = joinPath(path, pe.path)
		}
		err = pe.err
	}
	var u *unsupported
	if errors.As(err, &u) {
		return Problem{Path: path, Construct: u.construct, Detail: u.detail}
	}
	return Problem{Path: path, Construct: "error", Detail: err.Error()}
}

func joinPath(base, p string) string {
	switch {
	case base == "":
		return p
	case p == "":
		return base
	case strings.HasPrefix(p, "["):
		return base + p
	}
	return base + "." + p
}

// Option configures Convert.
type Option func(*options)

type options struct {
	// policies are conversions of the policies exceptions refer to
	policies []*Conversion
}

// WithPolicies gives the conversions of the policies that the
// PolicyExceptions being converted refer to: an exception's rules are
// found in the converted policies' outputs.
func WithPolicies(convs ...*Conversion) Option {
	return func(o *options) { o.policies = append(o.policies, convs...) }
}

// Convert converts one document: a ClusterPolicy or Policy (into
// ValidatingPolicy, MutatingPolicy, GeneratingPolicy and
// ImageValidatingPolicy, each named after the policy, with a "-<type>"
// suffix when it becomes several), a PolicyException (into a
// policies.kyverno.io PolicyException) or a CleanupPolicy or
// ClusterCleanupPolicy (into a DeletingPolicy). A rule that cannot be
// converted is left out of the outputs with its Problems. The error is
// for documents of other kinds, or that do not decode.
func Convert(doc api.Document, opts ...Option) (*Conversion, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch doc.Kind() {
	case api.KindClusterPolicy, api.KindPolicy:
		p, err := api.DecodePolicy(doc)
		if err != nil {
			return nil, err
		}
		return ConvertPolicy(p.(api.ClassicPolicy)), nil
	case api.KindPolicyException:
		if !strings.HasPrefix(doc.APIVersion(), api.GroupKyverno+"/") {
			return nil, fmt.Errorf("%s: already a CEL PolicyException", doc)
		}
		x, err := api.DecodeObject(doc)
		if err != nil {
			return nil, err
		}
		pe, ok := x.(*api.PolicyException)
		if !ok {
			return nil, fmt.Errorf("%s: not a kyverno.io PolicyException", doc)
		}
		return convertException(pe, o.policies), nil
	case "CleanupPolicy", "ClusterCleanupPolicy":
		return convertCleanup(doc)
	}
	return nil, fmt.Errorf("%s: not a ClusterPolicy, Policy, PolicyException or cleanup policy", doc)
}

// ConvertPolicy converts a ClusterPolicy or Policy (see Convert).
func ConvertPolicy(p api.ClassicPolicy) *Conversion {
	return convertClassic(p)
}
