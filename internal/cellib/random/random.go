// Package random is Kyverno's random library: random() and random(
// pattern) (and random.random) generate a string that matches a regular
// expression ("[0-9a-z]{8}" without one), parsed with regexp/syntax and
// generated as upstream's generator does (see generate). The randomness
// is what the evaluation binds (package cel); this package's own
// bindings, used only without one, read crypto/rand.
package random

import (
	crand "crypto/rand"
	"io"
	"math/rand/v2"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

// DefaultPattern is the pattern of random().
const DefaultPattern = "[0-9a-z]{8}"

// Overload ids of the library's functions, whose bindings the evaluation
// replaces with its randomness: the pattern ones and the default ones.
const (
	PatternOverload         = "random_string_non_prefixed"
	DefaultOverload         = "random_string_default_expr_non_prefixed"
	PrefixedPatternOverload = "random_string_prefixed"
	PrefixedDefaultOverload = "random_string_default_expr_prefixed"
)

const libraryName = "kyverno.random"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	decl := func(suffix string) []cel.FunctionOpt {
		return []cel.FunctionOpt{
			cel.Overload("random_string_"+suffix, []*cel.Type{types.StringType}, types.StringType,
				cel.UnaryBinding(func(pattern ref.Val) ref.Val { return Pattern(crand.Reader, pattern) })),
			cel.Overload("random_string_default_expr_"+suffix, nil, types.StringType,
				cel.FunctionBinding(func(...ref.Val) ref.Val { return Generate(crand.Reader, DefaultPattern) })),
		}
	}
	opts := []cel.EnvOption{cel.Function("random", decl("non_prefixed")...)}
	if versions.HasCamelCase(l.version) {
		opts = append(opts, cel.Function("random.random", decl("prefixed")...))
	}
	return opts
}

// Pattern is random(pattern) on a source of randomness.
func Pattern(rnd io.Reader, pattern ref.Val) ref.Val {
	p, err := call.Native[string](pattern)
	if err != nil {
		return types.WrapErr(err)
	}
	return Generate(rnd, p)
}

// Generate returns a string matching pattern, drawn from rnd (32 bytes
// of it seed a ChaCha8 generator).
func Generate(rnd io.Reader, pattern string) ref.Val {
	var seed [32]byte
	if _, err := io.ReadFull(rnd, seed[:]); err != nil {
		return types.NewErr("random: reading randomness: %w", err)
	}
	s, err := generate(rand.New(rand.NewChaCha8(seed)), pattern)
	if err != nil {
		return types.WrapErr(err)
	}
	return types.String(s)
}
