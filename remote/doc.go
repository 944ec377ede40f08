// Package remote holds host implementations of the engine's interfaces that
// reach the network: an OCI registry client for imageRegistry context
// entries (go-containerregistry) and an HTTP client for apiCall.service
// entries. The engine never imports this package; a host that wants these
// behaviours passes them with engine.WithRegistryClient and
// engine.WithServiceCaller. Tests and the CLI use the in-memory
// equivalents of package inmem instead.
package remote
