package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/gavelpolicy/gavel/engine"
)

// Services performs apiCall.service requests over HTTP(S). Each request's
// caBundle, when set, is the only trusted root for it.
type Services struct {
	timeout  time.Duration
	maxBytes int64
	base     *http.Transport
}

var _ engine.ServiceCaller = (*Services)(nil)

// NewServices returns a service caller with a per-request timeout and a
// response size limit.
func NewServices(timeout time.Duration, maxBytes int64) *Services {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if maxBytes <= 0 {
		maxBytes = 2 << 20
	}
	return &Services{timeout: timeout, maxBytes: maxBytes, base: http.DefaultTransport.(*http.Transport).Clone()}
}

// Call implements engine.ServiceCaller.
func (s *Services) Call(ctx context.Context, req engine.ServiceRequest) ([]byte, error) {
	transport := s.base
	if req.CABundle != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(req.CABundle)) {
			return nil, fmt.Errorf("invalid caBundle for %s", req.URL)
		}
		transport = s.base.Clone()
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if len(req.Body) > 0 {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		return nil, err
	}
	if len(req.Body) > 0 {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	resp, err := (&http.Client{Transport: transport}).Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > s.maxBytes {
		return nil, fmt.Errorf("response of %s is larger than %d bytes", req.URL, s.maxBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return data, nil
}
