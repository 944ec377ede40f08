//go:build e2e

package chainsaw

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/e2e/internal/testcluster"
)

// kindStandIns adds to the cluster what upstream's kind cluster has and
// the tests read: its Nodes (kindNodes), the stand-in CRDs and upstream's
// installation ConfigMap (testdata/crds.yaml, testdata/kind.yaml).
func kindStandIns(ctx context.Context, c *testcluster.Cluster) error {
	for _, n := range kindNodes() {
		if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("node %s: %w", n.Name, err)
		}
	}
	for _, f := range []string{"crds.yaml", "kind.yaml"} {
		if err := c.ApplyFile(ctx, filepath.Join("testdata", f)); err != nil {
			return err
		}
	}
	return c.WaitCRDs(ctx, time.Minute)
}

// kindNodes are the Nodes of the kind cluster of upstream's CI (one
// control plane, three workers, kindest/node images running containerd):
// objects only, as a kubelet registers them; no kubelet runs, so no Pod
// is scheduled. Tests read their labels and runtime, and label them.
func kindNodes() []*corev1.Node {
	var nodes []*corev1.Node
	for i, name := range []string{"kind-control-plane", "kind-worker", "kind-worker2", "kind-worker3"} {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
			}},
			Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)},
			Status: corev1.NodeStatus{
				Capacity:    nodeResources(),
				Allocatable: nodeResources(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
					Reason: "KubeletReady", Message: "kubelet is posting ready status"}},
				NodeInfo: corev1.NodeSystemInfo{
					Architecture: "amd64", OperatingSystem: "linux", OSImage: "Debian GNU/Linux 12 (bookworm)",
					KernelVersion: "6.8.0", ContainerRuntimeVersion: "containerd://2.1.1", KubeletVersion: kubeVersion,
				},
			},
		}
		if i == 0 {
			// kind's control plane; upstream's kind configuration adds
			// ingress-ready
			n.Labels["node-role.kubernetes.io/control-plane"] = ""
			n.Labels["ingress-ready"] = "true"
			n.Spec.Taints = []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}}
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}
