package celpolicy

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/images"
)

// ImageResource is a kind of resource whose images an ImageValidatingPolicy
// reads without an images entry of its own, as upstream picks them by the
// request's resource.
type ImageResource int

// Kinds of resources with images.
const (
	NoImages ImageResource = iota
	// PodImages: core v1 pods (spec.containers, ...).
	PodImages
	// PodTemplateImages: apps v1 deployments, statefulsets, daemonsets,
	// replicasets and batch v1 jobs (spec.template.spec.containers, ...).
	PodTemplateImages
	// CronJobImages: batch v1 cronjobs
	// (spec.jobTemplate.spec.template.spec.containers, ...).
	CronJobImages
)

// ImageResourceOf returns the kind of images of a resource (the plural).
func ImageResourceOf(group, version, resource string) ImageResource {
	if version != "v1" {
		return NoImages
	}
	switch group + "/" + resource {
	case "/pods":
		return PodImages
	case "apps/deployments", "apps/statefulsets", "apps/daemonsets", "apps/replicasets", "batch/jobs":
		return PodTemplateImages
	case "batch/cronjobs":
		return CronJobImages
	}
	return NoImages
}

// DefaultExtractors are upstream's image extractors of each ImageResource
// (containers, initContainers, ephemeralContainers), compiled once for the
// policies of an engine.
type DefaultExtractors struct {
	comp  *cel.Compiler
	progs [4][]extractorProg
}

// CompileDefaultExtractors compiles the default extractors on env.
func CompileDefaultExtractors(env *cel.Env) (*DefaultExtractors, error) {
	d := &DefaultExtractors{comp: env.NewCompiler(false)}
	paths := map[ImageResource]string{PodImages: "spec", PodTemplateImages: "spec.template.spec", CronJobImages: "spec.jobTemplate.spec.template.spec"}
	for _, r := range []ImageResource{PodImages, PodTemplateImages, CronJobImages} {
		for _, f := range []string{"containers", "initContainers", "ephemeralContainers"} {
			expr := "(object != null ? object : oldObject)." + paths[r] + ".?" + f + ".orValue([]).map(e, e.image)"
			p, err := d.comp.Compile(expr, cel.Variable)
			if err != nil {
				return nil, fmt.Errorf("image extractor %s: %w", f, err)
			}
			d.progs[r] = append(d.progs[r], extractorProg{name: f, prog: p})
		}
	}
	return d, nil
}

// ImageOutcome is the result of an ImageValidatingPolicy's body on a
// request.
type ImageOutcome struct {
	// Status is Pass, Fail, Error (a validation is not a bool) or
	// EvalError (what upstream reports as "failed to evaluate policy":
	// an expression that fails, images that cannot be read).
	Status  Status
	Message string
	// Index is the failing validation's position.
	Index int
	Err   error
	// AuditAnnotations are the audit annotations (Pass and Fail).
	AuditAnnotations map[string]string
	// Images are the images matchImageReferences selected, in the
	// order of the extractors (for validationConfigurations.required).
	Images []string
}

// Evaluate evaluates the body, once its matchConditions held and no
// exception applied, as upstream: the images of the extractors (defaults
// first) that matchImageReferences select, digests required when
// verifyDigest is set, then the validations in order and the audit
// annotations. The images, attestors and attestations variables are
// bound beside in.Extra's; in is not modified. s is the request's Scope
// (see cel.NewEvaluation), nil for none.
func (v *ImageValidating) Evaluate(ctx context.Context, in *cel.Input, s *cel.Scope, defaults *DefaultExtractors, res ImageResource) ImageOutcome {
	// the Evaluation reads extra when an expression reads one of its
	// variables: the images are there before the first one that may
	extra := make(map[string]any, len(in.Extra)+3)
	for k, x := range in.Extra {
		extra[k] = x
	}
	delete(extra, ImagesVar)
	delete(extra, AttestorsVar)
	delete(extra, AttestationsVar)
	bound := *in
	bound.Extra = extra
	ev := v.body.comp.NewEvaluation(ctx, &bound, s)
	images, list, err := v.images(ctx, &bound, s, ev, defaults, res)
	if err != nil {
		return ImageOutcome{Status: EvalError, Message: err.Error(), Err: err}
	}
	if v.verifyDigest {
		for _, img := range list {
			if byDigest(img) {
				continue
			}
			ref, err := ParseImageReference(img)
			if err != nil {
				err = fmt.Errorf("failed to parse image reference %s: %w", img, err)
				return ImageOutcome{Status: EvalError, Message: err.Error(), Err: err}
			}
			if _, ok := ref.(name.Digest); !ok {
				return ImageOutcome{Status: Fail, Message: fmt.Sprintf("image %s does not have a digest", img)}
			}
		}
	}
	extra[ImagesVar] = images
	extra[AttestationsVar] = v.attestationNames
	extra[AttestorsVar] = &attestorMap{v: v, ev: ev, vals: make([]ref.Val, len(v.attestors))}
	out := v.validate(ev)
	out.Images = list
	return out
}

