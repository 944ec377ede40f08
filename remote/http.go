package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gavelpolicy/gavel/cel"
)

// HTTP sends the requests of the CEL http library (http.Get, http.Post,
// http.Client(caBundle)) over the network, hardened as upstream's: URLs
// may be restricted to allowed prefixes, hosts may be blocked by name, and
// blocked address ranges are checked on every address a name resolves
// to, at connection time, on the address actually dialled (no DNS
// rebinding between the check and the connection), redirects included.
// It is safe for concurrent use.
type HTTP struct {
	timeout      time.Duration
	maxBytes     int64
	blockedCIDRs []*net.IPNet
	blockedHosts map[string]bool
	allowed      []*url.URL
	base         *http.Transport
	resolver     *net.Resolver

	mu sync.Mutex
	// clients by CA bundle ("" for the system's roots): each keeps its
	// connections; bounded by maxClients.
	clients map[string]*http.Client
}

var _ cel.HTTPClient = (*HTTP)(nil)

// maxClients bounds the clients kept for distinct CA bundles.
const maxClients = 64

// DefaultHTTPBlocklist returns upstream's default blocklist of policy HTTP
// calls: the cloud metadata endpoints by name and address, and loopback.
func DefaultHTTPBlocklist() []string {
	return []string{"169.254.169.254", "169.254.169.253", "metadata.google.internal", "127.0.0.0/8", "::1/128"}
}

// HTTPOption configures NewHTTP.
type HTTPOption func(*httpConfig)

type httpConfig struct {
	timeout   time.Duration
	maxBytes  int64
	blocklist []string
	allowlist []string
	transport *http.Transport
	resolver  *net.Resolver
}

// WithHTTPTimeout bounds each request (default 10s), within the caller's
// context.
func WithHTTPTimeout(d time.Duration) HTTPOption { return func(c *httpConfig) { c.timeout = d } }

// WithHTTPMaxBytes bounds a response body (default 2 MiB); a larger one is
// an error.
func WithHTTPMaxBytes(n int64) HTTPOption { return func(c *httpConfig) { c.maxBytes = n } }

// WithHTTPBlocklist replaces the blocklist (DefaultHTTPBlocklist): CIDR
// ranges ("10.0.0.0/8"), whose addresses may not be dialled, and host
// names ("metadata.internal", or an address written as a host), which
// URLs may not name. An empty list blocks nothing.
func WithHTTPBlocklist(entries ...string) HTTPOption {
	return func(c *httpConfig) { c.blocklist = append([]string{}, entries...) }
}

// WithHTTPAllowlist restricts URLs to prefixes (scheme and host, with an
// optional path prefix, matched on path segments of the cleaned path:
// "/api/../admin" is not under "/api"); the blocklist still applies.
func WithHTTPAllowlist(prefixes ...string) HTTPOption {
	return func(c *httpConfig) { c.allowlist = append([]string{}, prefixes...) }
}

// WithHTTPTransport sets the base transport (default: a clone of
// http.DefaultTransport); its dialer is replaced by one that enforces the
// blocked ranges.
func WithHTTPTransport(t *http.Transport) HTTPOption {
	return func(c *httpConfig) { c.transport = t }
}

// WithHTTPResolver sets the resolver of host names (default
// net.DefaultResolver).
func WithHTTPResolver(r *net.Resolver) HTTPOption { return func(c *httpConfig) { c.resolver = r } }

// NewHTTP returns the network host of the http library. A malformed
// blocklist or allowlist entry is an error.
func NewHTTP(opts ...HTTPOption) (*HTTP, error) {
	cfg := httpConfig{timeout: 10 * time.Second, maxBytes: 2 << 20, blocklist: DefaultHTTPBlocklist()}
	for _, o := range opts {
		o(&cfg)
	}
	h := &HTTP{timeout: cfg.timeout, maxBytes: cfg.maxBytes, blockedHosts: map[string]bool{},
		resolver: cfg.resolver, clients: map[string]*http.Client{}}
	if h.resolver == nil {
		h.resolver = net.DefaultResolver
	}
	for _, e := range cfg.blocklist {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			_, n, err := net.ParseCIDR(e)
			if err != nil {
				return nil, fmt.Errorf("http: invalid CIDR %q in blocklist: %w", e, err)
			}
			h.blockedCIDRs = append(h.blockedCIDRs, n)
		default:
			h.blockedHosts[normalizeHost(e)] = true
		}
	}
	for _, e := range cfg.allowlist {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		u, err := url.Parse(e)
		if err != nil {
			return nil, fmt.Errorf("http: invalid allowlist URL %q: %w", e, err)
		}
		if u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("http: allowlist entry %q must include scheme and host (e.g. https://api.example.com)", e)
		}
		h.allowed = append(h.allowed, u)
	}
	h.base = cfg.transport
	if h.base == nil {
		h.base = http.DefaultTransport.(*http.Transport).Clone()
	} else {
		h.base = h.base.Clone()
	}
	h.base.DialContext = h.dial
	return h, nil
}

