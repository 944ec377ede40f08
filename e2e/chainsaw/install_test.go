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
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

// gavelNamespace and gavelDeployment are the namespace the judge installs
// the chart into and the Deployment the chart names after its release.
const (
	gavelNamespace  = "gavel"
	gavelDeployment = "gavel"
)

// configNamespace and configName locate the configuration ConfigMap the
// chart creates: where upstream's installation keeps its own (kyverno in
// the kyverno namespace), which the tests edit by that name
// (restrict-node-label-changes removes and restores the Node filters).
const (
	configNamespace = "kyverno"
	configName      = "kyverno"
)

// installGavel installs gavel's cluster mode as the README's "Running in a
// cluster" does, `helm install gavel charts/gavel -n gavel
// --create-namespace` with the configuration ConfigMap where upstream's
// is (configNamespace): the namespaces, then the chart as `helm template`
// renders it (CRDs first; no Tiller state is needed, and helm's lookup of
// an existing Secret finds none, as on a first install); then stands in
// for the Deployment's Pods (runPods). The chart's webhook configurations
// start empty: gavel's leader writes them from the policies.
func installGavel(ctx context.Context, c *testcluster.Cluster, binary, helm, chart string) error {
	for _, name := range []string{gavelNamespace, configNamespace} {
		ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name}}
		if err := c.Apply(ctx, ns); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, helm, "template", "gavel", chart, "--namespace", gavelNamespace, "--include-crds",
		"--set", "config.namespace="+configNamespace, "--set", "config.name="+configName)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("helm template: %v: %s", err, stderr.Bytes())
	}
	if err := c.ApplyDocuments(ctx, bytes.NewReader(out), "helm template "+chart); err != nil {
		return err
	}
	if err := c.WaitCRDs(ctx, time.Minute); err != nil {
		return err
	}
	return runPods(ctx, c, binary, gavelNamespace, gavelDeployment)
}

