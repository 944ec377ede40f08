// Package webhook is a complete Kubernetes admission webhook built on gavel:
// a validating and a mutating endpoint on net/http with TLS, speaking
// admission.k8s.io/v1 AdmissionReview.
//
// Policies (ClusterPolicy, Policy and PolicyException manifests) are read
// from a folder and compiled once into an engine.PolicySet held behind an
// atomic pointer; a poller compares file modification times and sizes and
// swaps in a freshly compiled set when they change, so requests in flight
// keep the set they started with and never wait for a reload. A folder that
// fails to compile keeps the previous set serving.
//
// Both endpoints answer with the admission package, which decides as
// upstream's webhooks do (engine.Response.Blocked). The validating
// endpoint denies a request when an Enforce policy's validate rule fails
// (or errors, under failurePolicy Fail), with upstream's message listing
// the failing policies and rules, and returns admission warnings for the
// other failures (errors under failurePolicy Ignore, rules of policies with
// spec.emitWarning). Allowed requests are then handed to the generate
// rules, whose UpdateRequests go to a bounded generate.MemoryQueue that
// the background controller Serve runs (generate.Controller.Run) drains
// into the cluster.
//
// The mutating endpoint answers with the engine's RFC 6902 patch (JSONPatch,
// base64 in the JSON body as the API server expects) and denies the request
// when a mutate rule errors in a policy whose failurePolicy is Fail.
//
// The package is internal to the example (an example is not a library):
// cmd/gavel-webhook is the command around it and its tests start the
// server; copy the source to build your own.
package webhook
