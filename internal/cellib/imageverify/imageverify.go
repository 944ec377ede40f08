// Package imageverify is Kyverno's image verification library, which
// ImageValidatingPolicies see: verifyImageSignatures(image, attestors),
// verifyAttestationSignatures(image, attestation, attestors),
// extractPayload(image, attestation) and getImageData(image). They are
// functions without a receiver whose answers depend on the policy and the
// request: the evaluation binds a Host (package cel replaces the calls in
// each program's plan); this package's own bindings, used only without
// one, fail.
package imageverify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// Overload ids of the functions, upstream's; package cel binds each to
// the evaluation's Host.
const (
	VerifySignaturesOverload   = "verify_image_signature_string_stringarray"
	VerifyAttestationsOverload = "verify_image_attestations_string_string_stringarray"
	ImageDataOverload          = "get_image_data_string"
	PayloadOverload            = "payload_string_string"
)

// AttestorType is the type of the values of the attestors variable.
var AttestorType = types.NewOpaqueType("imageverify.attestor")

// Attestor is the value of attestors.NAME: an attestor of the policy with
// its expressions evaluated. It is immutable once made.
type Attestor struct {
	// Name is the attestor's name in the policy.
	Name string
	// Spec is the attestor, its expression fields (cosign key,
	// certificate and chain, trusted root, subjectExpression of keyless
	// identities, Notary certificates) replaced by their values.
	Spec policiesv1alpha1.Attestor
	// Key identifies the attestor's contents (a hash of Spec's JSON),
	// for caches of verification outcomes.
	Key string
}

// NewAttestor returns the value of an attestor, with its Key.
func NewAttestor(name string, spec policiesv1alpha1.Attestor) *Attestor {
	raw, err := json.Marshal(spec)
	if err != nil {
		// a spec of strings, maps and lists always encodes
		raw = []byte(fmt.Sprintf("%#v", spec))
	}
	sum := sha256.Sum256(raw)
	return &Attestor{Name: name, Spec: spec, Key: hex.EncodeToString(sum[:])}
}

// ConvertToNative converts to *Attestor.
func (a *Attestor) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(a).AssignableTo(typeDesc) {
		return a, nil
	}
	return nil, fmt.Errorf("type conversion error from '%s' to '%v'", AttestorType, typeDesc)
}

// ConvertToType converts to the value's own type only.
func (a *Attestor) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case AttestorType:
		return a
	case types.TypeType:
		return AttestorType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", AttestorType, typeVal)
}

// Equal compares the name and the evaluated attestor.
func (a *Attestor) Equal(other ref.Val) ref.Val {
	o, ok := other.(*Attestor)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(a == o || (a.Name == o.Name && reflect.DeepEqual(a.Spec, o.Spec)))
}

// Type returns AttestorType.
func (a *Attestor) Type() ref.Type { return AttestorType }

// Value returns the Attestor.
func (a *Attestor) Value() any { return a }

// Host answers the library's functions for one evaluation of one policy:
// it knows the policy's matchImageReferences, attestations and
// credentials, and keeps what the request verified. The verification
// functions get the evaluation's context and bound their own calls to
// registries; ImageData's call is bounded by the Scope's Timeout.
type Host interface {
	// VerifyImageSignatures returns how many of the attestors accept a
	// signature of the image (0 for an image matchImageReferences does
	// not select). An error is one the verification could not get past
	// (an unreachable registry, a missing verifier), not a signature
	// that does not verify.
	VerifyImageSignatures(ctx context.Context, image string, attestors []*Attestor) (int, error)
	// VerifyAttestationSignatures returns how many of the attestors
	// accept an attestation of the image of the policy's attestation
	// named attestation.
	VerifyAttestationSignatures(ctx context.Context, image, attestation string, attestors []*Attestor) (int, error)
	// ExtractPayload returns the payload of the attestation named
	// attestation that a verification of the request verified for the
	// image: the in-toto statement, or the referrer's document.
	ExtractPayload(ctx context.Context, image, attestation string) (any, error)
	// ImageData returns the image's data (getImageData): the reference's
	// parts, resolvedImage, the manifest, the config and the index.
	ImageData(ctx context.Context, image string) (map[string]any, error)
}

