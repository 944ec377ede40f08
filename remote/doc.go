// Package remote holds host implementations of the engine's interfaces that
// reach the network: an OCI registry client for imageRegistry context
// entries and the CEL imagedata library (go-containerregistry), an HTTP
// client for apiCall.service entries, and the hardened HTTP client of the
// CEL http library (HTTP: allowlist, blocklist checked on every dialled
// address). The engine never imports this package; a host that wants
// these behaviours passes them with engine.WithRegistryClient,
// engine.WithServiceCaller and cel.Libraries. Tests and the CLI use the
// in-memory equivalents of package inmem instead.
package remote
