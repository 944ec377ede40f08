package cel

import (
	"io"
	"time"

	icel "github.com/gavelpolicy/gavel/internal/cel"
)

// Libraries is the host side of Kyverno's CEL libraries. It is read,
// never modified, and may serve concurrent requests when its hosts are
// safe for concurrent use. A nil host makes its library's functions fail
// with an error matching ErrNotConfigured, unless the engine has a host of
// its own for it (engine.WithCELLibraries).
type Libraries struct {
	Resource      ResourceClient
	HTTP          HTTPClient
	ImageData     ImageDataClient
	GlobalContext GlobalContextReader
	// Now is the clock of time.now(); nil means the engine's clock.
	Now func() time.Time
	// Random is the randomness of random(); nil means crypto/rand. It
	// must be safe for concurrent use.
	Random io.Reader
	// HostCallTimeout bounds each call to a host; 0 means the engine's
	// Limits.HostCallTimeout.
	HostCallTimeout time.Duration
	// AllowHTTPInNamespacedPolicies lets namespaced policies call http
	// (upstream refuses them by default).
	AllowHTTPInNamespacedPolicies bool
}

// Host interfaces of the libraries.
type (
	// ResourceClient reads and creates cluster objects by API version and
	// resource (plural name) for the resource library; a missing object
	// is (nil, nil).
	ResourceClient = icel.ResourceClient
	// HTTPClient sends the http library's requests.
	HTTPClient = icel.HTTPClient
	// HTTPRequest is one request of the http library.
	HTTPRequest = icel.HTTPRequest
	// HTTPResponse is the status code and body of a request.
	HTTPResponse = icel.HTTPResponse
	// ImageDataClient reads image metadata for image.GetMetadata.
	ImageDataClient = icel.ImageDataClient
	// GlobalContextReader reads GlobalContextEntries' data for
	// globalContext.Get; a missing entry is (nil, nil).
	GlobalContextReader = icel.GlobalContextReader
	// UserInfo is the requesting user of an authorization check
	// (engine.AuthorizationCheck), as the authorizer variable sees it.
	UserInfo = icel.UserInfo
)

// ErrNotConfigured is matched (errors.Is) by the error of a library
// function whose host the Libraries do not have.
var ErrNotConfigured = icel.ErrNotConfigured

// ErrHTTPInNamespacedPolicy is matched (errors.Is) by the error of an
// http call from a namespaced policy when the Libraries do not allow them
// (AllowHTTPInNamespacedPolicies).
var ErrHTTPInNamespacedPolicy = icel.ErrHTTPInNamespacedPolicy
