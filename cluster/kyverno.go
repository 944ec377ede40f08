package cluster

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// KyvernoWebhookConfigurations are the webhook configurations Kyverno's
// admission controller writes as soon as it runs (the policy webhooks
// exist with no policy at all): their presence tells that Kyverno is
// installed.
var KyvernoWebhookConfigurations = struct{ Validating, Mutating []string }{
	Validating: []string{"kyverno-policy-validating-webhook-cfg", "kyverno-resource-validating-webhook-cfg"},
	Mutating:   []string{"kyverno-policy-mutating-webhook-cfg", "kyverno-resource-mutating-webhook-cfg"},
}

// KyvernoInstalledError is DetectKyverno's answer when Kyverno runs in the
// cluster.
type KyvernoInstalledError struct {
	// Found names the objects that tell so.
	Found []string
}

func (e *KyvernoInstalledError) Error() string {
	return fmt.Sprintf("Kyverno is installed in this cluster (%s): gavel serves the same kinds "+
		"(kyverno.io policies, UpdateRequests, policy reports) and would answer the same admission "+
		"requests, generate the same resources and write the same reports twice; uninstall Kyverno "+
		"first, or run gavel in a cluster without it", strings.Join(e.Found, ", "))
}

// DetectKyverno returns a *KyvernoInstalledError when Kyverno's admission
// controller has written its webhook configurations in the cluster
// (KyvernoWebhookConfigurations), nil when none is there. It reads them by
// name, which RBAC can grant with resourceNames.
func DetectKyverno(ctx context.Context, kube kubernetes.Interface) error {
	ar := kube.AdmissionregistrationV1()
	var found []string
	for _, name := range KyvernoWebhookConfigurations.Validating {
		_, err := ar.ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			found = append(found, "ValidatingWebhookConfiguration "+name)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("cluster: looking for Kyverno: %w", err)
		}
	}
	for _, name := range KyvernoWebhookConfigurations.Mutating {
		_, err := ar.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			found = append(found, "MutatingWebhookConfiguration "+name)
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("cluster: looking for Kyverno: %w", err)
		}
	}
	if len(found) > 0 {
		return &KyvernoInstalledError{Found: found}
	}
	return nil
}
