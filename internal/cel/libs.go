package cel

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/generator"
	"github.com/gavelpolicy/gavel/internal/cellib/globalcontext"
	"github.com/gavelpolicy/gavel/internal/cellib/gzip"
	"github.com/gavelpolicy/gavel/internal/cellib/hash"
	"github.com/gavelpolicy/gavel/internal/cellib/http"
	"github.com/gavelpolicy/gavel/internal/cellib/image"
	"github.com/gavelpolicy/gavel/internal/cellib/imagedata"
	"github.com/gavelpolicy/gavel/internal/cellib/imageverify"
	"github.com/gavelpolicy/gavel/internal/cellib/json"
	"github.com/gavelpolicy/gavel/internal/cellib/math"
	"github.com/gavelpolicy/gavel/internal/cellib/random"
	"github.com/gavelpolicy/gavel/internal/cellib/resource"
	celtime "github.com/gavelpolicy/gavel/internal/cellib/time"
	"github.com/gavelpolicy/gavel/internal/cellib/transform"
	"github.com/gavelpolicy/gavel/internal/cellib/user"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
	"github.com/gavelpolicy/gavel/internal/cellib/x509"
	"github.com/gavelpolicy/gavel/internal/cellib/yaml"
)

// LibrarySet is a set of Kyverno's CEL libraries, which upstream adds to
// the environment of its CEL policy types (ValidatingPolicy and its
// siblings, not the validate.cel rules of ClusterPolicies). Each library
// has upstream's names, overloads, types and results; see WithLibraries.
type LibrarySet uint32

// Kyverno's CEL libraries.
const (
	// ResourceLibrary: resource.Get, List, Post, ToGVR (and camelCase
	// names) through Libraries.Resource.
	ResourceLibrary LibrarySet = 1 << iota
	// HTTPLibrary: http.Get, Post, Client through Libraries.HTTP.
	HTTPLibrary
	// ImageLibrary: parseImageReference (image), isImage and the
	// methods of parsed references.
	ImageLibrary
	// ImageDataLibrary: image.GetMetadata through Libraries.ImageData.
	ImageDataLibrary
	// GlobalContextLibrary: globalContext.Get through
	// Libraries.GlobalContext.
	GlobalContextLibrary
	// UserLibrary: parseServiceAccount.
	UserLibrary
	// JSONLibrary: json.unmarshal, json.marshal.
	JSONLibrary
	// YAMLLibrary: yaml.parse.
	YAMLLibrary
	// X509Library: x509.decode.
	X509Library
	// HashLibrary: md5, sha1, sha256.
	HashLibrary
	// MathLibrary: math.round(double, int).
	MathLibrary
	// TimeLibrary: time.now (Libraries.Now), time.truncate, time.toCron.
	TimeLibrary
	// RandomLibrary: random (Libraries.Random).
	RandomLibrary
	// GzipLibrary: gzip.compress, gzip.decompress.
	GzipLibrary
	// TransformLibrary: listObjToMap.
	TransformLibrary
	// GeneratorLibrary: generator.Apply through Libraries.Generator.
	GeneratorLibrary
	// ImageVerifyLibrary: verifyImageSignatures,
	// verifyAttestationSignatures, extractPayload and getImageData
	// through Libraries.ImageVerify (ImageValidatingPolicy).
	ImageVerifyLibrary
	// ExtensionLibraries are cel-go's extensions that upstream's
	// environment has and Kubernetes' does not: cel.bind, base64,
	// math.*, regex.* and proto.
	ExtensionLibraries
)

// The libraries of each CEL policy type, as upstream gives them.
const (
	ValidatingPolicyLibraries = ExtensionLibraries | ResourceLibrary | HTTPLibrary | ImageLibrary |
		ImageDataLibrary | GlobalContextLibrary | UserLibrary | JSONLibrary | YAMLLibrary | X509Library |
		HashLibrary | MathLibrary | TimeLibrary | RandomLibrary | GzipLibrary | TransformLibrary
	MutatingPolicyLibraries        = ValidatingPolicyLibraries
	ImageValidatingPolicyLibraries = ValidatingPolicyLibraries&^X509Library | ImageVerifyLibrary
	GeneratingPolicyLibraries      = ValidatingPolicyLibraries&^UserLibrary | GeneratorLibrary
	DeletingPolicyLibraries        = ValidatingPolicyLibraries &^ UserLibrary
)

