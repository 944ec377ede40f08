package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/gavelpolicy/gavel/internal/cellib/call"
	"github.com/gavelpolicy/gavel/internal/cellib/versions"
)

const libraryName = "kyverno.http"

// Lib declares the library at version v (versions.Latest).
func Lib(v *version.Version) cel.EnvOption { return cel.Lib(&lib{version: v}) }

type lib struct{ version *version.Version }

func (*lib) LibraryName() string { return libraryName }

func (*lib) ProgramOptions() []cel.ProgramOption { return nil }

var headersType = types.NewMapType(types.StringType, types.StringType)

func (l *lib) CompileOptions() []cel.EnvOption {
	opts := []cel.EnvOption{cel.Variable(VarName, ContextType)}
	names := []string{"Get", "Post", "Client"}
	for _, name := range names {
		opts = append(opts, cel.Function(name, overloads(name, "pascal")...))
		if versions.HasCamelCase(l.version) {
			camel := string(name[0]+'a'-'A') + name[1:]
			opts = append(opts, cel.Function(camel, overloads(name, "camel")...))
		}
	}
	return opts
}

func overloads(name, suffix string) []cel.FunctionOpt {
	s, a := types.StringType, types.AnyType
	id := func(base string) string { return fmt.Sprintf("%s_%s", base, suffix) }
	switch name {
	case "Get":
		return []cel.FunctionOpt{
			cel.MemberOverload(id("http_get_string"), []*cel.Type{ContextType, s}, a, cel.FunctionBinding(get)),
			cel.MemberOverload(id("http_get_string_headers"), []*cel.Type{ContextType, s, headersType}, a, cel.FunctionBinding(get)),
		}
	case "Post":
		return []cel.FunctionOpt{
			cel.MemberOverload(id("http_post_string_any"), []*cel.Type{ContextType, s, a}, a, cel.FunctionBinding(post)),
			cel.MemberOverload(id("http_post_string_any_headers"), []*cel.Type{ContextType, s, a, headersType}, a, cel.FunctionBinding(post)),
		}
	}
	return []cel.FunctionOpt{
		cel.MemberOverload(id("http_client_string"), []*cel.Type{ContextType, s}, ContextType, cel.BinaryBinding(client)),
	}
}

// get is http.Get(url[, headers]).
func get(args ...ref.Val) ref.Val {
	if len(args) != 2 && len(args) != 3 {
		return types.NewErr("expected 3 arguments, got %d", len(args))
	}
	self, bad := call.Arg[*Context](args, 0)
	if bad != nil {
		return bad
	}
	url, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	headers := map[string]string{}
	if len(args) == 3 {
		if headers, bad = call.Arg[map[string]string](args, 2); bad != nil {
			return bad
		}
	}
	return self.respond(Request{Method: http.MethodGet, URL: url, Headers: headers})
}

// post is http.Post(url, data[, headers]).
func post(args ...ref.Val) ref.Val {
	if len(args) != 3 && len(args) != 4 {
		return types.NewErr("expected 4 arguments, got %d", len(args))
	}
	self, bad := call.Arg[*Context](args, 0)
	if bad != nil {
		return bad
	}
	url, bad := call.Arg[string](args, 1)
	if bad != nil {
		return bad
	}
	data, bad := call.JSONValue(args, 2)
	if bad != nil {
		return bad
	}
	headers := map[string]string{}
	if len(args) == 4 {
		if headers, bad = call.Arg[map[string]string](args, 3); bad != nil {
			return bad
		}
	}
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(data); err != nil {
		return types.NewErr("request failed: failed to encode request data: failed to encode HTTP POST data %v: %w", data, err)
	}
	return self.respond(Request{Method: http.MethodPost, URL: url, Headers: headers, Body: body.Bytes()})
}

// respond sends req and shapes its response as upstream does.
func (c *Context) respond(req Request) ref.Val {
	resp, err := c.do(req)
	if err != nil {
		return types.NewErr("request failed: %w", err)
	}
	var body any
	if err := json.NewDecoder(bytes.NewReader(resp.Body)).Decode(&body); err != nil {
		body = nil
	}
	if m, ok := body.(map[string]any); ok {
		m["statusCode"] = resp.StatusCode
		return types.DefaultTypeAdapter.NativeToValue(m)
	}
	return types.DefaultTypeAdapter.NativeToValue(map[string]any{"body": body, "statusCode": resp.StatusCode})
}

// client is http.Client(caBundle).
func client(self, caBundle ref.Val) ref.Val {
	c, err := call.Native[*Context](self)
	if err != nil {
		return types.NewErr("invalid arg %d: %v", 0, err)
	}
	bundle, err := call.Native[string](caBundle)
	if err != nil {
		return types.NewErr("invalid arg %d: %v", 1, err)
	}
	out, err := c.WithCABundle(bundle)
	if err != nil {
		return types.NewErr("request failed: %w", err)
	}
	return out
}
