package celpolicy

import (
	"context"
	"fmt"
	"strings"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	policiesv1alpha1 "github.com/kyverno/api/api/policies.kyverno.io/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// Variables of ImageValidatingPolicy expressions.
const (
	// ImagesVar holds the images the policy verifies, by extractor name
	// (containers, initContainers, ephemeralContainers, the policy's
	// own): lists of strings, those matchImageReferences select.
	ImagesVar = "images"
	// AttestorsVar holds the policy's attestors by name (values of the
	// image verification functions' attestor lists).
	AttestorsVar = "attestors"
	// AttestationsVar holds the names of the policy's attestations, by
	// name (attestations.sbom is "sbom").
	AttestationsVar = "attestations"
	// ImageRefVar is the image a matchImageReferences expression sees.
	ImageRefVar = "ref"
)

// ImageEnvOptions are the options of the environment of
// ImageValidatingPolicy expressions, on top of package cel's: the request
// with its objects, the images, attestors and attestations variables, no
// authorizer, and upstream's orValue on values that are not optionals.
// Unlike ValidatingPolicy's, the environment has no exceptions variable.
func ImageEnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.WithRequestObjects(),
		cel.WithoutAuthorizer(),
		cel.WithVariable(ImagesVar, celgo.MapType(celgo.StringType, celgo.ListType(celgo.StringType))),
		cel.WithVariable(AttestorsVar, celgo.MapType(celgo.StringType, celgo.DynType)),
		cel.WithVariable(AttestationsVar, celgo.MapType(celgo.StringType, celgo.StringType)),
	}
}

// ImageMatchEnvOptions are the options of the environment of
// matchImageReferences expressions: the image as ref, with the image
// library (image(ref).registry() == "ghcr.io"), as upstream's.
func ImageMatchEnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.WithoutAuthorizer(),
		cel.WithVariable(ImageRefVar, celgo.StringType),
		cel.WithLibraries(cel.ImageLibrary | cel.ExtensionLibraries),
	}
}

// ImageSpec is what the body of an ImageValidatingPolicy is compiled
// from.
type ImageSpec struct {
	Spec
	ImageExtractors      []policiesv1alpha1.ImageExtractor
	MatchImageReferences []policiesv1alpha1.MatchImageReference
	Attestors            []policiesv1alpha1.Attestor
	Attestations         []policiesv1alpha1.Attestation
	// VerifyDigest requires every image it verifies to be given by
	// digest (validationConfigurations.verifyDigest).
	VerifyDigest bool
}

// ImageOptions configure CompileImage.
type ImageOptions struct {
	Options
	// MatchEnv is the environment of matchImageReferences expressions
	// (ImageMatchEnvOptions), shared by the policies of an engine.
	MatchEnv *cel.Env
}

// ImageValidating is the compiled body of an ImageValidatingPolicy:
// immutable, safe for concurrent use.
type ImageValidating struct {
	body Validating
	// extractors are the policy's images entries
	extractors []extractorProg
	refs       []imageRef
	refComp    *cel.Compiler
	attestors  []*attestorProg
	// attestorIndex finds an attestor by name
	attestorIndex map[string]int
	attestations  map[string]policiesv1alpha1.Attestation
	// attestationNames is the value of the attestations variable
	attestationNames map[string]any
	verifyDigest     bool
}

type extractorProg struct {
	name string
	prog *cel.Program
}

// imageRef is a compiled matchImageReferences entry: a glob or an
// expression.
type imageRef struct {
	glob *glob
	prog *cel.Program
}

// CompileImage compiles the body of an ImageValidatingPolicy on env
// (ImageEnvOptions and the policy type's libraries). path is the spec's
// path for errors.
func CompileImage(env *cel.Env, spec *ImageSpec, opts ImageOptions, path *field.Path) (*ImageValidating, field.ErrorList) {
	var copts []cel.CompilerOption
	if opts.Namespace != "" {
		copts = append(copts, cel.InNamespace(opts.Namespace))
	}
	comp, condComp := env.NewCompiler(false, copts...), env.NewCompiler(false, copts...)
	if opts.Lazy {
		comp.Lazy()
		condComp.Lazy()
	}
	v := &ImageValidating{body: Validating{sem: Kyverno, comp: comp}, verifyDigest: spec.VerifyDigest}
	var errs field.ErrorList
	if fp := spec.FailurePolicy; fp != nil {
		switch *fp {
		case "Fail":
		case "Ignore":
			v.body.ignore = true
		default:
			errs = append(errs, field.NotSupported(path.Child("failurePolicy"), *fp, []string{"Fail", "Ignore"}))
		}
	}
	var cerrs field.ErrorList
	v.body.conds, cerrs = CompileConditions(condComp, spec.MatchConditions, path.Child("matchConditions"))
	errs = append(errs, cerrs...)
	v.body.reads = v.body.conds.reads
	for i, vr := range spec.Variables {
		vp := path.Child("variables").Index(i)
		if vr.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), "variable name is required"))
			continue
		}
		if _, err := comp.AddVariable(vr.Name, vr.Expression); err != nil {
			errs = append(errs, field.Invalid(vp.Child("expression"), vr.Expression, err.Error()))
		}
	}
	errs = append(errs, v.compileExtractors(spec.ImageExtractors, path.Child("images"))...)
	errs = append(errs, v.compileRefs(opts, spec.MatchImageReferences, path.Child("matchImageReferences"))...)
	errs = append(errs, v.compileAttestors(spec.Attestors, path.Child("attestors"))...)
	errs = append(errs, v.compileAttestations(spec.Attestations, path.Child("attestations"))...)
	errs = append(errs, v.body.compileValidations(spec.Validations, path.Child("validations"))...)
	errs = append(errs, v.body.compileAudits(spec.AuditAnnotations, path.Child("auditAnnotations"))...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		errs = append(errs, field.Required(path.Child("validations"), "validations and auditAnnotations may not both be empty"))
	}
	comp.Release()
	return v, errs
}