// boundLibraries are the libraries with functions of boundCalls, which a
// decorator binds to each evaluation.
const boundLibraries = TimeLibrary | RandomLibrary | ImageVerifyLibrary

// WithLibraries adds Kyverno's CEL libraries of set to every environment
// of the Env, at upstream's latest version (1.18: PascalCase and
// camelCase names). Their declarations are checked at compilation (an
// unknown function or a wrong number of arguments is a CompileError); the
// host side of the I/O libraries, the clock and the randomness are bound
// per evaluation (Input.Libraries), and the policy's namespace per
// Compiler (InNamespace). Programs stay immutable and shareable.
func WithLibraries(set LibrarySet) EnvOption {
	return func(c *envConfig) error {
		if set >= ExtensionLibraries<<1 {
			return fmt.Errorf("cel: unknown libraries in set %#x", uint32(set))
		}
		c.libs |= set
		return nil
	}
}

// libraryOptions declares the libraries of set; namespaced selects the
// resource library's overloads of namespaced policies.
func libraryOptions(set LibrarySet, namespaced bool) []cel.EnvOption {
	v := versions.Latest()
	var opts []cel.EnvOption
	if set&ExtensionLibraries != 0 {
		opts = append(opts, ext.Bindings(), ext.Encoders(), ext.Math(), ext.Protos(), ext.Regex(ext.RegexVersion(1)))
	}
	libs := []struct {
		lib LibrarySet
		opt func() cel.EnvOption
	}{
		{GeneratorLibrary, func() cel.EnvOption { return generator.Lib(v) }},
		{GlobalContextLibrary, func() cel.EnvOption { return globalcontext.Lib(v) }},
		{ResourceLibrary, func() cel.EnvOption { return resource.Lib(namespaced, v) }},
		{ImageLibrary, image.Lib},
		{ImageDataLibrary, func() cel.EnvOption { return imagedata.Lib(v) }},
		{UserLibrary, func() cel.EnvOption { return user.Lib(v) }},
		{HashLibrary, func() cel.EnvOption { return hash.Lib(v) }},
		{MathLibrary, math.Lib},
		{JSONLibrary, json.Lib},
		{YAMLLibrary, yaml.Lib},
		{RandomLibrary, func() cel.EnvOption { return random.Lib(v) }},
		{X509Library, x509.Lib},
		{TimeLibrary, celtime.Lib},
		{TransformLibrary, func() cel.EnvOption { return transform.Lib(v) }},
		{GzipLibrary, gzip.Lib},
		{HTTPLibrary, func() cel.EnvOption { return http.Lib(v) }},
		{ImageVerifyLibrary, imageverify.Lib},
	}
	for _, l := range libs {
		if set&l.lib != 0 {
			opts = append(opts, l.opt())
		}
	}
	return opts
}

// Host interfaces of the libraries, which Libraries holds. They are
// declared by the libraries (aliases here).
type (
	// ResourceClient reads and creates cluster objects by API version and
	// resource (plural name) for the resource library; a missing object
	// is (nil, nil).
	ResourceClient = resource.Client
	// HTTPClient sends the http library's requests.
	HTTPClient = http.Client
	// HTTPRequest is one request of the http library.
	HTTPRequest = http.Request
	// HTTPResponse is the status code and body of a request.
	HTTPResponse = http.Response
	// ImageDataClient reads image metadata for image.GetMetadata.
	ImageDataClient = imagedata.Client
	// GlobalContextReader reads GlobalContextEntries' data for
	// globalContext.Get; a missing entry is (nil, nil).
	GlobalContextReader = globalcontext.Reader
	// Generator generates the objects of generator.Apply.
	Generator = generator.Generator
	// ImageVerifier answers the image verification functions of one
	// ImageValidatingPolicy evaluation.
	ImageVerifier = imageverify.Host
	// ImageAttestor is the value of attestors.NAME in an
	// ImageValidatingPolicy: an attestor with its expressions evaluated.
	ImageAttestor = imageverify.Attestor
)

// ErrNotConfigured is matched (errors.Is) by the error of a library
// function whose host the Input's Libraries do not have.
var ErrNotConfigured = errors.New("not configured")

