// Command cluster is gavel's admission webhook and background controller
// for a Kubernetes cluster, on the cluster package: policies, exceptions,
// ConfigMaps and UpdateRequests come from the cluster, the webhook is
// stateless (run several replicas) and the controller (UpdateRequests,
// background scans into policy reports, the webhook configurations
// derived from the policies) runs on the replica that holds the Lease.
// The webhook answers through the admission package, records the results
// of admitted requests as ephemeral reports, which the controller merges
// into the policy reports, and writes an UpdateRequest for each update or
// deletion of a generated resource or clone source (its /downstream
// path). verifyImages rules verify signatures with the verify package,
// keys and imagePullSecrets read through the cluster; imageRegistry and
// apiCall.service context entries, image.GetMetadata and the CEL http
// library reach the network through the remote package (-network).
//
// The Helm chart charts/gavel deploys it (see the README's "Running in a
// cluster"). Run outside the cluster:
//
//	cluster -kubeconfig ~/.kube/config -tls-cert tls.crt -tls-key tls.key -ca-file ca.crt -webhook-url https://HOST:9443
//
// The certs subcommand makes a CA and a serving certificate (crypto/x509,
// no openssl) and prints the TLS Secret (or writes the files, -dir).
//
// It refuses to start where Kyverno is installed (cluster.DetectKyverno).
// Metrics are served at /metrics of -metrics-listen (with /healthz and
// /readyz), the probes also on the webhook's port.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/remote"
	"github.com/gavelpolicy/gavel/report"
	"github.com/gavelpolicy/gavel/verify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "certs" {
		os.Exit(runCerts(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// options are the command's flags.
type options struct {
	kubeconfig, namespace, identity  string
	listen, metricsListen            string
	certFile, keyFile, caFile        string
	webhook, controller              bool
	exceptionNamespaces              []string
	scan                             time.Duration
	workers                          int
	lease, renew, retry              time.Duration
	qps                              float64
	admissionReports                 bool
	admissionQueue                   int
	reportFormat                     report.Format
	reportWrites                     int
	controllerUser                   string
	manageWebhooks                   bool
	webhookName, webhookURL, service string
	webhookOwner                     string
	configMap                        string
	excludeNamespaces                []string
	webhookTimeout                   int
	webhookFailurePolicy             string
	logLevel, logFormat              string
	verifyImages                     bool
	network                          bool
	validatePolicies                 bool
	tufURL, tufCache                 string
	imageVerifyCacheTTL              time.Duration
	imageVerifyCacheSize             int
	log                              *slog.Logger
	metrics                          *cluster.Metrics
	registry                         *prometheus.Registry
	serviceAccount                   string
	vapReports, mapReports           bool
	events                           cluster.EventOptions
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostname, _ := os.Hostname()
	o := &options{}
	var excNS, exclude, format, omitEvents string
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
	fs.StringVar(&o.namespace, "namespace", envOr("POD_NAMESPACE", "gavel"), "namespace of gavel: UpdateRequests, the Lease, the controller's records, the webhook's Service")
	fs.StringVar(&o.identity, "identity", envOr("POD_NAME", hostname), "this replica's name in leader election")
	fs.StringVar(&o.listen, "listen", ":9443", "address of the webhook (HTTPS; also /healthz and /readyz)")
	fs.StringVar(&o.metricsListen, "metrics-listen", ":8000", "address of /metrics, /healthz and /readyz (plain HTTP; empty: none)")
	fs.StringVar(&o.certFile, "tls-cert", "", "TLS certificate of the webhook")
	fs.StringVar(&o.keyFile, "tls-key", "", "TLS key of the webhook")
	fs.StringVar(&o.caFile, "ca-file", "", "PEM of the CA of the webhook's certificate, the caBundle of the webhook configurations (default: ca.crt beside -tls-cert)")
	fs.BoolVar(&o.webhook, "webhook", true, "serve admission requests")
	fs.BoolVar(&o.controller, "controller", true, "campaign for the Lease and run the controller when leading")
	fs.StringVar(&excNS, "exception-namespaces", "*", "comma-separated namespaces whose PolicyExceptions apply")
	fs.DurationVar(&o.scan, "scan-interval", time.Minute, "period of the background scans (0: none)")
	fs.IntVar(&o.workers, "workers", 2, "UpdateRequests processed concurrently")
	fs.DurationVar(&o.lease, "lease-duration", 15*time.Second, "leader election lease duration")
	fs.DurationVar(&o.renew, "renew-deadline", 10*time.Second, "leader election renew deadline")
	fs.DurationVar(&o.retry, "retry-period", 2*time.Second, "leader election retry period")
	fs.Float64Var(&o.qps, "kube-api-qps", 50, "client QPS to the API server")
	fs.BoolVar(&o.admissionReports, "admission-reports", true, "record the results of admitted requests for the policy reports (ephemeral reports)")
	fs.IntVar(&o.admissionQueue, "admission-reports-queue", 1024, "admissions waiting to be recorded; beyond, their results are dropped")
	fs.StringVar(&o.serviceAccount, "service-account", envOr("POD_SERVICE_ACCOUNT", ""), "the ServiceAccount, in -namespace, gavel runs as: its own changes of generated resources are not sent back to the controller (empty: every user's are)")
	fs.BoolVar(&o.vapReports, "validating-admission-policy-reports", true, "report on the ValidatingAdmissionPolicies (which the API server enforces) in the background scans, as upstream's -validatingAdmissionPolicyReports")
	fs.BoolVar(&o.mapReports, "mutating-admission-policy-reports", false, "report on the MutatingAdmissionPolicies (which the API server applies) in the background scans, as upstream's -mutatingAdmissionPolicyReports")
	fs.IntVar(&o.reportWrites, "report-writes", 50, "policy reports (one per resource) written a second at most; the others wait (negative: no bound)")
	fs.StringVar(&format, "report-format", "wgpolicy", "API of the policy reports: wgpolicy (wgpolicyk8s.io/v1alpha2) or openreports (openreports.io/v1alpha1)")
	fs.BoolVar(&o.manageWebhooks, "manage-webhooks", true, "the leader writes the webhook configurations the policies need")
	fs.StringVar(&o.webhookName, "webhook-config-name", "gavel", "name of the Mutating- and ValidatingWebhookConfiguration")
	fs.StringVar(&o.service, "webhook-service", "gavel:443", "NAME:PORT of the webhook's Service in -namespace, which the webhook configurations name")
	fs.StringVar(&o.webhookURL, "webhook-url", "", "base URL of the webhook for the webhook configurations instead of the Service (gavel run outside the cluster)")
	fs.StringVar(&o.configMap, "config", "", "NAMESPACE/NAME of the configuration ConfigMap (upstream's kyverno ConfigMap: resourceFilters, excludeUsernames, excludeGroups, excludeRoles, excludeClusterRoles), read as it changes (empty: none)")
	fs.StringVar(&o.webhookOwner, "webhook-owner", "", "ClusterRole that owns the webhook configurations (deleted with it)")
	fs.StringVar(&exclude, "exclude-namespaces", "", "comma-separated namespaces no webhook is called for (default: -namespace and kube-system)")
	fs.StringVar(&o.webhookFailurePolicy, "webhook-failure-policy", "", "every webhook's failure policy, Fail or Ignore (empty: each policy's, as upstream)")
	fs.IntVar(&o.webhookTimeout, "webhook-timeout", 10, "timeout of the webhooks, seconds (a policy's webhookTimeoutSeconds raises its webhook's)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "text or json")
	fs.BoolVar(&o.validatePolicies, "validate-policies", true, "the leader adds a webhook of the ClusterPolicies and Policies: an invalid one is refused with its errors, as upstream's policy validating webhook (failure policy Ignore)")
	fs.BoolVar(&o.network, "network", true, "policies reach the network as upstream's do: the registries (imageRegistry context entries, image.GetMetadata), services (apiCall.service) and the CEL http library, which keeps upstream's blocklist (cloud metadata endpoints, loopback)")
	fs.BoolVar(&o.verifyImages, "verify-images", true, "verify image signatures of verifyImages rules (keys and imagePullSecrets read from the cluster)")
	fs.StringVar(&o.tufURL, "tuf-url", "https://tuf-repo-cdn.sigstore.dev", "TUF repository of Sigstore's trusted root, fetched when a keyless attestor first needs it (empty: none)")
	fs.StringVar(&o.tufCache, "tuf-cache", "", "directory caching the TUF metadata (empty: memory)")
	fs.DurationVar(&o.imageVerifyCacheTTL, "image-verify-cache-ttl", time.Hour, "how long a successful image verification is kept")
	fs.IntVar(&o.imageVerifyCacheSize, "image-verify-cache-size", 1000, "image verifications kept")
	fs.StringVar(&omitEvents, "omit-events", strings.Join(cluster.DefaultOmitEvents, ","), "comma-separated reasons of the events not recorded (PolicyViolation, PolicyApplied, PolicyError, PolicySkipped; empty: none), as upstream's -omitEvents; not the deleting and cleanup policies' events; PolicyApplied events also need generateSuccessEvents in the -config ConfigMap")
	fs.IntVar(&o.events.MaxQueued, "max-queued-events", 1000, "events waiting to be written; beyond, new ones are dropped (upstream's -maxQueuedEvents; 0: 1000)")
	var eventsQPS float64
	fs.Float64Var(&eventsQPS, "events-qps", 1000, "QPS of the writes of events (upstream's -eventsRateLimitQPS; 0: 1000)")
	fs.IntVar(&o.events.Burst, "events-burst", 2000, "burst of the writes of events (upstream's -eventsRateLimitBurst; 0: 2000)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.events.QPS = float32(eventsQPS)
	o.events.Omit = []string{}
	for r := range strings.SplitSeq(omitEvents, ",") {
		switch r = strings.TrimSpace(r); r {
		case "":
		case cluster.EventReasonPolicyViolation, cluster.EventReasonPolicyApplied, cluster.EventReasonPolicyError, cluster.EventReasonPolicySkipped:
			o.events.Omit = append(o.events.Omit, r)
		default:
			return nil, fmt.Errorf("-omit-events: %q is none of PolicyViolation, PolicyApplied, PolicyError, PolicySkipped", r)
		}
	}
	switch format {
	case "wgpolicy":
	case "openreports":
		o.reportFormat = report.OpenReports
	default:
		return nil, fmt.Errorf("-report-format: %q is neither wgpolicy nor openreports", format)
	}
	o.exceptionNamespaces = strings.Split(excNS, ",")
	o.excludeNamespaces = []string{o.namespace, "kube-system"}
	if exclude != "" {
		o.excludeNamespaces = strings.Split(exclude, ",")
	}
	o.controllerUser = serviceAccountUser(o.namespace, o.serviceAccount)
	if o.caFile == "" && o.certFile != "" {
		o.caFile = filepath.Join(filepath.Dir(o.certFile), "ca.crt")
	}
	var err error
	if o.log, err = newLogger(stderr, o.logLevel, o.logFormat); err != nil {
		return nil, err
	}
	return o, nil
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	ho := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, ho)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, ho)), nil
	}
	return nil, fmt.Errorf("-log-format: %q is neither text nor json", format)
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	o.log = o.log.With("replica", o.identity)
	// client-go's own lines (leader election, informers) in the same
	// structured log
	klog.SetSlogLogger(o.log.With("source", "client-go"))
	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		o.log.Error("kubeconfig", "err", err)
		return 1
	}
	cfg.QPS, cfg.Burst = float32(o.qps), int(o.qps*2)
	o.registry = prometheus.NewRegistry()
	o.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.metrics, err = cluster.NewMetrics(o.registry); err != nil {
		o.log.Error("metrics", "err", err)
		return 1
	}
	if err := serve(ctx, cfg, o); err != nil && !errors.Is(err, context.Canceled) {
		o.log.Error("stopped", "err", err)
		return 1
	}
	return 0
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serviceAccountUser is the user name the API server gives a
// ServiceAccount's requests.
func serviceAccountUser(namespace, name string) string {
	if name == "" {
		return ""
	}
	return "system:serviceaccount:" + namespace + ":" + name
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// hostSecrets reads Secrets through the host, once it exists.
type hostSecrets struct{ h *cluster.Host }

func (s *hostSecrets) SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return s.h.SecretData(ctx, namespace, name)
}

