package cluster

import (
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gavelpolicy/gavel/api"
)

func TestRoleBindingsOf(t *testing.T) {
	rb := func(ns, name, kind, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}, Subjects: subjects}
	}
	crb := func(name, role string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	user := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: n} }
	group := func(n string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.GroupKind, Name: n} }
	sa := func(ns, n string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: n}
	}
	objs := []runtime.Object{
		crb("kubeadm:cluster-admins", "cluster-admin", group("kubeadm:cluster-admins")),
		crb("view-alice", "view", user("alice")),
		crb("view-again", "view", user("alice")), // a duplicate role
		crb("sa-edit", "edit", sa("ci", "deployer")),
		rb("team-a", "alice-dev", "Role", "dev", user("alice")),
		rb("team-b", "alice-ops", "Role", "ops", user("alice"), user("bob")),
		rb("team-a", "alice-admin", "ClusterRole", "admin", user("alice")),
		// a ServiceAccount subject without namespace: the binding's
		rb("ci", "deployer", "Role", "deploy", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "deployer"}),
		rb("team-a", "nobody", "Role", "none", user("carol")),
	}
	var r *RoleBindings
	fakeHost(t, objs, nil, func(h *Host) { r = NewRoleBindings(h) })
	tests := []struct {
		name         string
		namespace    string
		user         api.UserInfoData
		roles, crole []string
	}{
		{name: "group bound to cluster-admin", namespace: "x",
			user:  api.UserInfoData{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}},
			crole: []string{"cluster-admin"}},
		{name: "roles in every namespace, cluster roles of the request's", namespace: "team-a",
			user:  api.UserInfoData{Username: "alice"},
			roles: []string{"team-a:dev", "team-b:ops"}, crole: []string{"admin", "view"}},
		{name: "a RoleBinding's ClusterRole counts in its namespace only", namespace: "team-b",
			user:  api.UserInfoData{Username: "alice"},
			roles: []string{"team-a:dev", "team-b:ops"}, crole: []string{"view"}},
		{name: "ServiceAccount", namespace: "ci",
			user:  api.UserInfoData{Username: "system:serviceaccount:ci:deployer"},
			roles: []string{"ci:deploy"}, crole: []string{"edit"}},
		{name: "a ServiceAccount's name is not a user name", namespace: "ci",
			user: api.UserInfoData{Username: "deployer"}},
		{name: "nothing bound", namespace: "team-a", user: api.UserInfoData{Username: "dave", Groups: []string{"devs"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			roles, crole, err := r.Of(tc.namespace, tc.user)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(roles, tc.roles) || !reflect.DeepEqual(crole, tc.crole) {
				t.Errorf("Of = %q, %q; want %q, %q", roles, crole, tc.roles, tc.crole)
			}
		})
	}
}