// runPods stands in for the Pod of a Deployment, which would need a
// kubelet: the binary runs on this host as the Deployment's container
// would, with its arguments and environment (fieldRef values as the Pod
// would have them), its Secret and ConfigMap volumes written to files at
// the paths its arguments name, and a token of its ServiceAccount (a
// kubeconfig in place of the in-cluster configuration). An EndpointSlice
// of each Service selecting the Pod points at the process, on a
// non-loopback address of this host, so that the API server (with
// --enable-aggregator-routing) calls the webhooks through the Service,
// and checks the certificate for the Service's name, as in a cluster.
func runPods(ctx context.Context, c *testcluster.Cluster, binary, namespace, name string) error {
	d, err := c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod := d.Spec.Template
	if len(pod.Spec.Containers) != 1 {
		return fmt.Errorf("deployment %s/%s: %d containers, the stand-in runs one", namespace, name, len(pod.Spec.Containers))
	}
	ctr := pod.Spec.Containers[0]
	podName := name + "-0"
	root := filepath.Join(c.Dir, "pod-"+podName)
	mounts, err := writeVolumes(ctx, c, namespace, pod.Spec, ctr, root)
	if err != nil {
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
	services, err := endpoints(ctx, c, namespace, pod.Labels, ip, port)
	if err != nil {
		return err
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	kubeconfig := filepath.Join(root, "kubeconfig")
	if err := serviceAccountKubeconfig(ctx, c, namespace, sa, kubeconfig); err != nil {
		return err
	}
	args := podArgs(ctr, mounts)
	// the flags the stand-in sets last, and so wins: where it listens,
	// and the kubeconfig of its token
	// (the metrics listener is off: shards side by side on one host
	// would share its port)
	args = append(args, "-listen", net.JoinHostPort(ip.String(), fmt.Sprint(port)), "-metrics-listen", "", "-kubeconfig", kubeconfig)
	cmd := exec.Command(binary, args...)
	env, err := podEnv(ctr.Env, podName, namespace, sa)
	if err != nil {
		return fmt.Errorf("deployment %s/%s: %w", namespace, name, err)
	}
	cmd.Env = append(os.Environ(), env...)
	p, err := c.Spawn(podName, cmd)
	if err != nil {
		return err
	}
	if err := p.WaitLog(ctx, "msg=started", 2*time.Minute); err != nil {
		return err
	}
	var ca []byte
	for _, dir := range mounts {
		if b, err := os.ReadFile(filepath.Join(dir, "ca.crt")); err == nil {
			ca = b
		}
	}
	if ca == nil {
		return fmt.Errorf("deployment %s/%s: no volume holds the webhook's ca.crt", namespace, name)
	}
	return waitService(ctx, c, namespace, services[0], ca)
}

// writeVolumes writes the Secret and ConfigMap volumes the container
// mounts under root and returns the mount paths with their folders.
func writeVolumes(ctx context.Context, c *testcluster.Cluster, namespace string, spec corev1.PodSpec, ctr corev1.Container, root string) (map[string]string, error) {
	mounts := map[string]string{}
	for _, m := range ctr.VolumeMounts {
		var data map[string][]byte
		for _, v := range spec.Volumes {
			if v.Name != m.Name {
				continue
			}
			switch {
			case v.Secret != nil:
				s, err := c.Kube.CoreV1().Secrets(namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				data = s.Data
			case v.ConfigMap != nil:
				cm, err := c.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				data = map[string][]byte{}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
			default:
				continue // an emptyDir and the like: nothing to write
			}
		}
		dir := filepath.Join(root, "volumes", m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		for k, v := range data {
			if err := os.WriteFile(filepath.Join(dir, k), v, 0o600); err != nil {
				return nil, err
			}
		}
		mounts[strings.TrimSuffix(m.MountPath, "/")] = dir
	}
	return mounts, nil
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

// endpoints writes an EndpointSlice for each Service of namespace whose
// selector selects the Pod's labels: its ports at ip:port, where the
// process listens.
func endpoints(ctx context.Context, c *testcluster.Cluster, namespace string, podLabels map[string]string, ip net.IP, port int) ([]string, error) {
	svcs, err := c.Kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, svc := range svcs.Items {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(podLabels)) {
			continue
		}
		ready, p := true, int32(port)
		es := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-stand-in", Namespace: namespace,
				Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "gavel-judge"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		}
		for _, sp := range svc.Spec.Ports {
			name, proto := sp.Name, sp.Protocol
			es.Ports = append(es.Ports, discoveryv1.EndpointPort{Name: &name, Port: &p, Protocol: &proto})
		}
		if _, err := c.Kube.DiscoveryV1().EndpointSlices(namespace).Create(ctx, es, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		names = append(names, svc.Name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no Service of namespace %s selects the Pods %v", namespace, podLabels)
	}
	return names, nil
}

// serviceAccountKubeconfig writes a kubeconfig with a token of a
// ServiceAccount, so that the stand-in runs with the rights the
// manifests give it, as its Pods would.
func serviceAccountKubeconfig(ctx context.Context, c *testcluster.Cluster, namespace, name, path string) error {
	exp := int64((24 * time.Hour).Seconds())
	tr, err := c.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return c.WriteKubeconfig(path, "system:serviceaccount:"+namespace+":"+name, tr.Status.Token)
}

// waitService waits until the API server reaches gavel's webhook through
// its Service, the EndpointSlice and its certificate (signed by ca): a
// probe webhook of its own, with failurePolicy Fail, on the dry-run
// creation of a labelled ConfigMap, until the creation succeeds.
func waitService(ctx context.Context, c *testcluster.Cluster, namespace, service string, ca []byte) error {
	fail, none, path := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone, "/validate"
	probe := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "gavel-judge-probe"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "probe.judge.gavel.io", AdmissionReviewVersions: []string{"v1"}, SideEffects: &none, FailurePolicy: &fail,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca,
				Service: &admissionregistrationv1.ServiceReference{Namespace: namespace, Name: service, Path: &path}},
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
