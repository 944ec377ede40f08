// Package hash is Kyverno's hash library: md5, sha1 and sha256 (and
// hash.md5, hash.sha1, hash.sha256) of a string, as lowercase hex.
package hash

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	gohash "hash"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

const libraryName = "kyverno.hash"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

func (l *lib) CompileOptions() []cel.EnvOption {
	var opts []cel.EnvOption
	for _, h := range []struct {
		name string
		new  func() gohash.Hash
	}{{"sha1", sha1.New}, {"sha256", sha256.New}, {"md5", md5.New}} {
		fn := digest(h.new)
		decl := func(suffix string) cel.FunctionOpt {
			return cel.Overload(h.name+"_string_"+suffix, []*cel.Type{types.StringType}, types.StringType, cel.UnaryBinding(fn))
		}
		opts = append(opts, cel.Function(h.name, decl("non_prefixed")))
		if versions.HasCamelCase(l.version) {
			opts = append(opts, cel.Function("hash."+h.name, decl("prefixed")))
		}
	}
	return opts
}

func digest(newHash func() gohash.Hash) func(ref.Val) ref.Val {
	return func(arg ref.Val) ref.Val {
		s, err := call.Native[string](arg)
		if err != nil {
			return types.WrapErr(err)
		}
		h := newHash()
		h.Write([]byte(s))
		return types.String(hex.EncodeToString(h.Sum(nil)))
	}
}