// images evaluates the extractors: the images of each, those
// matchImageReferences select, by name, and all of them in order.
func (v *ImageValidating) images(ctx context.Context, in *cel.Input, s *cel.Scope, ev *cel.Evaluation, defaults *DefaultExtractors, res ImageResource) (map[string]any, []string, error) {
	byName := map[string]any{}
	var order []string
	var list []string
	addImages := func(name string, imgs []string) error {
		matched := make([]any, 0, len(imgs))
		for _, img := range imgs {
			ok, err := v.MatchImage(ctx, img)
			if err != nil {
				return err
			}
			if ok {
				matched = append(matched, img)
			}
		}
		if _, seen := byName[name]; !seen {
			order = append(order, name)
		}
		byName[name] = matched
		return nil
	}
	add := func(name string, val ref.Val) error {
		imgs, err := native[[]string](val)
		if err != nil {
			return err
		}
		return addImages(name, imgs)
	}
	if defaults != nil && res != NoImages {
		if native, ok := defaultImages(in, res); ok {
			for i, x := range defaults.progs[res] {
				if err := addImages(x.name, native[i]); err != nil {
					return nil, nil, err
				}
			}
		} else {
			dev := defaults.comp.NewEvaluation(ctx, in, s)
			for _, x := range defaults.progs[res] {
				val, err := dev.Eval(x.prog)
				if err != nil {
					return nil, nil, Cause(err)
				}
				if err := add(x.name, val); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	for _, x := range v.extractors {
		val, err := ev.Eval(x.prog)
		if err != nil {
			return nil, nil, Cause(err)
		}
		if err := add(x.name, val); err != nil {
			return nil, nil, err
		}
	}
	for _, n := range order {
		for _, img := range byName[n].([]any) {
			list = append(list, img.(string))
		}
	}
	return byName, list, nil
}

// imagesPaths are the paths of the Pod spec of each ImageResource.
var imagesPaths = [4][]string{PodImages: {"spec"}, PodTemplateImages: {"spec", "template", "spec"},
	CronJobImages: {"spec", "jobTemplate", "spec", "template", "spec"}}

// defaultImages reads the images of the default extractors (containers,
// initContainers, ephemeralContainers) from a well-formed object without
// CEL; ok is false for anything else (a missing field on the way, a
// container without a string image), which the extractors' expressions
// then evaluate, with their errors.
func defaultImages(in *cel.Input, res ImageResource) (out [3][]string, ok bool) {
	obj := in.Object
	if obj == nil {
		obj = in.OldObject
	}
	if obj == nil {
		return out, false
	}
	spec := obj
	for _, k := range imagesPaths[res] {
		if spec, ok = spec[k].(map[string]any); !ok {
			return out, false
		}
	}
	for i, f := range [3]string{"containers", "initContainers", "ephemeralContainers"} {
		v, present := spec[f]
		if !present {
			out[i] = []string{}
			continue
		}
		list, isList := v.([]any)
		if !isList {
			return out, false
		}
		out[i] = make([]string, len(list))
		for j, c := range list {
			m, isMap := c.(map[string]any)
			if !isMap {
				return out, false
			}
			if out[i][j], ok = m["image"].(string); !ok {
				return out, false
			}
		}
	}
	return out, true
}

// byDigest reports a well-formed reference with a sha256 digest, read
// with the engine's image parser (go-containerregistry's costs a few
// microseconds of regular expressions and URL parsing): anything else
// goes through ParseImageReference.
func byDigest(img string) bool {
	if !strings.Contains(img, "@sha256:") {
		return false
	}
	info, err := images.Parse(img, images.Config{DefaultRegistry: "docker.io"})
	if err != nil || len(info.Digest) != len("sha256:")+64 {
		return false
	}
	for _, c := range info.Digest[len("sha256:"):] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseImageReference is name.ParseReference, which tries a tag first: a
// reference with an '@' (never valid in a tag's reference) is read as a
// digest at once, which spares the tag's error (a malformed one keeps
// ParseReference's).
func ParseImageReference(s string, opts ...name.Option) (name.Reference, error) {
	if strings.Contains(s, "@") {
		if d, err := name.NewDigest(s, opts...); err == nil {
			return d, nil
		}
	}
	return name.ParseReference(s, opts...)
}

// native converts a CEL value to T.
func native[T any](v ref.Val) (T, error) {
	var zero T
	out, err := v.ConvertToNative(reflect.TypeFor[T]())
	if err != nil {
		return zero, err
	}
	t, ok := out.(T)
	if !ok {
		return zero, fmt.Errorf("type conversion error from '%s' to '%T'", v.Type().TypeName(), zero)
	}
	return t, nil
}

// validate evaluates the validations in order and the audit annotations,
// with upstream's ImageValidatingPolicy messages.
func (v *ImageValidating) validate(ev *cel.Evaluation) ImageOutcome {
	for i := range v.body.validations {
		x := &v.body.validations[i]
		val, err := ev.Eval(x.prog)
		if err != nil {
			err = Cause(err)
			return ImageOutcome{Status: EvalError, Message: err.Error(), Err: err}
		}
		b, isBool := val.(types.Bool)
		if !isBool {
			err := fmt.Errorf("type conversion error from '%s' to 'bool'", val.Type().TypeName())
			return ImageOutcome{Status: Error, Message: err.Error(), Index: i, Err: err}
		}
		if b {
			continue
		}
		msg := x.message
		if x.msgExpr != nil {
			mv, err := ev.Eval(x.msgExpr)
			switch s, isStr := mv.(types.String); {
			case err != nil:
				msg = fmt.Sprintf("failed to evaluate message expression: %s", Cause(err))
			case !isStr:
				msg = fmt.Sprintf("failed to convert message expression to string: type conversion error from '%s' to 'string'", mv.Type().TypeName())
			default:
				msg = string(s)
			}
		}
		if msg == "" {
			msg = fmt.Sprintf("CEL expression validation failed at index %d", i)
		}
		annotations, err := v.body.auditAnnotations(ev)
		if err != nil {
			return ImageOutcome{Status: EvalError, Message: err.Error(), Err: err}
		}
		return ImageOutcome{Status: Fail, Message: msg, Index: i, AuditAnnotations: annotations}
	}
	annotations, err := v.body.auditAnnotations(ev)
	if err != nil {
		return ImageOutcome{Status: EvalError, Message: err.Error(), Err: err}
	}
	return ImageOutcome{Status: Pass, AuditAnnotations: annotations}
}

// Match evaluates the matchConditions as upstream's ImageValidatingPolicy
// engine: an error is the outcome's under failurePolicy Fail (a cost
// limit or a cancellation always), a non-match under Ignore.
func (v *ImageValidating) Match(ctx context.Context, in *cel.Input, s *cel.Scope) (bool, error) {
	ok, err := v.body.conds.Eval(ctx, in, s)
	if err != nil {
		if v.body.ignore && !errors.Is(err, cel.ErrCostLimit) && ctx.Err() == nil {
			return false, nil
		}
		return false, err
	}
	return ok, nil
}