// Reads returns what the body's expressions read.
func (v *ImageValidating) Reads() Reads { return v.body.reads }

// Ignore reports failurePolicy Ignore.
func (v *ImageValidating) Ignore() bool { return v.body.ignore }

// Conditions returns the body's matchConditions.
func (v *ImageValidating) Conditions() *Conditions { return v.body.conds }

// Attestation returns the policy's attestation of that name.
func (v *ImageValidating) Attestation(name string) (policiesv1alpha1.Attestation, bool) {
	a, ok := v.attestations[name]
	return a, ok
}

// stringList is the type an image extractor must have.
var stringList = celgo.ListType(celgo.StringType)

// compileExtractors compiles the policy's images entries: each a list of
// strings (or dyn).
func (v *ImageValidating) compileExtractors(in []policiesv1alpha1.ImageExtractor, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, x := range in {
		xp := path.Index(i)
		if x.Name == "" {
			errs = append(errs, field.Required(xp.Child("name"), "image extractor name is required"))
		}
		p, err := v.body.comp.Compile(x.Expression, cel.Variable)
		if err != nil {
			errs = append(errs, field.Invalid(xp.Child("expression"), x.Expression, err.Error()))
			continue
		}
		v.body.reads.note(p)
		if !listOfStrings(p.OutputType()) {
			errs = append(errs, field.Invalid(xp.Child("expression"), x.Expression, "output is expected to be of type list(string)"))
			continue
		}
		v.extractors = append(v.extractors, extractorProg{name: x.Name, prog: p})
	}
	return errs
}

// listOfStrings reports a type an extractor may have: list(string), or
// dyn or list(dyn) whose values are checked when evaluated, as upstream.
func listOfStrings(t *celgo.Type) bool {
	return t == nil || t.IsExactType(stringList) || t.IsExactType(celgo.DynType) || t.IsExactType(celgo.ListType(celgo.DynType)) ||
		t.IsExactType(celgo.AnyType)
}

// compileRefs compiles matchImageReferences: each a glob or a bool
// expression on ref.
func (v *ImageValidating) compileRefs(opts ImageOptions, in []policiesv1alpha1.MatchImageReference, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, m := range in {
		mp := path.Index(i)
		switch {
		case m.Glob != "":
			g, err := compileGlob(m.Glob)
			if err != nil {
				errs = append(errs, field.Invalid(mp.Child("glob"), m.Glob, err.Error()))
				continue
			}
			v.refs = append(v.refs, imageRef{glob: g})
		case m.Expression != "":
			if opts.MatchEnv == nil {
				errs = append(errs, field.InternalError(mp.Child("expression"), fmt.Errorf("no environment for matchImageReferences expressions")))
				continue
			}
			if v.refComp == nil {
				v.refComp = opts.MatchEnv.NewCompiler(false)
			}
			p, err := v.refComp.Compile(m.Expression, cel.Validation)
			if err != nil {
				errs = append(errs, field.Invalid(mp.Child("expression"), m.Expression, err.Error()))
				continue
			}
			v.refs = append(v.refs, imageRef{prog: p})
		default:
			errs = append(errs, field.Invalid(mp, "", "either glob or expression must be set"))
		}
	}
	return errs
}

// MatchImage reports whether matchImageReferences select the image: one
// of them matches it (every image, without any).
func (v *ImageValidating) MatchImage(ctx context.Context, image string) (bool, error) {
	if len(v.refs) == 0 {
		return true, nil
	}
	var ev *cel.Evaluation
	for _, r := range v.refs {
		if r.glob != nil {
			if r.glob.match(image) {
				return true, nil
			}
			continue
		}
		if ev == nil {
			ev = v.refComp.NewEvaluation(ctx, &cel.Input{Extra: map[string]any{ImageRefVar: image}}, nil)
		}
		out, err := ev.Eval(r.prog)
		if err != nil {
			return false, Cause(err)
		}
		if out == types.True {
			return true, nil
		}
		if out != types.False {
			return false, fmt.Errorf("type conversion error from '%s' to 'bool'", out.Type().TypeName())
		}
	}
	return false, nil
}

// compileAttestations checks the policy's attestations: a unique name,
// and exactly one of intoto and referrer, with its type.
func (v *ImageValidating) compileAttestations(in []policiesv1alpha1.Attestation, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v.attestations = make(map[string]policiesv1alpha1.Attestation, len(in))
	v.attestationNames = make(map[string]any, len(in))
	for i, a := range in {
		ap := path.Index(i)
		switch {
		case a.Name == "":
			errs = append(errs, field.Required(ap.Child("name"), "attestation name is required"))
		case v.attestationNames[a.Name] != nil:
			errs = append(errs, field.Duplicate(ap.Child("name"), a.Name))
		}
		switch {
		case a.InToto != nil && a.Referrer != nil:
			errs = append(errs, field.Invalid(ap, "", "only one of intoto and referrer may be set"))
		case a.InToto != nil:
			if strings.TrimSpace(a.InToto.Type) == "" {
				errs = append(errs, field.Required(ap.Child("intoto", "type"), "the predicate type is required"))
			}
		case a.Referrer != nil:
			if strings.TrimSpace(a.Referrer.Type) == "" {
				errs = append(errs, field.Required(ap.Child("referrer", "type"), "the artifact type is required"))
			}
		default:
			errs = append(errs, field.Required(ap, "one of intoto and referrer is required"))
		}
		v.attestations[a.Name] = a
		v.attestationNames[a.Name] = a.Name
	}
	return errs
}