// engineOptions are the engine's options beyond the host's: the hosts
// that reach the network (networkOptions), and the image verifier, with
// the cluster's Secrets.
func engineOptions(secrets verify.SecretReader, o *options) ([]engine.Option, error) {
	var opts []engine.Option
	if o.network {
		net, err := networkOptions()
		if err != nil {
			return nil, err
		}
		opts = append(opts, net...)
	}
	if !o.verifyImages {
		return opts, nil
	}
	vopts := []verify.Option{verify.WithSecrets(secrets), verify.WithSecretsNamespace(o.namespace)}
	if o.tufURL != "" {
		vopts = append(vopts, verify.WithTUF(verify.TUFOptions{RepositoryURL: o.tufURL, CacheDir: o.tufCache}))
	}
	return append(opts,
		engine.WithImageVerifier(verify.New(vopts...)),
		engine.WithImageVerifyCache(engine.ImageVerifyCacheOptions{TTL: o.imageVerifyCacheTTL, MaxEntries: o.imageVerifyCacheSize}),
	), nil
}

// networkOptions are the hosts through which policies reach the network,
// as in upstream's admission and background controllers: the registries
// for imageRegistry context entries and image.GetMetadata (anonymous, or
// with the process's Docker credentials), the services of apiCall.service
// context entries, and the CEL http library, which refuses upstream's
// blocklist (cloud metadata endpoints, loopback).
func networkOptions() ([]engine.Option, error) {
	h, err := remote.NewHTTP()
	if err != nil {
		return nil, err
	}
	return []engine.Option{
		engine.WithRegistryClient(remote.NewRegistry(remote.WithKeychain(authn.DefaultKeychain))),
		engine.WithServiceCaller(remote.NewServices(0, 0)),
		engine.WithCELLibraries(cel.Libraries{HTTP: h}),
	}, nil
}

