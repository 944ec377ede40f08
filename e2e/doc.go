// Package e2e is gavel's end-to-end suite: it starts etcd and
// kube-apiserver on 127.0.0.1 (built from the module proxy by build.sh,
// cached by version, with helm; started by internal/testcluster), applies the chart charts/gavel as helm
// template renders it, runs the example's webhook and controllers against
// them (one with the chart's ServiceAccount token) and checks the
// scenarios of a real cluster: denials, mutations, warnings, generate with
// synchronize, PolicyExceptions, policy reports, UpdateRequests surviving
// a crash, leader failover, a broken policy, webhooks derived from the
// policies (kinds beyond Pods, subresources, custom resources, v2beta1),
// RBAC aggregation, metrics and probes, the refusal where Kyverno runs,
// image verification against a registry on 127.0.0.1, and a load run.
//
// It is not part of go test ./...: run it with
//
//	go test -tags e2e -v ./e2e/
//
// GAVEL_E2E_CACHE moves the binaries' cache, GAVEL_E2E_KEEP keeps the
// logs, GAVEL_E2E_PODS sets the Pods of the load run (default 3000).
package e2e
