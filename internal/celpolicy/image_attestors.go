package celpolicy

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/cellib/imageverify"
)

// attestorProg is a compiled attestor: the attestor as written and the
// programs of its expression fields. An attestor without expressions has
// its value made once (static).
type attestorProg struct {
	spec   policiesv1alpha1.Attestor
	exprs  []attestorExpr
	static *imageverify.Attestor
}

// attestorExpr is an expression field of an attestor: what it sets in
// the attestor once evaluated.
type attestorExpr struct {
	field string
	prog  *cel.Program
	set   func(a *policiesv1alpha1.Attestor, value string)
}

// compileAttestors checks the attestors (a unique name; exactly one of
// cosign and notary; a cosign attestor's key, keyless or certificate; a
// Notary attestor's certificates; the PEM they give, as the verifier
// will read it) and compiles their expression fields, which see the
// policy's variables.
func (v *ImageValidating) compileAttestors(in []policiesv1alpha1.Attestor, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v.attestorIndex = make(map[string]int, len(in))
	for i := range in {
		a := in[i]
		ap := path.Index(i)
		if a.Name == "" {
			errs = append(errs, field.Required(ap.Child("name"), "attestor name is required"))
		} else if _, dup := v.attestorIndex[a.Name]; dup {
			errs = append(errs, field.Duplicate(ap.Child("name"), a.Name))
		}
		ac := &attestorProg{spec: *a.DeepCopy()}
		switch {
		case a.Cosign != nil && a.Notary != nil:
			errs = append(errs, field.Invalid(ap, "", "only one of cosign and notary may be set"))
		case a.Cosign != nil:
			errs = append(errs, v.compileCosign(ac, a.Cosign, ap.Child("cosign"))...)
		case a.Notary != nil:
			errs = append(errs, v.compileNotary(ac, a.Notary, ap.Child("notary"))...)
		default:
			errs = append(errs, field.Required(ap, "one of cosign and notary is required"))
		}
		if len(ac.exprs) == 0 {
			ac.static = imageverify.NewAttestor(a.Name, ac.spec)
		}
		v.attestorIndex[a.Name] = len(v.attestors)
		v.attestors = append(v.attestors, ac)
	}
	return errs
}

// expr compiles an expression field of an attestor; set records its
// value.
func (v *ImageValidating) expr(ac *attestorProg, p *field.Path, expr string, set func(*policiesv1alpha1.Attestor, string)) field.ErrorList {
	prog, err := v.body.comp.Compile(expr, cel.Variable)
	if err != nil {
		return field.ErrorList{field.Invalid(p, expr, err.Error())}
	}
	v.body.reads.note(prog)
	if t := prog.OutputType(); t != nil && !t.IsExactType(types.StringType) && !listOfStrings(t) {
		return field.ErrorList{field.Invalid(p, expr, "output is expected to be of type string")}
	}
	ac.exprs = append(ac.exprs, attestorExpr{field: p.String(), prog: prog, set: set})
	return nil
}

