// Package cluster runs gavel in a Kubernetes cluster: it implements the
// engine's host interfaces on client-go and adds what a webhook and its
// controller need around them.
//
//   - Host: ConfigMaps (engine.ConfigMapResolver) and namespace labels
//     (engine.NamespaceLabeler) from informers; PolicyExceptions
//     (kyverno.io/v2, from the allowed namespaces) compiled when they
//     change (engine.ExceptionSource); apiCall entries through the REST
//     client (engine.APIClient); Client, the dynamic engine.Client of
//     generate rules and mutate-existing targets, retrying conflicts, which
//     also reads the parameter objects and namespaceObject of CEL rules
//     and tells their kinds' scope (engine.NamespacedKinds); Authorizer,
//     CEL's authorizer variable on SubjectAccessReviews
//     (engine.Authorizer); Config, the configuration ConfigMap
//     (upstream's kyverno ConfigMap: resourceFilters, the engine's
//     resource filter, and the users whose admission requests are not
//     evaluated), read again as it changes.
//   - PolicySource: ClusterPolicy and Policy objects watched, each
//     compiled when it changes (by a worker: the informers only queue
//     keys), the PolicySet swapped atomically, with the subsets each
//     webhook path serves (WebhookSet); a policy that does not compile
//     keeps its previous version serving and gets a Ready condition False
//     with the reason and a Warning event; a policy that compiles is
//     Ready once the WebhookController's configurations serve it.
//   - WebhookConfigurations and WebhookController: the Mutating- and
//     ValidatingWebhookConfiguration the policies need, derived as
//     upstream derives them (kinds, operations, failure policies, a
//     policy's own webhooks), written by the leader when a policy or a
//     CRD changes.
//   - Metrics: upstream's Prometheus metrics (admission requests and
//     review duration, policy results and execution duration, rule info,
//     policy changes, controller reconciles, requeues and drops, HTTP
//     requests) and the work queues', on the caller's registry.
//   - DetectKyverno: gavel refuses to run where Kyverno does.
//   - Queue: the durable UpdateRequest queue. The engine's UpdateRequests
//     become kyverno.io/v2 UpdateRequest objects, Pending, written at
//     admission; Drain processes them with a generate.Controller and
//     deletes those that Completed (or were Skipped) and records the
//     Failed ones with their retry count. A controller that stops or dies
//     leaves the rest Pending for the next one. Equal requests coalesce
//     into one object (named after a hash of the spec).
//   - RunLeader: leader election on a coordination.k8s.io Lease, for the
//     work one replica does: Controller (UpdateRequests; synchronize of
//     generated resources and clone sources, through the queue; policy
//     changes, recorded in a ConfigMap per policy so that a new leader
//     applies those made while none ran) and Reporter
//     (resources evaluated as they are admitted or change, and all again at
//     an interval and when policies change, into wgpolicyk8s.io/v1alpha2
//     PolicyReports and ClusterPolicyReports, or openreports.io/v1alpha1
//     Reports and ClusterReports, one per resource as upstream's (named
//     after its UID, owned by it, with every policy's entries); a deleted
//     resource's report is removed; only changed reports are written, at
//     most ControllerOptions.ReportWritesPerSecond a second).
//   - AdmissionReports: the webhook side of admission reports. The results
//     of admitted requests (of policies with background: false, which no
//     scan reports) are queued without blocking and written as
//     reports.kyverno.io/v1 EphemeralReports, which the leader's Reporter
//     merges into the policy reports and deletes.
//   - DownstreamAdmission: the webhook side of synchronize. An update or
//     a deletion of a generated resource or of a clone source becomes at
//     admission the UpdateRequest the Controller's informers would make,
//     written Pending, so that a change made while no controller runs
//     (a deletion, which no informer can list later) is synchronized when
//     one starts.
//
// A webhook replica builds a Host and a PolicySource and answers admission
// requests with PolicySource.Set (or WebhookSet); the engine writes the
// UpdateRequests. Everything that watches the cluster has client-go's
// sample-controller shape (handlers queue keys, workers make the API calls
// with rate-limited retries), logs through log/slog (Options.Logger) and
// records upstream's Kubernetes events (events.k8s.io/v1: PolicyViolation,
// PolicyApplied, PolicyError, PolicySkipped; Options.Events,
// Host.RecordAdmissionEvents, Host.RecordGenerateEvents) through a
// bounded queue that never makes the caller wait; Host.Shutdown waits for
// every goroutine the host started.
// Every replica also builds a Controller and campaigns with RunLeader; the
// leader runs it. The engine package itself never imports client-go.
//
// The package is tested on client-go's fake clients; the e2e suite (see
// ../e2e) runs it against a real kube-apiserver.
package cluster
