//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cluster"
)

const csyncPolicy = `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: csync-defaults
spec:
  generateExisting: true
  rules:
  - name: defaults
    match:
      any:
      - resources:
          kinds: [Namespace]
          selector:
            matchLabels:
              gavel-e2e: csync
    generate:
      apiVersion: v1
      kind: ConfigMap
      name: csync-defaults
      namespace: "{{request.object.metadata.name}}"
      synchronize: true
      data:
        data:
          owner: gavel
`

// stopControllers stops the controllers earlier tests left running, so
// that the test decides when one runs.
func (e *env) stopControllers() {
	for _, p := range e.Procs() {
		if strings.HasPrefix(p.Name, "controller") || strings.HasPrefix(p.Name, "csync") {
			if p.Running() {
				p.Stop()
			}
		}
	}
}

// TestControllerCatchesUp: what happens while no controller runs is done
// when one starts. A generate policy with generateExisting created with no
// controller is applied to the existing Namespaces; a downstream
// ConfigMap edited while the controller is down is reverted after it
// restarts.
func TestControllerCatchesUp(t *testing.T) {
	e := suite
	ctx := context.Background()
	e.stopControllers()
	for _, ns := range []string{"csync-a", "csync-b"} {
		e.namespace(t, ns, map[string]string{"gavel-e2e": "csync"})
	}
	docs, err := api.ReadDocuments(strings.NewReader(csyncPolicy), "policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Apply(ctx, docs[0].Object); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if _, err := e.configMap("csync-a", "csync-defaults"); !apierrors.IsNotFound(err) {
		t.Fatalf("downstream with no controller: %v", err)
	}
	owners := func(want string) func() bool {
		return func() bool {
			for _, ns := range []string{"csync-a", "csync-b"} {
				cm, err := e.configMap(ns, "csync-defaults")
				if err != nil || cm.Data["owner"] != want {
					return false
				}
			}
			return true
		}
	}

	start := time.Now()
	c1 := e.gavel(t, "csync-1", "-webhook=false")
	eventually(t, 60*time.Second, "generateExisting applied by the new controller", owners("gavel"))
	t.Logf("policy created with no controller: applied %s after the controller started", time.Since(start).Round(time.Millisecond))
	// the record of a policy: the ConfigMap its annotation names it in
	// (its name is a hash of the policy's key, the cluster package's own)
	recorded := func(policy string) (bool, error) {
		l, err := e.Kube.CoreV1().ConfigMaps("gavel").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, cm := range l.Items {
			if cm.Annotations[cluster.AnnotationStatePolicy] == policy {
				return true, nil
			}
		}
		return false, nil
	}
	eventually(t, 30*time.Second, "the policy recorded", func() bool {
		ok, err := recorded("csync-defaults")
		return err == nil && ok
	})

	c1.Kill() // a crash: the lease is not released
	cm, err := e.configMap("csync-a", "csync-defaults")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["owner"] = "someone"
	if _, err := e.Kube.CoreV1().ConfigMaps("csync-a").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	c2 := e.gavel(t, "csync-2", "-webhook=false")
	defer c2.Stop() // released: the next test's controller leads at once
	eventually(t, 60*time.Second, "the edit made while no controller ran reverted", owners("gavel"))
	t.Logf("edit with no controller: reverted %s after the controller started (lease expiry included)", time.Since(start).Round(time.Millisecond))

	// while it leads: an edit goes through an UpdateRequest
	cm, _ = e.configMap("csync-b", "csync-defaults")
	cm.Data["owner"] = "someone"
	if _, err := e.Kube.CoreV1().ConfigMaps("csync-b").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the edit reverted by the leader", owners("gavel"))
	eventually(t, 30*time.Second, "no UpdateRequest left", func() bool { return e.pendingURs(t) == 0 })

	// the policy deleted: its synchronized downstream goes, its record too
	if err := e.Dynamic.Resource(clusterPolicies).Delete(ctx, "csync-defaults", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the downstream deleted with the policy", func() bool {
		_, errA := e.configMap("csync-a", "csync-defaults")
		_, errB := e.configMap("csync-b", "csync-defaults")
		return apierrors.IsNotFound(errA) && apierrors.IsNotFound(errB)
	})
	eventually(t, 30*time.Second, "the record removed", func() bool {
		ok, err := recorded("csync-defaults")
		return err == nil && !ok
	})
}

// TestCertsManifests: the example's certs subcommand prints a TLS Secret
// the API server accepts, with the CA gavel puts in its webhook
// configurations.
func TestCertsManifests(t *testing.T) {
	e := suite
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(e.binary, "certs", "-secret", "certs-test")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	docs, err := api.ReadDocuments(&stdout, "certs")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%d documents, want the Secret", len(docs))
	}
	defer func() { _ = e.Kube.CoreV1().Secrets("gavel").Delete(ctx, "certs-test", metav1.DeleteOptions{}) }()
	if err := e.Apply(ctx, docs[0].Object); err != nil {
		t.Fatal(err)
	}
	sec, err := e.Kube.CoreV1().Secrets("gavel").Get(ctx, "certs-test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Type) != "kubernetes.io/tls" || len(sec.Data["tls.key"]) == 0 || len(sec.Data["ca.crt"]) == 0 {
		t.Errorf("Secret %s %v", sec.Type, slices.Collect(maps.Keys(sec.Data)))
	}
}
