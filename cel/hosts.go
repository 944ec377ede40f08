package cel

import icel "github.com/gavelpolicy/gavel/internal/cel"

// Libraries is the host side of Kyverno's CEL libraries: one host per
// library (Resource, HTTP, ImageData, GlobalContext), the clock of
// time.now() (Now, nil for time.Now), the randomness of random() (Random,
// nil for crypto/rand), a bound on each host call (HostCallTimeout) and
// whether namespaced policies may call http
// (AllowHTTPInNamespacedPolicies, upstream refuses them by default). It
// is read, never modified, and may serve concurrent requests when its
// hosts are safe for concurrent use. The engine sets the Generator and
// ImageVerify hosts itself, per evaluation.
type Libraries = icel.Libraries

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