func (v *ImageValidating) compileCosign(ac *attestorProg, c *policiesv1alpha1.Cosign, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case c.Keyless != nil:
		kp := path.Child("keyless")
		if len(c.Keyless.Identities) == 0 {
			errs = append(errs, field.Required(kp.Child("identities"), "at least one identity is required"))
		}
		for i, id := range c.Keyless.Identities {
			ip := kp.Child("identities").Index(i)
			for _, re := range []struct{ name, expr string }{{"issuerRegExp", id.IssuerRegExp}, {"subjectRegExp", id.SubjectRegExp}} {
				if _, err := regexp.Compile(re.expr); err != nil {
					errs = append(errs, field.Invalid(ip.Child(re.name), re.expr, err.Error()))
				}
			}
			if id.SubjectExpression != "" {
				if id.SubjectRegExp != "" {
					errs = append(errs, field.Invalid(ip.Child("subjectExpression"), id.SubjectExpression, "subjectExpression and subjectRegExp are mutually exclusive"))
				}
				i := i
				errs = append(errs, v.expr(ac, ip.Child("subjectExpression"), id.SubjectExpression, func(a *policiesv1alpha1.Attestor, s string) {
					a.Cosign.Keyless.Identities[i].SubjectRegExp, a.Cosign.Keyless.Identities[i].SubjectExpression = s, ""
				})...)
			}
		}
		errs = append(errs, checkPEM(kp.Child("roots"), c.Keyless.Roots, pemCertificates)...)
	case c.Key != nil:
		kp := path.Child("key")
		switch {
		case c.Key.Expression != "":
			errs = append(errs, v.expr(ac, kp.Child("expression"), c.Key.Expression, func(a *policiesv1alpha1.Attestor, s string) {
				a.Cosign.Key.Data, a.Cosign.Key.Expression = s, ""
			})...)
		case c.Key.Data != "":
			errs = append(errs, checkPEM(kp.Child("data"), c.Key.Data, pemPublicKeys)...)
		case c.Key.KMS == "":
			errs = append(errs, field.Required(kp, "one of data, kms and expression is required"))
		}
		switch c.Key.HashAlgorithm {
		case "", "sha224", "sha256", "sha384", "sha512":
		default:
			errs = append(errs, field.NotSupported(kp.Child("hashAlgorithm"), c.Key.HashAlgorithm, []string{"sha224", "sha256", "sha384", "sha512"}))
		}
	case c.Certificate != nil:
		cp := path.Child("certificate")
		errs = append(errs, v.stringOrExpr(ac, cp.Child("cert"), c.Certificate.Certificate, func(a *policiesv1alpha1.Attestor) *policiesv1alpha1.StringOrExpression {
			return a.Cosign.Certificate.Certificate
		})...)
		errs = append(errs, v.stringOrExpr(ac, cp.Child("certChain"), c.Certificate.CertificateChain, func(a *policiesv1alpha1.Attestor) *policiesv1alpha1.StringOrExpression {
			return a.Cosign.Certificate.CertificateChain
		})...)
		if c.Certificate.Certificate == nil && c.Certificate.CertificateChain == nil {
			errs = append(errs, field.Required(cp, "one of cert and certChain is required"))
		}
	default:
		errs = append(errs, field.Required(path, "one of key, keyless and certificate is required"))
	}
	if c.TrustedRoot != nil && c.TrustedRoot.Expression != "" {
		errs = append(errs, v.expr(ac, path.Child("trustedRoot", "expression"), c.TrustedRoot.Expression, func(a *policiesv1alpha1.Attestor, s string) {
			a.Cosign.TrustedRoot.Value, a.Cosign.TrustedRoot.Expression = s, ""
		})...)
	}
	if l := c.CTLog; l != nil {
		lp := path.Child("ctlog")
		if !l.InsecureIgnoreTlog {
			errs = append(errs, checkPEM(lp.Child("rekorPubKey"), l.RekorPubKey, pemPublicKeys)...)
		}
		errs = append(errs, checkPEM(lp.Child("ctLogPubKey"), l.CTLogPubKey, pemPublicKeys)...)
		errs = append(errs, checkPEM(lp.Child("tsaCertChain"), l.TSACertChain, pemCertificates)...)
	}
	return errs
}

func (v *ImageValidating) compileNotary(ac *attestorProg, n *policiesv1alpha1.Notary, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n.Certs == nil {
		errs = append(errs, field.Required(path.Child("certs"), "the certificates are required"))
	}
	errs = append(errs, v.stringOrExpr(ac, path.Child("certs"), n.Certs, func(a *policiesv1alpha1.Attestor) *policiesv1alpha1.StringOrExpression {
		return a.Notary.Certs
	})...)
	errs = append(errs, v.stringOrExpr(ac, path.Child("tsaCerts"), n.TSACerts, func(a *policiesv1alpha1.Attestor) *policiesv1alpha1.StringOrExpression {
		return a.Notary.TSACerts
	})...)
	return errs
}

