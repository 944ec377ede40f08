package engine

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/jmespath"
)

// Option configures an Engine.
type Option func(*config) error

type config struct {
	now              func() time.Time
	jpOpts           []jmespath.Option
	configMaps       ConfigMapResolver
	apiClient        APIClient
	services         ServiceCaller
	registry         RegistryClient
	namespaces       NamespaceLabeler
	globalContext    GlobalContext
	contextValues    ContextValues
	skipUnconfigured bool
	exceptions       ExceptionSource
	defaultRegistry  string
	registryMutation bool
	limits           Limits
	client           Client
	queue            UpdateRequestQueue
	authorizer       Authorizer
	// verifyImages (imageverifier.go)
	imageVerifier ImageVerifier
	verifyCache   ImageVerifyCacheOptions
	// celLibs are the hosts of the CEL libraries (celhosts.go)
	celLibs cel.Libraries
	// ivpolNoMutation turns the digest pins of ImageValidatingPolicies
	// off (imagepolicydigest.go)
	ivpolNoMutation bool
	// timing sets PolicyResult.Duration (WithPolicyTiming)
	timing bool
	// filter leaves resources out (WithResourceFilter)
	filter func(kind schema.GroupVersionKind, subresource, namespace, name string) bool
}

// Limits bound evaluation. Zero fields take the defaults of DefaultLimits().
type Limits struct {
	// MaxForeachElements bounds the length of a foreach list.
	MaxForeachElements int
	// MaxForeachDepth bounds foreach nesting.
	MaxForeachDepth int
	// MaxContextBytes bounds the size of one context entry's value
	// (API responses, ConfigMaps) in bytes of JSON.
	MaxContextBytes int
	// MaxSubstitutionDepth bounds nested {{ }} expressions.
	MaxSubstitutionDepth int
	// MaxJMESPathResultBytes bounds the values a JMESPath expression
	// builds, in bytes of JSON (see jmespath.WithMaxResultSize); an
	// expression over it gives an error result.
	MaxJMESPathResultBytes int
	// HostCallTimeout bounds each call a context entry makes to a host
	// interface (ConfigMaps, API calls, services, registries, global
	// context); the request's context bounds them all.
	HostCallTimeout time.Duration
}

// DefaultLimits returns the limits used when none are set.
func DefaultLimits() Limits { return defaultLimits }

var defaultLimits = Limits{
	MaxForeachElements:     10000,
	MaxForeachDepth:        8,
	MaxContextBytes:        2 << 20,
	MaxSubstitutionDepth:   16,
	MaxJMESPathResultBytes: 8 << 20,
	HostCallTimeout:        10 * time.Second,
}

// WithPolicyTiming makes each PolicyResult carry the time its policy's
// rules took to evaluate (PolicyResult.Duration, read from the monotonic
// clock, not WithClock's), for a host's metrics. Without it Duration is
// zero and evaluation reads no clock for it.
func WithPolicyTiming() Option {
	return func(c *config) error {
		c.timing = true
		return nil
	}
}

// WithClock sets the clock used by time functions and reports.
func WithClock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return fmt.Errorf("WithClock: nil clock")
		}
		c.now = now
		c.jpOpts = append(c.jpOpts, jmespath.WithClock(now))
		return nil
	}
}

// WithJMESPathOptions passes options to the JMESPath interpreter (for
// instance jmespath.WithRandom for deterministic tests).
func WithJMESPathOptions(opts ...jmespath.Option) Option {
	return func(c *config) error { c.jpOpts = append(c.jpOpts, opts...); return nil }
}

// WithConfigMapResolver sets the source of configMap context entries.
func WithConfigMapResolver(r ConfigMapResolver) Option {
	return func(c *config) error { c.configMaps = r; return nil }
}

// WithAPIClient sets the Kubernetes API client of apiCall context entries.
func WithAPIClient(a APIClient) Option {
	return func(c *config) error { c.apiClient = a; return nil }
}

// WithServiceCaller sets the client of apiCall.service context entries.
func WithServiceCaller(s ServiceCaller) Option {
	return func(c *config) error { c.services = s; return nil }
}

// WithRegistryClient sets the client of imageRegistry context entries.
func WithRegistryClient(r RegistryClient) Option {
	return func(c *config) error { c.registry = r; return nil }
}

// WithNamespaceLabeler sets the source of namespace labels used by
// namespaceSelector when a Request carries none.
func WithNamespaceLabeler(n NamespaceLabeler) Option {
	return func(c *config) error { c.namespaces = n; return nil }
}

// WithGlobalContext sets the source of globalReference context entries.
func WithGlobalContext(g GlobalContext) Option {
	return func(c *config) error { c.globalContext = g; return nil }
}

// WithContextValues sets per-rule values that are added to the context of
// each rule before its entries load (the upstream CLI's values files).
// Entries whose host dependency is missing still make the rule an error
// unless WithUnconfiguredEntriesSkipped lets the values stand for them.
func WithContextValues(v ContextValues) Option {
	return func(c *config) error { c.contextValues = v; return nil }
}

