// Package image is Kyverno's image library: parseImageReference (and its
// deprecated alias image) parses an image reference with
// go-containerregistry's name package into a kyverno.image value, whose
// registry(), repository(), identifier(), tag(), digest() and
// containsDigest() read its parts; isImage tells whether a string parses.
package image

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/go-containerregistry/pkg/name"
)

// ImageType is the type of parsed references.
var ImageType = types.NewOpaqueType("kyverno.image")

// Image is a parsed reference.
type Image struct{ Reference name.Reference }

// ConvertToNative converts to name.Reference and to the reference's
// string.
func (v Image) ConvertToNative(typeDesc reflect.Type) (any, error) {
	if reflect.TypeOf(v.Reference).AssignableTo(typeDesc) {
		return v.Reference, nil
	}
	if reflect.TypeOf("").AssignableTo(typeDesc) {
		return v.Reference.String(), nil
	}
	return nil, fmt.Errorf("type conversion error from 'Image' to '%v'", typeDesc)
}

// ConvertToType converts to the value's own type only.
func (v Image) ConvertToType(typeVal ref.Type) ref.Val {
	switch typeVal {
	case ImageType:
		return v
	case types.TypeType:
		return ImageType
	}
	return types.NewErr("type conversion error from '%s' to '%s'", ImageType, typeVal)
}

// Equal compares the parsed references.
func (v Image) Equal(other ref.Val) ref.Val {
	img, ok := other.(Image)
	if !ok {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(reflect.DeepEqual(v.Reference, img.Reference))
}

// Type returns ImageType.
func (v Image) Type() ref.Type { return ImageType }

// Value returns the name.Reference.
func (v Image) Value() any { return v.Reference }

const libraryName = "kyverno.image"

// Lib declares the library (it has no versions).
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	member := func(fn, id string, out *cel.Type, impl func(name.Reference) ref.Val) cel.EnvOption {
		return cel.Function(fn, cel.MemberOverload(id, []*cel.Type{ImageType}, out, cel.UnaryBinding(func(arg ref.Val) ref.Val {
			r, ok := arg.Value().(name.Reference)
			if !ok {
				return types.MaybeNoSuchOverloadErr(arg)
			}
			return impl(r)
		})))
	}
	return []cel.EnvOption{
		// deprecated upstream in favour of parseImageReference
		cel.Function("image", cel.Overload("string_to_image_deprecated", []*cel.Type{cel.StringType}, ImageType, cel.UnaryBinding(parse))),
		cel.Function("parseImageReference", cel.Overload("string_to_image", []*cel.Type{cel.StringType}, ImageType, cel.UnaryBinding(parse))),
		cel.Function("isImage", cel.Overload("is_image_string", []*cel.Type{cel.StringType}, cel.BoolType, cel.UnaryBinding(isImage))),
		member("containsDigest", "image_contains_digest", cel.BoolType, func(r name.Reference) ref.Val {
			d, ok := r.(name.Digest)
			return types.Bool(ok && d.DigestStr() != "")
		}),
		member("registry", "image_registry", cel.StringType, func(r name.Reference) ref.Val {
			return types.String(r.Context().RegistryStr())
		}),
		member("repository", "image_repository", cel.StringType, func(r name.Reference) ref.Val {
			return types.String(r.Context().RepositoryStr())
		}),
		member("identifier", "image_identifier", cel.StringType, func(r name.Reference) ref.Val {
			return types.String(r.Identifier())
		}),
		member("tag", "image_tag", cel.StringType, func(r name.Reference) ref.Val {
			if t, ok := r.(name.Tag); ok {
				return types.String(t.TagStr())
			}
			return types.String("")
		}),
		member("digest", "image_digest", cel.StringType, func(r name.Reference) ref.Val {
			if d, ok := r.(name.Digest); ok {
				return types.String(d.DigestStr())
			}
			return types.String("")
		}),
	}
}

func parse(arg ref.Val) ref.Val {
	s, ok := arg.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	r, err := name.ParseReference(s)
	if err != nil {
		return types.WrapErr(err)
	}
	return Image{r}
}

func isImage(arg ref.Val) ref.Val {
	s, ok := arg.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg)
	}
	_, err := name.ParseReference(s)
	return types.Bool(err == nil)
}
