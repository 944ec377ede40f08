// Command gavel-webhook serves gavel as a Kubernetes validating and
// mutating admission webhook.
//
//	gavel-webhook --policies DIR --tls-cert-file tls.crt --tls-private-key-file tls.key [--addr :9443]
//	gavel-webhook --policies DIR --self-signed --addr 127.0.0.1:9443
//
// Register POST /validate in a ValidatingWebhookConfiguration and POST
// /mutate in a MutatingWebhookConfiguration (admissionReviewVersions: [v1]).
// The policy folder is polled for changes; SIGINT or SIGTERM shut the server
// down gracefully.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gavelpolicy/gavel/examples/webhook/internal/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("gavel-webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	policies := fs.String("policies", "", "folder of ClusterPolicy, Policy and PolicyException manifests (required)")
	addr := fs.String("addr", ":9443", "address to listen on")
	certFile := fs.String("tls-cert-file", "", "TLS certificate (PEM)")
	keyFile := fs.String("tls-private-key-file", "", "TLS private key (PEM)")
	selfSigned := fs.Bool("self-signed", false, "serve a generated self-signed certificate for localhost and 127.0.0.1 (development only); its PEM is printed to stderr")
	poll := fs.Duration("poll", 2*time.Second, "how often the policy folder is checked for changes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *policies == "" || (!*selfSigned && (*certFile == "" || *keyFile == "")) {
		fmt.Fprintln(stderr, "gavel-webhook: --policies and either --tls-cert-file with --tls-private-key-file or --self-signed are required")
		fs.Usage()
		return 2
	}
	logger := log.New(stderr, "gavel-webhook: ", log.LstdFlags)
	srv, err := webhook.New(webhook.Options{
		PolicyDir:    *policies,
		PollInterval: *poll,
		Logf:         logger.Printf,
	})
	if err != nil {
		logger.Print(err)
		return 1
	}
	if *selfSigned {
		cert, pemBytes, err := webhook.SelfSignedCert("localhost", "127.0.0.1")
		if err != nil {
			logger.Print(err)
			return 1
		}
		fmt.Fprintf(stderr, "%s", pemBytes)
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			logger.Print(err)
			return 1
		}
		logger.Printf("serving on https://%s", ln.Addr())
		err = srv.Serve(ctx, ln, cert)
	} else {
		logger.Printf("serving on %s", *addr)
		err = srv.ListenAndServe(ctx, *addr, *certFile, *keyFile)
	}
	if err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}
