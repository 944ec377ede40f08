package cluster

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"github.com/gavelpolicy/gavel/api"
)

// RoleBindings tells which RBAC roles are bound to the user of an
// admission request, from informers of the RoleBindings and
// ClusterRoleBindings, as upstream's webhooks fill the request's roles
// and clusterRoles, which match and exclude blocks (roles,
// clusterRoles) and the request.roles and request.clusterRoles
// variables read. An admission request carries only the user's name and
// groups: without RoleBindings a policy excluding cluster-admin excludes
// no one. Safe for concurrent use.
type RoleBindings struct {
	roleBindings        rbaclisters.RoleBindingLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// NewRoleBindings registers the informers of the RoleBindings and
// ClusterRoleBindings with h: call it before h.Start, which fills them.
func NewRoleBindings(h *Host) *RoleBindings {
	rbac := h.factory.Rbac().V1()
	r := &RoleBindings{roleBindings: rbac.RoleBindings().Lister(), clusterRoleBindings: rbac.ClusterRoleBindings().Lister()}
	rbac.RoleBindings().Informer()
	rbac.ClusterRoleBindings().Informer()
	return r
}

// Of returns the roles bound to user for a request in namespace, as
// upstream computes them: the Roles of the RoleBindings (in any
// namespace) whose subjects name the user, as "namespace:name"; the
// ClusterRoles of the ClusterRoleBindings whose subjects name the user,
// and of the RoleBindings of namespace that bind a ClusterRole to it.
// Both are sorted, without duplicates.
func (r *RoleBindings) Of(namespace string, user api.UserInfoData) (roles, clusterRoles []string, err error) {
	rbs, err := r.roleBindings.List(labels.Everything())
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: listing RoleBindings: %w", err)
	}
	for _, rb := range rbs {
		if !bindsUser(rb.Subjects, user, rb.Namespace) {
			continue
		}
		switch rb.RoleRef.Kind {
		case "Role":
			roles = append(roles, rb.Namespace+":"+rb.RoleRef.Name)
		case "ClusterRole":
			if rb.Namespace == namespace {
				clusterRoles = append(clusterRoles, rb.RoleRef.Name)
			}
		}
	}
	crbs, err := r.clusterRoleBindings.List(labels.Everything())
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: listing ClusterRoleBindings: %w", err)
	}
	for _, crb := range crbs {
		if crb.RoleRef.Kind == "ClusterRole" && bindsUser(crb.Subjects, user, "") {
			clusterRoles = append(clusterRoles, crb.RoleRef.Name)
		}
	}
	return sortedSet(roles), sortedSet(clusterRoles), nil
}

// bindsUser reports whether one of a binding's subjects is the user: its
// name, one of its groups, or its ServiceAccount (the subject's namespace
// defaulting to the binding's).
func bindsUser(subjects []rbacv1.Subject, user api.UserInfoData, bindingNamespace string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			if s.Name == user.Username {
				return true
			}
		case rbacv1.GroupKind:
			if slices.Contains(user.Groups, s.Name) {
				return true
			}
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && user.Username == "system:serviceaccount:"+ns+":"+s.Name {
				return true
			}
		}
	}
	return false
}

func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	return slices.Compact(s)
}