// serve runs the webhook and the controller until ctx is done, and
// returns once every goroutine it started has stopped.
func serve(ctx context.Context, cfg *rest.Config, o *options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := cluster.DetectKyverno(ctx, kube); err != nil {
		return err
	}
	secrets := &hostSecrets{}
	engOpts, err := engineOptions(secrets, o)
	if err != nil {
		return err
	}
	h, err := cluster.New(cfg, cluster.Options{Namespace: o.namespace, ExceptionNamespaces: o.exceptionNamespaces,
		Logger: o.log, Metrics: o.metrics, EngineOptions: engOpts, ConfigMap: o.configMap, Events: o.events})
	if err != nil {
		return err
	}
	secrets.h = h
	src, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{
		NoValidatingAdmissionPolicies: !o.vapReports, MutatingAdmissionPolicies: o.mapReports,
	})
	if err != nil {
		return err
	}
	var roles *cluster.RoleBindings
	if o.webhook {
		roles = cluster.NewRoleBindings(h) // its informers start with h
	}
	leader, err := leaderWork(h, src, o)
	if err != nil {
		return err
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	defer h.Shutdown()
	if !src.WaitForSync(ctx) {
		return ctx.Err()
	}
	o.log.Info("started", "policies", len(src.Set().Policies()))

	var wg sync.WaitGroup
	defer wg.Wait()
	errc := make(chan error, 3)
	if leader != nil {
		wg.Go(func() {
			err := h.RunLeader(ctx, cluster.LeaderOptions{
				Name: "gavel-controller", Identity: o.identity,
				LeaseDuration: o.lease, RenewDeadline: o.renew, RetryPeriod: o.retry,
				OnNewLeader: func(id string) { o.log.Info("leader elected", "leader", id) },
			}, leader)
			if err != nil && ctx.Err() == nil {
				errc <- err
			}
		})
	}
	wh := &webhook{src: src, host: h, roles: roles, metrics: o.metrics, log: o.log, controllerUser: o.controllerUser,
		downstream: cluster.NewDownstreamAdmission(h, cluster.DownstreamAdmissionOptions{ControllerUsername: o.controllerUser})}
	if o.metricsListen != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(o.registry, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write([]byte("ok\n")) })
		mux.HandleFunc("GET /readyz", wh.readyz)
		if err := listen(ctx, &wg, errc, o, "metrics", o.metricsListen, mux, nil); err != nil {
			return err
		}
	}
	if o.webhook {
		if o.admissionReports {
			wh.reports = cluster.NewAdmissionReports(h, cluster.AdmissionReportsOptions{QueueSize: o.admissionQueue})
			wg.Go(func() { wh.reports.Run(ctx) })
		}
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		if err := listen(ctx, &wg, errc, o, "webhook", o.listen, wh.handler(), tc); err != nil {
			return err
		}
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	return err
}