const libraryName = "kyverno.imageverify"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	dynList := types.NewListType(types.DynType)
	return []cel.EnvOption{
		cel.Function("verifyImageSignatures", cel.Overload(VerifySignaturesOverload,
			[]*cel.Type{types.StringType, dynList}, types.IntType, cel.FunctionBinding(unbound))),
		cel.Function("verifyAttestationSignatures", cel.Overload(VerifyAttestationsOverload,
			[]*cel.Type{types.StringType, types.StringType, dynList}, types.IntType, cel.FunctionBinding(unbound))),
		cel.Function("getImageData", cel.Overload(ImageDataOverload,
			[]*cel.Type{types.StringType}, types.DynType, cel.FunctionBinding(unbound))),
		cel.Function("extractPayload", cel.Overload(PayloadOverload,
			[]*cel.Type{types.StringType, types.StringType}, types.DynType, cel.FunctionBinding(unbound))),
	}
}

// unbound is the binding of a function outside an evaluation that binds
// a Host.
func unbound(...ref.Val) ref.Val {
	return types.NewErr("image verification functions need an ImageValidatingPolicy evaluation")
}

// Call runs the function of overload id with the host, in scope; ok is
// false for an id that is not the library's.
func Call(id string, s call.Scope, h Host, args []ref.Val) (ref.Val, bool) {
	var f func(call.Scope, Host, []ref.Val) ref.Val
	switch id {
	case VerifySignaturesOverload:
		f = verifySignatures
	case VerifyAttestationsOverload:
		f = verifyAttestations
	case ImageDataOverload:
		f = imageData
	case PayloadOverload:
		f = payload
	default:
		return nil, false
	}
	if h == nil {
		return unbound(), true
	}
	return f(s, h, args), true
}

func verifySignatures(s call.Scope, h Host, args []ref.Val) ref.Val {
	if bad := call.Count(args, 2); bad != nil {
		return bad
	}
	image, bad := call.Arg[string](args, 0)
	if bad != nil {
		return bad
	}
	attestors, bad := attestorList(args[1])
	if bad != nil {
		return bad
	}
	ctx := evaluation(s)
	n, err := h.VerifyImageSignatures(ctx, image, attestors)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Int(n)
}

func verifyAttestations(s call.Scope, h Host, args []ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NewErr("function usage: <image> <attestation> <attestor list>")
	}
	image, bad := call.Arg[string](args, 0)
	if bad != nil {
		return bad
	}
	attestation, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	attestors, bad := attestorList(args[2])
	if bad != nil {
		return bad
	}
	ctx := evaluation(s)
	n, err := h.VerifyAttestationSignatures(ctx, image, attestation, attestors)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.Int(n)
}

func imageData(s call.Scope, h Host, args []ref.Val) ref.Val {
	if bad := call.Count(args, 1); bad != nil {
		return bad
	}
	image, bad := call.Arg[string](args, 0)
	if bad != nil {
		return bad
	}
	ctx, cancel := s.Context()
	defer cancel()
	d, err := h.ImageData(ctx, image)
	if err != nil {
		return types.NewErr("failed to get imagedata: %w", err)
	}
	return types.DefaultTypeAdapter.NativeToValue(d)
}

func payload(s call.Scope, h Host, args []ref.Val) ref.Val {
	if bad := call.Count(args, 2); bad != nil {
		return bad
	}
	image, bad := call.Arg[string](args, 0)
	if bad != nil {
		return bad
	}
	attestation, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	ctx := evaluation(s)
	p, err := h.ExtractPayload(ctx, image, attestation)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.DefaultTypeAdapter.NativeToValue(p)
}

// evaluation is the evaluation's context: the verification functions
// mostly answer from caches, so the Host bounds its own registry calls
// (the Scope's Timeout bounds getImageData's).
func evaluation(s call.Scope) context.Context {
	if s.Ctx == nil {
		return context.Background()
	}
	return s.Ctx
}

// attestorList converts a list of attestors (attestors.NAME values).
func attestorList(v ref.Val) ([]*Attestor, ref.Val) {
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, types.NewErr("invalid arg: type conversion error from '%s' to 'list(%s)'", v.Type().TypeName(), AttestorType)
	}
	n, ok := l.Size().(types.Int)
	if !ok {
		return nil, types.NewErr("invalid arg: the attestor list has no size")
	}
	out := make([]*Attestor, 0, int(n))
	for i := types.Int(0); i < n; i++ {
		e := l.Get(i)
		if types.IsError(e) {
			return nil, e
		}
		a, ok := e.(*Attestor)
		if !ok {
			return nil, types.NewErr("invalid arg: type conversion error from '%s' to '%s'", e.Type().TypeName(), AttestorType)
		}
		out = append(out, a)
	}
	return out, nil
}