// stringOrExpr compiles a field of certificates given as a value (which
// must parse) or an expression (whose value replaces it).
func (v *ImageValidating) stringOrExpr(ac *attestorProg, p *field.Path, s *policiesv1alpha1.StringOrExpression, at func(*policiesv1alpha1.Attestor) *policiesv1alpha1.StringOrExpression) field.ErrorList {
	switch {
	case s == nil:
		return nil
	case s.Expression != "":
		return v.expr(ac, p.Child("expression"), s.Expression, func(a *policiesv1alpha1.Attestor, value string) {
			f := at(a)
			f.Value, f.Expression = value, ""
		})
	case s.Value != "":
		return checkPEM(p.Child("value"), s.Value, pemCertificates)
	}
	return field.ErrorList{field.Required(p, "one of value and expression is required")}
}

// attestor returns the value of the i-th attestor in the evaluation: its
// expressions evaluated (an error value when one fails or is not a
// string, with upstream's text).
func (a *attestorProg) value(ev *cel.Evaluation) ref.Val {
	if a.static != nil {
		return a.static
	}
	out := a.spec.DeepCopy()
	for _, x := range a.exprs {
		val, err := ev.Eval(x.prog)
		if err != nil {
			return types.NewErr("failed to evaluate compiled attestor: %s, error: %w", a.spec.Name, Cause(err))
		}
		s, ok := val.(types.String)
		if !ok {
			return types.NewErr("failed to convert expression in compiled attestor: %s, error: type conversion error from '%s' to 'string'", a.spec.Name, val.Type().TypeName())
		}
		x.set(out, string(s))
	}
	return imageverify.NewAttestor(a.spec.Name, *out)
}

// attestorMap is the value of the attestors variable in one evaluation:
// a map whose values are evaluated on first access.
type attestorMap struct {
	v    *ImageValidating
	ev   *cel.Evaluation
	vals []ref.Val
}

var attestorMapType = types.MapType

func (m *attestorMap) index(key ref.Val) (int, bool) {
	s, ok := key.(types.String)
	if !ok {
		return -1, false
	}
	i, ok := m.v.attestorIndex[string(s)]
	return i, ok
}

// Find returns the attestor named key.
func (m *attestorMap) Find(key ref.Val) (ref.Val, bool) {
	i, ok := m.index(key)
	if !ok {
		return nil, false
	}
	if m.vals[i] == nil {
		m.vals[i] = m.v.attestors[i].value(m.ev)
	}
	return m.vals[i], true
}

// Get returns the attestor named key, or a "no such key" error.
func (m *attestorMap) Get(key ref.Val) ref.Val {
	if v, ok := m.Find(key); ok {
		return v
	}
	return types.ValOrErr(key, "no such key: %v", key)
}

// Contains tells whether an attestor is named key.
func (m *attestorMap) Contains(key ref.Val) ref.Val {
	_, ok := m.index(key)
	return types.Bool(ok)
}

// Size returns the number of attestors.
func (m *attestorMap) Size() ref.Val { return types.Int(len(m.v.attestors)) }

// Iterator iterates over the attestors' names.
func (m *attestorMap) Iterator() traits.Iterator { return &nameIterator{m: m} }

// ConvertToNative is not supported.
func (m *attestorMap) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from map to '%v'", typeDesc)
}

// ConvertToType converts to map and type only.
func (m *attestorMap) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from 'map' to '%s'", typeVal)
}

// Equal is identity.
func (m *attestorMap) Equal(other ref.Val) ref.Val {
	o, ok := other.(*attestorMap)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(m == o)
}

// Type returns map.
func (m *attestorMap) Type() ref.Type { return attestorMapType }

// Value returns the map.
func (m *attestorMap) Value() any { return m }

type nameIterator struct {
	m *attestorMap
	i int
}

func (it *nameIterator) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error from iterator to '%v'", typeDesc)
}

func (it *nameIterator) ConvertToType(typeVal ref.Type) ref.Val {
	return types.NewErr("type conversion error from iterator to '%s'", typeVal)
}

func (it *nameIterator) Equal(other ref.Val) ref.Val { return types.Bool(other == ref.Val(it)) }

func (it *nameIterator) Type() ref.Type { return types.IteratorType }

func (it *nameIterator) Value() any { return nil }

func (it *nameIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.m.v.attestors)) }

func (it *nameIterator) Next() ref.Val {
	if it.i >= len(it.m.v.attestors) {
		return nil
	}
	name := it.m.v.attestors[it.i].spec.Name
	it.i++
	return types.String(name)
}
