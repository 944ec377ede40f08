//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// as returns a clientset that impersonates user (the suite's token is
// system:masters): the admission requests carry that user.
func (e *env) as(user string) kubernetes.Interface {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

func denial(ns, name, lines string) string {
	return "admission webhook \"validate.gavel.io\" denied the request: \n\nresource Pod/" + ns + "/" + name +
		" was blocked due to the following policies \n\n" + lines
}

// celScenario: validate.cel rules through the webhook against the API
// server. The authorizer variable asks SubjectAccessReviews for the
// requesting user (RBAC objects made here), namespaceObject is the
// Namespace read through the host's Client, and paramKind/paramRef read
// a ConfigMap of the request's namespace, live.
func celScenario(t *testing.T, e *env) {
	ctx := context.Background()
	e.namespace(t, "cel", map[string]string{"tier": "restricted"})
	rbac := e.Kube.RbacV1()
	// alice and bob may create Pods in cel; only alice may create
	// PriorityClasses
	if _, err := rbac.Roles("cel").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-writer", Namespace: "cel"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "delete"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("cel").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-writer", Namespace: "cel"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-writer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"},
			{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "bob"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "priorityclass-creator"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"scheduling.k8s.io"}, Resources: []string{"priorityclasses"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "priorityclass-creator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "priorityclass-creator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cms := e.Kube.CoreV1().ConfigMaps("cel")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "image-rules", Namespace: "cel"},
		Data: map[string]string{"prefix": "registry.example/"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.ApplyFile(ctx, filepath.Join("testdata", "cel.yaml")); err != nil {
		t.Fatal(err)
	}
	alice, bob := e.as("alice").CoreV1().Pods("cel"), e.as("bob").CoreV1().Pods("cel")
	priority := map[string]string{"gavel.io/priority": "high"}
	pod := func(name string, labels map[string]string, image string) *corev1.Pod {
		p := testPod("cel", name, labels)
		p.Spec.Containers[0].Image = image
		return p
	}

	// bob may not set the label: the webhook may not have the policies
	// yet, and RBAC may not have bob's Role yet: retry until gavel denies
	var err error
	eventually(t, 30*time.Second, "the authorizer's denial", func() bool {
		_, err = bob.Create(ctx, pod("bob-priority", priority, "registry.example/nginx"), metav1.CreateOptions{})
		if err == nil {
			_ = e.Kube.CoreV1().Pods("cel").Delete(ctx, "bob-priority", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))})
		}
		return err != nil && strings.Contains(err.Error(), "priority-label")
	})
	want := denial("cel", "bob-priority", "priority-label:\n  priority-creators: only users who may create PriorityClasses may set gavel.io/priority in restricted namespaces\n")
	if err.Error() != want {
		t.Errorf("denial:\n%q\nwant\n%q", err.Error(), want)
	}
	// alice may
	eventually(t, 30*time.Second, "alice's Pod admitted", func() bool {
		_, err = alice.Create(ctx, pod("alice-priority", priority, "registry.example/nginx"), metav1.CreateOptions{})
		return err == nil
	})

	// the ConfigMap's prefix
	_, err = bob.Create(ctx, pod("bob-nginx", nil, "nginx:1.27"), metav1.CreateOptions{})
	want = denial("cel", "bob-nginx", "image-prefix:\n  prefix-from-configmap: images must start with registry.example/\n")
	if err == nil || err.Error() != want {
		t.Errorf("denial:\n%v\nwant\n%q", err, want)
	}
	if _, err := bob.Create(ctx, pod("bob-plain", nil, "registry.example/nginx"), metav1.CreateOptions{}); err != nil {
		t.Errorf("bob's Pod without the label: %v", err)
	}
	// parameters are read on each request: a change takes effect
	cm, err := cms.Get(ctx, "image-rules", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["prefix"] = "mirror.example/"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = bob.Create(ctx, pod("bob-old-registry", nil, "registry.example/nginx"), metav1.CreateOptions{})
	want = denial("cel", "bob-old-registry", "image-prefix:\n  prefix-from-configmap: images must start with mirror.example/\n")
	if err == nil || err.Error() != want {
		t.Errorf("after the ConfigMap changed:\n%v\nwant\n%q", err, want)
	}
	// without the ConfigMap, parameterNotFoundAction Deny
	if err := cms.Delete(ctx, "image-rules", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = bob.Create(ctx, pod("bob-no-params", nil, "mirror.example/nginx"), metav1.CreateOptions{})
	want = denial("cel", "bob-no-params", "image-prefix:\n  prefix-from-configmap: 'error in parameterized resource: configmaps \"image-rules\" not found'\n")
	if err == nil || err.Error() != want {
		t.Errorf("without the ConfigMap:\n%v\nwant\n%q", err, want)
	}
}