func normalizeHost(h string) string { return strings.ToLower(strings.TrimRight(h, ".")) }

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// ErrHTTPBlocked is wrapped by the errors of requests the allowlist or
// blocklist refuse.
var ErrHTTPBlocked = errors.New("blocked")

// check applies the allowlist and the host blocklist to a URL.
func (h *HTTP) check(u *url.URL) error {
	if len(h.allowed) > 0 && !h.allows(u) {
		return fmt.Errorf("URL %q is not permitted: no matching allowlist entry: %w", u, ErrHTTPBlocked)
	}
	if h.blockedHosts[normalizeHost(u.Hostname())] {
		return fmt.Errorf("URL %q is blocked: hostname %q is on the blocklist: %w", u, u.Hostname(), ErrHTTPBlocked)
	}
	return nil
}

func (h *HTTP) allows(u *url.URL) bool {
	host, port := normalizeHost(u.Hostname()), effectivePort(u)
	// the path a server would serve: "/api/../admin" is not under "/api"
	reqPath := path.Clean("/" + u.Path)
	if strings.HasSuffix(u.Path, "/") && reqPath != "/" {
		reqPath += "/"
	}
	for _, a := range h.allowed {
		if a.Scheme != u.Scheme || normalizeHost(a.Hostname()) != host || effectivePort(a) != port {
			continue
		}
		p := a.Path
		switch {
		case p == "" || p == "/" || reqPath == p:
			return true
		case strings.HasPrefix(reqPath, p) && (strings.HasSuffix(p, "/") || reqPath[len(p)] == '/'):
			return true
		}
	}
	return false
}

// dial resolves the host itself, refuses it when any of its addresses is
// in a blocked range, and dials a checked address.
func (h *HTTP) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips := []string{host}
	if net.ParseIP(host) == nil {
		if ips, err = h.resolver.LookupHost(ctx, host); err != nil {
			return nil, fmt.Errorf("failed to resolve %s: %w", host, err)
		}
	}
	var first string
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		for _, n := range h.blockedCIDRs {
			if n.Contains(ip) {
				return nil, fmt.Errorf("connection to %s blocked: IP %s falls in blocked range %s: %w", addr, ip, n, ErrHTTPBlocked)
			}
		}
		if first == "" {
			first = s
		}
	}
	if first == "" {
		return nil, fmt.Errorf("no usable addresses resolved for %s", host)
	}
	return d.DialContext(ctx, network, net.JoinHostPort(first, port))
}

// client returns the client of a CA bundle.
func (h *HTTP) client(caBundle string) (*http.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[caBundle]; ok {
		return c, nil
	}
	t := h.base
	if caBundle != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(caBundle)) {
			return nil, errors.New("failed to parse PEM CA bundle for APICall")
		}
		t = h.base.Clone()
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		cfg.RootCAs = pool
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
		t.TLSClientConfig = cfg
	}
	c := &http.Client{Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return h.check(req.URL)
	}}
	if len(h.clients) >= maxClients {
		for k, old := range h.clients {
			old.CloseIdleConnections()
			delete(h.clients, k)
		}
	}
	h.clients[caBundle] = c
	return c, nil
}

// Do implements cel.HTTPClient.
func (h *HTTP) Do(ctx context.Context, req cel.HTTPRequest) (cel.HTTPResponse, error) {
	u, err := url.Parse(req.URL)
	if err != nil {
		return cel.HTTPResponse{}, fmt.Errorf("invalid URL: %w", err)
	}
	if err := h.check(u); err != nil {
		return cel.HTTPResponse{}, err
	}
	c, err := h.client(req.CABundle)
	if err != nil {
		return cel.HTTPResponse{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, body)
	if err != nil {
		return cel.HTTPResponse{}, fmt.Errorf("failed to create request: %w", err)
	}
	for k, v := range req.Headers {
		hr.Header.Add(k, v)
	}
	resp, err := c.Do(hr)
	if err != nil {
		return cel.HTTPResponse{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, h.maxBytes+1))
	if err != nil {
		return cel.HTTPResponse{}, err
	}
	if int64(len(data)) > h.maxBytes {
		return cel.HTTPResponse{}, fmt.Errorf("response of %s is larger than %d bytes", req.URL, h.maxBytes)
	}
	return cel.HTTPResponse{StatusCode: resp.StatusCode, Body: data}, nil
}