// WithUnconfiguredEntriesSkipped makes context entries whose host
// dependency was not given (configMap without WithConfigMapResolver,
// apiCall without WithAPIClient or WithServiceCaller, imageRegistry
// without WithRegistryClient, globalReference without WithGlobalContext)
// load nothing, as in the upstream CLI, where values files
// (WithContextValues) stand in for them: a rule reading such an entry then
// sees its value from ContextValues or an unresolved variable. Without
// this option such an entry makes the rule an error result whose Err
// wraps ErrNotConfigured and names the missing dependency.
func WithUnconfiguredEntriesSkipped() Option {
	return func(c *config) error { c.skipUnconfigured = true; return nil }
}

// WithExceptions enables PolicyExceptions from the given source (a
// compiled *exceptions.Set, or a host's ExceptionSource). Without it no
// exception applies.
func WithExceptions(src ExceptionSource) Option {
	return func(c *config) error { c.exceptions = src; return nil }
}

// WithDefaultRegistry sets the registry assumed for images without one
// (default "docker.io") and whether references are rewritten with it
// (default true), as upstream's defaultRegistry and
// enableDefaultRegistryMutation settings.
func WithDefaultRegistry(registry string, mutate bool) Option {
	return func(c *config) error {
		if registry == "" {
			return fmt.Errorf("WithDefaultRegistry: empty registry")
		}
		c.defaultRegistry, c.registryMutation = registry, mutate
		c.jpOpts = append(c.jpOpts, jmespath.WithDefaultRegistry(registry, mutate))
		return nil
	}
}

// WithLimits sets evaluation bounds; zero fields keep their defaults.
func WithLimits(l Limits) Option {
	return func(c *config) error {
		if l.MaxForeachElements < 0 || l.MaxForeachDepth < 0 || l.MaxContextBytes < 0 || l.MaxSubstitutionDepth < 0 || l.MaxJMESPathResultBytes < 0 || l.HostCallTimeout < 0 {
			return fmt.Errorf("WithLimits: negative limit")
		}
		if l.MaxForeachElements > 0 {
			c.limits.MaxForeachElements = l.MaxForeachElements
		}
		if l.MaxForeachDepth > 0 {
			c.limits.MaxForeachDepth = l.MaxForeachDepth
		}
		if l.MaxContextBytes > 0 {
			c.limits.MaxContextBytes = l.MaxContextBytes
		}
		if l.MaxSubstitutionDepth > 0 {
			c.limits.MaxSubstitutionDepth = l.MaxSubstitutionDepth
		}
		if l.MaxJMESPathResultBytes > 0 {
			c.limits.MaxJMESPathResultBytes = l.MaxJMESPathResultBytes
		}
		if l.HostCallTimeout > 0 {
			c.limits.HostCallTimeout = l.HostCallTimeout
		}
		return nil
	}
}

// WithClient sets the cluster client used by generate rules and by
// mutate-existing targets.
func WithClient(c Client) Option {
	return func(cfg *config) error { cfg.client = c; return nil }
}

// WithUpdateRequestQueue sets where generate and mutate-existing requests
// are queued at admission.
func WithUpdateRequestQueue(q UpdateRequestQueue) Option {
	return func(cfg *config) error { cfg.queue = q; return nil }
}

// ErrLimitExceeded is matched (errors.Is) by the errors of evaluations
// stopped by one of the Limits; they are *LimitError values.
var ErrLimitExceeded = errors.New("engine limit exceeded")

// LimitError reports an evaluation stopped by one of the Limits. Results
// carry it in RuleResult.Err.
type LimitError struct {
	// Limit is the name of the Limits field, e.g. "MaxForeachElements".
	Limit string
	msg   string
	err   error
}

// Error implements error.
func (e *LimitError) Error() string { return e.msg }

// Is makes LimitError match ErrLimitExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// Unwrap returns the underlying error (jmespath.ErrTooLarge for
// MaxJMESPathResultBytes, context.DeadlineExceeded for HostCallTimeout),
// if any.
func (e *LimitError) Unwrap() error { return e.err }

// foreachLimit is the error of a foreach list longer than the limit.
func (e *Engine) foreachLimit(list string, n int) *LimitError {
	return &LimitError{Limit: "MaxForeachElements",
		msg: fmt.Sprintf("list %s has %d elements, more than the limit of %d", list, n, e.cfg.limits.MaxForeachElements)}
}

// resultErr is the Err of an error result with cause err: JMESPath's size
// errors are marked as the MaxJMESPathResultBytes limit.
func resultErr(err error) error {
	if err != nil && errors.Is(err, jmespath.ErrTooLarge) && !errors.Is(err, ErrLimitExceeded) {
		return &LimitError{Limit: "MaxJMESPathResultBytes", msg: err.Error(), err: err}
	}
	return err
}
