//go:build e2e

package chainsaw

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

// gavelNamespace, gavelService and gavelAccount are the names the
// example's manifests give gavel's namespace, Service and ServiceAccount.
const (
	gavelNamespace = "gavel"
	gavelService   = "gavel"
	gavelAccount   = "gavel"
)

// installGavel installs gavel's cluster mode as the README's "Running in a
// cluster" does: the manifests, then the certs subcommand's Secret and
// webhook configurations. The Deployment's Pods would need a kubelet: a
// process on this host stands in for them, running with the
// ServiceAccount's token and the Secret's certificate, behind an
// EndpointSlice of the Service that points at it, so the API server calls
// the webhooks through the Service exactly as in a cluster.
func installGavel(ctx context.Context, c *testcluster.Cluster, binary, manifests string) error {
	for _, f := range []string{"crds.yaml", "rbac.yaml", "deployment.yaml"} {
		if err := c.ApplyFile(ctx, filepath.Join(manifests, f)); err != nil {
			return err
		}
	}
	if err := waitCRDs(ctx, c); err != nil {
		return err
	}
	tls := filepath.Join(c.Dir, "gavel-tls")
	if err := os.MkdirAll(tls, 0o700); err != nil {
		return err
	}
	certs := exec.CommandContext(ctx, binary, "certs", "-dir", tls)
	var stderr bytes.Buffer
	certs.Stderr = &stderr
	out, err := certs.Output()
	if err != nil {
		return fmt.Errorf("certs: %v: %s", err, stderr.Bytes())
	}
	if err := c.ApplyDocuments(ctx, bytes.NewReader(out), "the output of certs"); err != nil {
		return err
	}

	ip, err := hostIP()
	if err != nil {
		return err
	}
	port, err := freePortOn(ip)
	if err != nil {
		return err
	}
	if err := endpoint(ctx, c, ip, port); err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.Dir, "gavel.kubeconfig")
	if err := serviceAccountKubeconfig(ctx, c, kubeconfig); err != nil {
		return err
	}
	cmd := exec.Command(binary, "-kubeconfig", kubeconfig,
		"-tls-cert", filepath.Join(tls, "tls.crt"), "-tls-key", filepath.Join(tls, "tls.key"),
		"-listen", net.JoinHostPort(ip.String(), fmt.Sprint(port)))
	// the environment the Deployment gives its Pods
	cmd.Env = append(os.Environ(), "POD_NAME=gavel-0", "POD_NAMESPACE="+gavelNamespace, "POD_SERVICE_ACCOUNT="+gavelAccount)
	p, err := c.Spawn("gavel", cmd)
	if err != nil {
		return err
	}
	if err := p.WaitLog(ctx, "started:", 2*time.Minute); err != nil {
		return err
	}
	return waitService(ctx, c)
}

// hostIP returns an IPv4 address of this host that is not a loopback
// address: the API server refuses loopback addresses in EndpointSlices.
func hostIP() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			return ip, nil
		}
	}
	return nil, errors.New("no IPv4 address other than loopback on this host: the judge's EndpointSlice needs one")
}

func freePortOn(ip net.IP) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// endpoint writes the EndpointSlice of gavel's Service: the port named
// https (the Service's) at ip:port, where the process listens.
func endpoint(ctx context.Context, c *testcluster.Cluster, ip net.IP, port int) error {
	name, proto, ready := "https", corev1.ProtocolTCP, true
	p := int32(port)
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: gavelService + "-host", Namespace: gavelNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: gavelService, discoveryv1.LabelManagedBy: "gavel-judge"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &proto}},
	}
	_, err := c.Kube.DiscoveryV1().EndpointSlices(gavelNamespace).Create(ctx, es, metav1.CreateOptions{})
	return err
}

// serviceAccountKubeconfig writes a kubeconfig with a token of gavel's
// ServiceAccount, so that gavel runs with the rights the manifests give
// it, as its Pods would.
func serviceAccountKubeconfig(ctx context.Context, c *testcluster.Cluster, path string) error {
	exp := int64((24 * time.Hour).Seconds())
	tr, err := c.Kube.CoreV1().ServiceAccounts(gavelNamespace).CreateToken(ctx, gavelAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", gavelNamespace, gavelAccount, err)
	}
	return c.WriteKubeconfig(path, "system:serviceaccount:"+gavelNamespace+":"+gavelAccount, tr.Status.Token)
}

// waitService waits until the API server reaches gavel's webhook through
// its Service, the EndpointSlice and the certificate of the certs
// subcommand: a probe webhook of its own, with failurePolicy Fail, on the
// dry-run creation of a labelled ConfigMap, until the creation succeeds.
func waitService(ctx context.Context, c *testcluster.Cluster) error {
	ca, err := os.ReadFile(filepath.Join(c.Dir, "gavel-tls", "ca.crt"))
	if err != nil {
		return err
	}
	fail, none, path := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, "/validate"
	probe := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gavel-judge-probe"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "probe.judge.gavel.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca,
				Service: &admissionregistrationv1.ServiceReference{Namespace: gavelNamespace, Name: gavelService, Path: &path}},
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"gavel-judge-probe": "true"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
		}},
	}
	hooks := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := hooks.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() { _ = hooks.Delete(context.WithoutCancel(ctx), probe.Name, metav1.DeleteOptions{}) }()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gavel-judge-probe", Labels: probe.Webhooks[0].ObjectSelector.MatchLabels}}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := c.Kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server does not reach gavel's webhook through its Service: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitCRDs waits until every CustomResourceDefinition is established.
func waitCRDs(ctx context.Context, c *testcluster.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		l, err := c.Dynamic.Resource(crdResource).List(ctx, metav1.ListOptions{})
		pending := 0
		if err == nil {
			for _, crd := range l.Items {
				if !established(crd) {
					pending++
				}
			}
			if pending == 0 {
				c.ResetMapper()
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRDs not established (%d pending): %v", pending, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func established(crd unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