// ErrHTTPInNamespacedPolicy is matched (errors.Is) by the error of an
// http call from a namespaced policy (InNamespace) when the Libraries do
// not allow them (AllowHTTPInNamespacedPolicies).
var ErrHTTPInNamespacedPolicy = http.ErrNamespaced

// Libraries is the host side of Kyverno's CEL libraries, bound to an
// Input: it is read, never modified, and may serve concurrent Inputs when
// its hosts are safe for concurrent use. A nil host makes its library's
// functions fail with an error matching ErrNotConfigured.
type Libraries struct {
	Resource      ResourceClient
	HTTP          HTTPClient
	ImageData     ImageDataClient
	GlobalContext GlobalContextReader
	// Generator is the host of one GeneratingPolicy evaluation (it knows
	// the policy and the trigger).
	Generator Generator
	// ImageVerify is the host of one ImageValidatingPolicy evaluation
	// (it knows the policy and the request).
	ImageVerify ImageVerifier
	// Now is the clock of time.now(); nil means time.Now.
	Now func() time.Time
	// Random is the randomness of random(); nil means crypto/rand. It
	// must be safe for concurrent use when the Libraries are shared.
	Random io.Reader
	// HostCallTimeout bounds each call to a host; 0 leaves the bound to
	// the evaluation's context.
	HostCallTimeout time.Duration
	// AllowHTTPInNamespacedPolicies lets namespaced policies call http
	// (upstream refuses them by default).
	AllowHTTPInNamespacedPolicies bool
}

// libsVar is the name under which an activation gives the library
// bindings to the calls that read the clock and randomness (not a CEL
// identifier: no expression can name it).
const libsVar = "@gavel.libraries"

// libBinding binds the libraries for one Evaluation: the values of the
// library variables, made on first use.
type libBinding struct {
	ctx       context.Context
	libs      *Libraries
	namespace string
	objects   types.Adapter
	resource  *resource.Context
	http      *http.Context
	imagedata *imagedata.Context
	gctx      *globalcontext.Context
	generator *generator.Context
}

var noLibraries = &Libraries{}

func (b *libBinding) scope() call.Scope {
	return call.Scope{Ctx: b.ctx, Timeout: b.libs.HostCallTimeout, Namespace: b.namespace, Objects: b.objects}
}

// resolve returns the value of a library variable.
func (b *libBinding) resolve(name string) (any, bool) {
	if b.libs == nil {
		b.libs = noLibraries
	}
	switch name {
	case resource.VarName:
		if b.resource == nil {
			var c ResourceClient = unconfigured("resource")
			if b.libs.Resource != nil {
				c = b.libs.Resource
			}
			b.resource = &resource.Context{Client: c, Scope: b.scope()}
		}
		return b.resource, true
	case http.VarName:
		if b.http == nil {
			var c HTTPClient = unconfigured("http")
			if b.libs.HTTP != nil {
				c = b.libs.HTTP
			}
			b.http = &http.Context{Client: c, Scope: b.scope(), AllowNamespaced: b.libs.AllowHTTPInNamespacedPolicies}
		}
		return b.http, true
	case imagedata.VarName:
		if b.imagedata == nil {
			var c ImageDataClient = unconfigured("imagedata")
			if b.libs.ImageData != nil {
				c = b.libs.ImageData
			}
			b.imagedata = &imagedata.Context{Client: c, Scope: b.scope()}
		}
		return b.imagedata, true
	case globalcontext.VarName:
		if b.gctx == nil {
			var r GlobalContextReader = unconfigured("globalcontext")
			if b.libs.GlobalContext != nil {
				r = b.libs.GlobalContext
			}
			b.gctx = &globalcontext.Context{Reader: r, Scope: b.scope()}
		}
		return b.gctx, true
	case generator.VarName:
		if b.generator == nil {
			var g Generator = unconfigured("generator")
			if b.libs.Generator != nil {
				g = b.libs.Generator
			}
			b.generator = &generator.Context{Generator: g, Scope: b.scope()}
		}
		return b.generator, true
	case json.VarName:
		return json.Value(), true
	case yaml.VarName:
		return yaml.Value(), true
	case libsVar:
		return b, true
	}
	return nil, false
}

