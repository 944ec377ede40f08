// Package dynclient holds the parts of gavel's cluster host that need only
// client-go's dynamic client and a RESTMapper: the engine.Client of
// context entries, generate rules and mutate-existing targets, direct
// reads of ConfigMaps and namespace labels, the engine.APIClient of
// apiCall entries on a REST client, and Discovery and Mapper, which read
// the API server's discovery documents without client-go's discovery
// package (see Discovery for why). Package cluster builds on it (with
// informers on the typed clientset); one-shot hosts such as the CLI use it
// alone, without linking the typed clientset.
package dynclient
