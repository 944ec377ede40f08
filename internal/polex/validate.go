package polex

import (
	"slices"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/internal/match"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod Security Standards controls evaluated per container (an exemption
// must name images) and per pod (an exemption must not), as upstream lists
// them.
var (
	containerLevelControls = []string{"Capabilities", "Privileged Containers", "Host Ports", "/proc Mount Type", "Privilege Escalation"}
	podLevelControls       = []string{"Host Namespaces", "HostPath Volumes", "Sysctls", "AppArmor", "Volume Types"}
)

func compileOne(pe *api.PolicyException) (*Exception, field.ErrorList) {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if pe.Spec.BackgroundEnabled() {
		errs = append(errs, noUserInfo(&pe.Spec.Match, spec.Child("match"))...)
		if pe.Spec.Exclude != nil {
			errs = append(errs, noUserInfo(pe.Spec.Exclude, spec.Child("exclude"))...)
		}
	}
	m, merrs := match.CompileFilter(pe.Spec.Match, spec.Child("match"))
	errs = append(errs, merrs...)
	var ex *match.Filter
	if pe.Spec.Exclude != nil {
		var xerrs field.ErrorList
		ex, xerrs = match.CompileFilter(*pe.Spec.Exclude, spec.Child("exclude"))
		errs = append(errs, xerrs...)
	}
	for i, item := range pe.Spec.Exceptions {
		if item.PolicyName == "" {
			errs = append(errs, field.Required(spec.Child("exceptions").Index(i).Child("policyName"), "An exception requires a policy name"))
		}
	}
	for i := range pe.Spec.PodSecurity {
		errs = append(errs, validatePodSecurity(&pe.Spec.PodSecurity[i], spec.Child("podSecurity").Index(i))...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &Exception{
		Source:     pe,
		Match:      m,
		Exclude:    ex,
		Conditions: pe.Spec.Conditions,
		key:        exceptionKey(pe.Namespace, pe.Name),
	}, nil
}

// noUserInfo forbids roles, clusterRoles and subjects (background mode).
func noUserInfo(m *api.MatchResources, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	check := func(u *api.UserInfo, p *field.Path) {
		if len(u.Roles) > 0 {
			errs = append(errs, field.Forbidden(p.Child("roles"), "Usage of user info is forbidden"))
		}
		if len(u.ClusterRoles) > 0 {
			errs = append(errs, field.Forbidden(p.Child("clusterRoles"), "Usage of user info is forbidden"))
		}
		if len(u.Subjects) > 0 {
			errs = append(errs, field.Forbidden(p.Child("subjects"), "Usage of user info is forbidden"))
		}
	}
	for i := range m.Any {
		check(&m.Any[i].UserInfo, path.Child("any").Index(i))
	}
	for i := range m.All {
		check(&m.All[i].UserInfo, path.Child("all").Index(i))
	}
	return errs
}

func validatePodSecurity(p *api.PodSecurityStandard, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case slices.Contains(containerLevelControls, p.ControlName):
		if len(p.Images) == 0 {
			errs = append(errs, field.Invalid(path.Child("controlName"), p.ControlName, "exclude.images must be specified for the container level control"))
		}
	case slices.Contains(podLevelControls, p.ControlName):
		if len(p.Images) != 0 {
			errs = append(errs, field.Invalid(path.Child("controlName"), p.ControlName, "exclude.images must not be specified for the pod level control"))
		}
	}
	if p.RestrictedField != "" && len(p.Values) == 0 {
		errs = append(errs, field.Forbidden(path.Child("values"), "values is required"))
	}
	if p.RestrictedField == "" && len(p.Values) != 0 {
		errs = append(errs, field.Forbidden(path.Child("restrictedField"), "restrictedField is required"))
	}
	return errs
}