func (b *libBinding) now() time.Time {
	if b != nil && b.libs != nil && b.libs.Now != nil {
		return b.libs.Now()
	}
	return time.Now()
}

func (b *libBinding) random() io.Reader {
	if b != nil && b.libs != nil && b.libs.Random != nil {
		return b.libs.Random
	}
	return crand.Reader
}

// unconfigured is the host of a library the Libraries do not have.
type unconfigured string

func (u unconfigured) err() error { return fmt.Errorf("%s library: %w", string(u), ErrNotConfigured) }

func (u unconfigured) GetResource(context.Context, string, string, string, string) (map[string]any, error) {
	return nil, u.err()
}

func (u unconfigured) ListResources(context.Context, string, string, string, map[string]string) (map[string]any, error) {
	return nil, u.err()
}

func (u unconfigured) PostResource(context.Context, string, string, string, map[string]any) (map[string]any, error) {
	return nil, u.err()
}

func (u unconfigured) ToGVR(context.Context, string, string) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{}, u.err()
}

func (u unconfigured) Do(context.Context, HTTPRequest) (HTTPResponse, error) {
	return HTTPResponse{}, u.err()
}

func (u unconfigured) ImageMetadata(context.Context, string) (map[string]any, error) {
	return nil, u.err()
}

func (u unconfigured) GlobalReference(context.Context, string, string) (any, error) {
	return nil, u.err()
}

func (u unconfigured) GenerateResources(context.Context, string, []map[string]any) error {
	return u.err()
}

// boundCalls are the functions whose value depends on the evaluation's
// clock or randomness, by overload id: the programs' calls to them are
// replaced (libraryDecorator) by calls that read the Evaluation's
// Libraries.
var boundCalls = map[string]func(b *libBinding, args []ref.Val) ref.Val{
	celtime.NowOverload: func(b *libBinding, _ []ref.Val) ref.Val { return celtime.Now(b.now) },
	random.PatternOverload: func(b *libBinding, args []ref.Val) ref.Val {
		return random.Pattern(b.random(), args[0])
	},
	random.PrefixedPatternOverload: func(b *libBinding, args []ref.Val) ref.Val {
		return random.Pattern(b.random(), args[0])
	},
	random.DefaultOverload: func(b *libBinding, _ []ref.Val) ref.Val {
		return random.Generate(b.random(), random.DefaultPattern)
	},
	random.PrefixedDefaultOverload: func(b *libBinding, _ []ref.Val) ref.Val {
		return random.Generate(b.random(), random.DefaultPattern)
	},
	imageverify.VerifySignaturesOverload:   imageVerifyCall(imageverify.VerifySignaturesOverload),
	imageverify.VerifyAttestationsOverload: imageVerifyCall(imageverify.VerifyAttestationsOverload),
	imageverify.ImageDataOverload:          imageVerifyCall(imageverify.ImageDataOverload),
	imageverify.PayloadOverload:            imageVerifyCall(imageverify.PayloadOverload),
}

// imageVerifyCall binds a function of the image verification library to
// the evaluation's ImageVerify host.
func imageVerifyCall(id string) func(b *libBinding, args []ref.Val) ref.Val {
	return func(b *libBinding, args []ref.Val) ref.Val {
		var h ImageVerifier
		var s call.Scope
		if b != nil {
			if b.libs == nil {
				b.libs = noLibraries
			}
			s, h = b.scope(), b.libs.ImageVerify
		}
		if h == nil {
			return types.WrapErr(unconfigured("imageverify").err())
		}
		v, _ := imageverify.Call(id, s, h, args)
		return v
	}
}

// constantVars are the library variables whose value is the same in
// every Evaluation (their functions are pure): reading them does not keep
// a variable from being shared (see Scope). The other libraries'
// variables do I/O through the Evaluation's hosts.
var constantVars = [...]struct {
	lib  LibrarySet
	name string
}{{JSONLibrary, json.VarName}, {YAMLLibrary, yaml.VarName}}

// callsBound tells whether a checked expression calls a library function
// bound to the Evaluation (boundCalls: the clock, randomness, image
// verification).
func callsBound(a *cel.Ast) bool {
	for _, r := range a.NativeRep().ReferenceMap() {
		for _, id := range r.OverloadIDs {
			if boundCalls[id] != nil {
				return true
			}
		}
	}
	return false
}
