package verify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/go-openapi/runtime"
	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	rekorclient "github.com/sigstore/rekor/pkg/generated/client"

	"github.com/gavelpolicy/gavel/engine"
)

// rekorClient is Rekor's generated API client for the log at rawURL
// (rekor.url), over the Verifier's transport: cosign looks up the entries
// of signatures that carry no Rekor bundle with it.
func (v *Verifier) rekorClient(rawURL string) (*rekorclient.Rekor, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("invalid rekor.url %q: want an http(s) URL", rawURL)
	}
	path := u.Path
	if path == "" {
		path = rekorclient.DefaultBasePath
	}
	rt := httptransport.NewWithClient(u.Host, path, []string{u.Scheme},
		&http.Client{Transport: &rekorTransport{next: &limitTransport{next: v.transport, max: v.maxBytes}}})
	rt.Consumers["application/json"] = runtime.JSONConsumer()
	rt.Producers["application/json"] = runtime.JSONProducer()
	return rekorclient.New(rt, strfmt.Default), nil
}

// rekorFailures records, for one verification, that the log could not be
// reached (network errors, server errors, too many requests): cosign
// reports lookup failures as text among those of every signature, so the
// transport tells.
type rekorFailures struct{ failed atomic.Bool }

type rekorFailuresKey struct{}

// withRekorFailures returns a context whose Rekor lookups are recorded.
func withRekorFailures(ctx context.Context) (context.Context, *rekorFailures) {
	f := &rekorFailures{}
	return context.WithValue(ctx, rekorFailuresKey{}, f), f
}

// wrap marks err with engine.ErrRegistryUnavailable when a lookup of the
// log failed to reach it, so that failurePolicy Ignore applies.
func (f *rekorFailures) wrap(err error) error {
	if err == nil || !f.failed.Load() || errors.Is(err, engine.ErrRegistryUnavailable) {
		return err
	}
	return fmt.Errorf("%w: transparency log unreachable: %w", engine.ErrRegistryUnavailable, err)
}

type rekorTransport struct{ next http.RoundTripper }

func (t *rekorTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		if f, ok := req.Context().Value(rekorFailuresKey{}).(*rekorFailures); ok {
			f.failed.Store(true)
		}
	}
	return resp, err
}