// leaderWork returns what the Lease holder runs: the controller and the
// webhook configurations (nil with -controller=false).
func leaderWork(h *cluster.Host, src *cluster.PolicySource, o *options) (func(context.Context), error) {
	if !o.controller {
		return nil, nil
	}
	scan := o.scan
	if scan == 0 {
		scan = -1
	}
	ctrl := cluster.NewController(h, src, cluster.ControllerOptions{
		Workers: o.workers, ScanInterval: scan,
		Generate: []generate.Option{generate.WithRetryDelay(time.Second)},
		Report:   report.Options{Format: o.reportFormat}, ReportWritesPerSecond: o.reportWrites,
	})
	var wc *cluster.WebhookController
	if o.manageWebhooks {
		wopts, err := webhookOptions(o)
		if err != nil {
			return nil, err
		}
		wc = cluster.NewWebhookController(h, src, wopts, time.Minute)
	}
	return func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Go(func() { ctrl.Run(ctx) })
		if wc != nil {
			wg.Go(func() { wc.Run(ctx) })
		}
		wg.Wait()
	}, nil
}

// webhookOptions are the webhook configurations' settings from the flags.
func webhookOptions(o *options) (cluster.WebhookOptions, error) {
	ca, err := os.ReadFile(o.caFile)
	if err != nil {
		return cluster.WebhookOptions{}, fmt.Errorf("-ca-file (the webhook configurations' caBundle): %w", err)
	}
	wo := cluster.WebhookOptions{
		Name: o.webhookName, URL: o.webhookURL, CABundle: ca, TimeoutSeconds: int32(o.webhookTimeout),
		OwnerClusterRole: o.webhookOwner, FailurePolicy: admv1.FailurePolicyType(o.webhookFailurePolicy),
		ValidatePolicies: o.validatePolicies,
	}
	switch wo.FailurePolicy {
	case "", admv1.Fail, admv1.Ignore:
	default:
		return cluster.WebhookOptions{}, fmt.Errorf("-webhook-failure-policy: %q is neither Fail nor Ignore", o.webhookFailurePolicy)
	}
	if len(o.excludeNamespaces) > 0 && o.excludeNamespaces[0] != "" {
		wo.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: o.excludeNamespaces,
		}}}
	}
	if o.webhookURL == "" {
		name, port, _ := strings.Cut(o.service, ":")
		var p int32 = 443
		if port != "" {
			if _, err := fmt.Sscan(port, &p); err != nil {
				return cluster.WebhookOptions{}, fmt.Errorf("-webhook-service %q: %w", o.service, err)
			}
		}
		wo.Service = &admv1.ServiceReference{Namespace: o.namespace, Name: name, Port: &p}
	}
	return wo, nil
}

// listen serves handler on addr (TLS when tc is set) until ctx is done.
func listen(ctx context.Context, wg *sync.WaitGroup, errc chan<- error, o *options, what, addr string, handler http.Handler, tc *tls.Config) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	o.log.Info("listening", "server", what, "address", ln.Addr().String())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tc}
	wg.Go(func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	})
	wg.Go(func() {
		var err error
		if tc != nil {
			err = srv.ServeTLS(ln, "", "")
		} else {
			err = srv.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s: %w", what, err)
		}
	})
	return nil
}
