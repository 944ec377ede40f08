// Package gzip is Kyverno's gzip library: gzip.compress(value) gzips a
// string into bytes (with a zero modification time, so that the output is
// deterministic) and gzip.decompress(bytes) gunzips bytes into a string,
// with compress/gzip as upstream. Unlike upstream, decompression stops
// with an error past MaxDecompressedBytes, so that a small input cannot
// exhaust memory.
package gzip

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
)

// MaxDecompressedBytes bounds the output of gzip.decompress.
const MaxDecompressedBytes = 32 << 20

const libraryName = "kyverno.gzip"

// Lib declares the library.
func Lib() cel.EnvOption { return cel.Lib(lib{}) }

type lib struct{}

func (lib) LibraryName() string { return libraryName }

func (lib) ProgramOptions() []cel.ProgramOption { return nil }

func (lib) CompileOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Function("gzip.decompress", cel.Overload("decompress_bytes_string", []*cel.Type{types.BytesType}, types.StringType, cel.UnaryBinding(decompress))),
		cel.Function("gzip.compress", cel.Overload("compress_any_bytes", []*cel.Type{types.DynType}, types.BytesType, cel.UnaryBinding(compress))),
	}
}

func decompress(arg ref.Val) ref.Val {
	data, err := call.Native[[]byte](arg)
	if err != nil {
		return types.WrapErr(err)
	}
	r, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return types.WrapErr(err)
	}
	defer r.Close() //nolint:errcheck // a reader of memory
	out, err := io.ReadAll(io.LimitReader(r, MaxDecompressedBytes+1))
	if err != nil {
		return types.WrapErr(err)
	}
	if len(out) > MaxDecompressedBytes {
		return types.WrapErr(fmt.Errorf("gzip.decompress: output larger than %d bytes", MaxDecompressedBytes))
	}
	return types.String(out)
}

func compress(arg ref.Val) ref.Val {
	s, err := call.Native[string](arg)
	if err != nil {
		return types.WrapErr(err)
	}
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.ModTime = time.Unix(0, 0)
	if _, err := w.Write([]byte(s)); err != nil {
		return types.WrapErr(err)
	}
	if err := w.Close(); err != nil {
		return types.WrapErr(err)
	}
	return types.Bytes(buf.Bytes())
}
