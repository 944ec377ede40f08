// Command cluster is gavel's admission webhook and background controller
// for a Kubernetes cluster, on the cluster package: policies, exceptions,
// ConfigMaps and UpdateRequests come from the cluster, the webhook is
// stateless (run several replicas) and the controller (UpdateRequests,
// background scans into policy reports) runs on the replica that holds the
// Lease. The webhook records the results of admitted requests as
// ephemeral reports, which the controller merges into the policy reports,
// and writes an UpdateRequest for each update or deletion of a generated
// resource or clone source (its /downstream path), so that a synchronized
// resource deleted while no controller runs comes back when one starts.
//
//	cluster -kubeconfig ~/.kube/config -tls-cert tls.crt -tls-key tls.key
//
// The certs subcommand makes the webhook's CA and serving certificate
// (crypto/x509, no openssl) and prints the TLS Secret and the webhook
// configurations with the CA filled in:
//
//	cluster certs | kubectl apply -f -
//
// Without -kubeconfig it uses the in-cluster configuration. The manifests
// in manifests/ deploy it (see the README's "Running in a cluster").
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gavelpolicy/gavel/cluster"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/report"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "certs" {
		os.Exit(runCerts(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hostname, _ := os.Hostname()
	var (
		kubeconfig  = fs.String("kubeconfig", "", "kubeconfig file (default: in-cluster configuration)")
		namespace   = fs.String("namespace", envOr("POD_NAMESPACE", "gavel"), "namespace of the UpdateRequests, the Lease and the events")
		identity    = fs.String("identity", envOr("POD_NAME", hostname), "this replica's name in leader election")
		listen      = fs.String("listen", ":9443", "address of the webhook (HTTPS)")
		certFile    = fs.String("tls-cert", "", "TLS certificate of the webhook")
		keyFile     = fs.String("tls-key", "", "TLS key of the webhook")
		webhookOn   = fs.Bool("webhook", true, "serve admission requests")
		controller  = fs.Bool("controller", true, "campaign for the Lease and run the controller when leading")
		excNS       = fs.String("exception-namespaces", "*", "comma-separated namespaces whose PolicyExceptions apply")
		scan        = fs.Duration("scan-interval", time.Minute, "period of the background scans (0: none)")
		workers     = fs.Int("workers", 2, "UpdateRequests processed concurrently")
		lease       = fs.Duration("lease-duration", 15*time.Second, "leader election lease duration")
		renew       = fs.Duration("renew-deadline", 10*time.Second, "leader election renew deadline")
		retryPeriod = fs.Duration("retry-period", 2*time.Second, "leader election retry period")
		warnOnAudit = fs.Bool("warn-on-audit", false, "warn for every failing rule of an Audit policy")
		qps         = fs.Float64("kube-api-qps", 50, "client QPS to the API server")
		admReports  = fs.Bool("admission-reports", true, "record the results of admitted requests for the policy reports (ephemeral reports)")
		admQueue    = fs.Int("admission-reports-queue", 1024, "admissions waiting to be recorded; beyond, their results are dropped")
		serviceAcct = fs.String("service-account", envOr("POD_SERVICE_ACCOUNT", ""), "the ServiceAccount, in -namespace, gavel runs as: its own changes of generated resources are not sent back to the controller (empty: every user's are)")
		format      = fs.String("report-format", "wgpolicy", "API of the policy reports: wgpolicy (wgpolicyk8s.io/v1alpha2) or openreports (openreports.io/v1alpha1)")
	)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var reportFormat report.Format
	switch *format {
	case "wgpolicy":
	case "openreports":
		reportFormat = report.OpenReports
	default:
		fmt.Fprintf(stderr, "-report-format: %q is neither wgpolicy nor openreports\n", *format)
		return 2
	}
	logger := log.New(stderr, *identity+" ", log.LstdFlags|log.Lmicroseconds)
	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		logger.Printf("%v", err)
		return 1
	}
	cfg.QPS, cfg.Burst = float32(*qps), int(*qps*2)
	if err := serve(ctx, cfg, options{
		namespace: *namespace, identity: *identity, listen: *listen, certFile: *certFile, keyFile: *keyFile,
		webhook: *webhookOn, controller: *controller, exceptionNamespaces: strings.Split(*excNS, ","),
		scan: *scan, workers: *workers, lease: *lease, renew: *renew, retry: *retryPeriod,
		warnOnAudit: *warnOnAudit, admissionReports: *admReports, admissionQueue: *admQueue,
		reportFormat: reportFormat, controllerUser: serviceAccountUser(*namespace, *serviceAcct), logf: logger.Printf,
	}); err != nil && !errors.Is(err, context.Canceled) {
		logger.Printf("%v", err)
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

type options struct {
	namespace, identity, listen, certFile, keyFile string
	webhook, controller                            bool
	exceptionNamespaces                            []string
	scan                                           time.Duration
	workers                                        int
	lease, renew, retry                            time.Duration
	warnOnAudit                                    bool
	admissionReports                               bool
	admissionQueue                                 int
	reportFormat                                   report.Format
	controllerUser                                 string
	logf                                           func(string, ...any)
}

// serve runs the webhook and the controller until ctx is done.
func serve(ctx context.Context, cfg *rest.Config, o options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h, err := cluster.New(cfg, cluster.Options{Namespace: o.namespace, ExceptionNamespaces: o.exceptionNamespaces,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	src, err := cluster.NewPolicySource(h, cluster.PolicySourceOptions{})
	if err != nil {
		return err
	}
	var ctrl *cluster.Controller
	if o.controller {
		scan := o.scan
		if scan == 0 {
			scan = -1
		}
		ctrl = cluster.NewController(h, src, cluster.ControllerOptions{
			Workers: o.workers, ScanInterval: scan,
			Generate: []generate.Option{generate.WithRetryDelay(time.Second)},
			Report:   report.Options{Format: o.reportFormat},
		})
	}
	if err := h.Start(ctx); err != nil {
		return err
	}
	if !src.WaitForSync(ctx) {
		return ctx.Err()
	}
	o.logf("started: %d policies", len(src.Set().Policies()))

	var wg sync.WaitGroup
	errc := make(chan error, 2)
	if ctrl != nil {
		wg.Go(func() {
			err := h.RunLeader(ctx, cluster.LeaderOptions{
				Name: "gavel-controller", Identity: o.identity,
				LeaseDuration: o.lease, RenewDeadline: o.renew, RetryPeriod: o.retry,
				OnNewLeader: func(id string) { o.logf("leader is %s", id) },
			}, ctrl.Run)
			if err != nil && ctx.Err() == nil {
				errc <- err
			}
		})
	}
	if o.webhook {
		wh := &webhook{src: src, warnOnAudit: o.warnOnAudit, logf: o.logf,
			downstream: cluster.NewDownstreamAdmission(h, cluster.DownstreamAdmissionOptions{ControllerUsername: o.controllerUser})}
		if o.admissionReports {
			wh.reports = cluster.NewAdmissionReports(h, cluster.AdmissionReportsOptions{QueueSize: o.admissionQueue})
			wg.Go(func() { wh.reports.Run(ctx) })
		}
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return fmt.Errorf("webhook: %w", err)
		}
		o.logf("webhook listening on %s", ln.Addr())
		srv := &http.Server{
			Handler:           wh.handler(),
			ReadHeaderTimeout: 10 * time.Second,
			TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		}
		wg.Go(func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
		wg.Go(func() {
			if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		})
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	cancel()
	wg.Wait()
	return err
}
