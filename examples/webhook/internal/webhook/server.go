package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/generate"
	"github.com/gavelpolicy/gavel/inmem"
)

// queueCapacity bounds the UpdateRequests waiting for the background
// controller: when it is full, admission waits for room until the
// request's own deadline, then fails the generate rule with that error.
const queueCapacity = 1024

// Options configure a Server.
type Options struct {
	// PolicyDir is the folder of policy and PolicyException manifests
	// (read recursively). Required.
	PolicyDir string
	// PollInterval is how often the folder is checked for changes
	// (default 2s).
	PollInterval time.Duration
	// Cluster serves ConfigMap lookups, namespace labels and API calls of
	// context entries, and is where the background controller applies
	// generate and mutate-existing rules. When nil an empty in-memory
	// cluster is used; a real deployment passes implementations backed by
	// client-go.
	Cluster *inmem.Cluster
	// EngineOptions are added after the webhook's own options (clock,
	// registry client, limits...).
	EngineOptions []engine.Option
	// MaxRequestBytes bounds the size of an AdmissionReview body
	// (default 3 MiB, the API server's own request limit).
	MaxRequestBytes int64
	// Logf receives log lines (default log.Printf).
	Logf func(format string, args ...any)
}

// Server is an admission webhook. Its handlers are safe for concurrent use.
type Server struct {
	opts    Options
	cluster *inmem.Cluster
	store   *store
	// queue holds the UpdateRequests of admission (bounded) until ctrl,
	// run by Serve, processes them against the cluster
	queue *generate.MemoryQueue
	ctrl  *generate.Controller
}

// New builds a Server and compiles the policy folder once; an error in the
// folder at start-up is returned (later errors keep the last good set).
func New(opts Options) (*Server, error) {
	if opts.PolicyDir == "" {
		return nil, errors.New("webhook: PolicyDir is required")
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 3 << 20
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	cluster := opts.Cluster
	if cluster == nil {
		cluster = inmem.New()
	}
	st := &store{dir: opts.PolicyDir, logf: opts.Logf}
	queue := generate.NewMemoryQueue(queueCapacity)
	engOpts := []engine.Option{
		engine.WithConfigMapResolver(cluster),
		engine.WithAPIClient(cluster),
		engine.WithNamespaceLabeler(cluster),
		engine.WithClient(cluster),
		engine.WithUpdateRequestQueue(queue),
		engine.WithExceptions(st),
	}
	eng, err := engine.New(append(engOpts, opts.EngineOptions...)...)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	st.eng = eng
	if _, err := st.reload(true); err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	ctrl := generate.NewController(st.cur.Load().set, cluster)
	st.onLoad = ctrl.SetPolicies
	return &Server{opts: opts, cluster: cluster, store: st, queue: queue, ctrl: ctrl}, nil
}

// Cluster returns the cluster the server reads from and the background
// controller writes generated resources to.
func (s *Server) Cluster() *inmem.Cluster { return s.cluster }

// PolicySet returns the compiled policies currently serving.
func (s *Server) PolicySet() *engine.PolicySet { return s.store.cur.Load().set }

// Generation counts successful loads of the policy folder, starting at 1.
func (s *Server) Generation() uint64 { return s.store.cur.Load().generation }

// Reload checks the policy folder now and recompiles it if it changed. It
// reports whether a new set was published.
func (s *Server) Reload() (bool, error) { return s.store.reload(false) }

// LastReloadError returns the error of the latest reload attempt, or nil.
func (s *Server) LastReloadError() error {
	if p := s.store.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Handler returns the webhook's routes: POST /validate and /mutate take
// AdmissionReviews; GET /healthz answers "ok"; GET /readyz answers "ok"
// while the latest reload succeeded and 503 with the error otherwise.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /validate", s.serveReview(s.validate))
	mux.HandleFunc("POST /mutate", s.serveReview(s.mutate))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.LastReloadError(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintf(w, "ok: generation %d\n", s.Generation())
	})
	return mux
}

// Serve runs the webhook over TLS on ln, and beside it the policy poller
// and the background controller that processes the UpdateRequests of
// generate and mutate-existing rules (generate.Controller.Run), until ctx
// is cancelled; it then shuts the server down gracefully (waiting
// up to 10s for requests in flight) and returns nil once every goroutine it
// started has ended. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener, cert tls.Certificate) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
		},
		ErrorLog: log.New(logWriter{s.opts.Logf}, "", 0),
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.store.watch(watchCtx, s.opts.PollInterval)
	}()
	wg.Go(func() {
		if err := s.ctrl.Run(watchCtx, s.queue); err != nil && watchCtx.Err() == nil {
			s.opts.Logf("background controller stopped: %v", err)
		}
	})
	shutdownErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		<-watchCtx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		shutdownErr <- srv.Shutdown(sctx)
	}()
	err := srv.ServeTLS(ln, "", "")
	stopWatch()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return <-shutdownErr
	}
	return err
}

// ListenAndServe listens on addr and calls Serve with the key pair read
// from certFile and keyFile.
func (s *Server) ListenAndServe(ctx context.Context, addr, certFile, keyFile string) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return s.Serve(ctx, ln, cert)
}

// logWriter sends the http.Server's own log lines to Logf.
type logWriter struct{ logf func(string, ...any) }

func (l logWriter) Write(p []byte) (int, error) {
	l.logf("%s", p)
	return len(p), nil
}
