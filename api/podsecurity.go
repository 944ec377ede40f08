package api

// PodSecurity configures a validate.podSecurity rule: a Pod Security
// Standards level and version, with exemptions.
//
// Level is one of "privileged", "baseline" or "restricted". Version is
// "latest" (the default when empty) or a pinned "v1.N". Exclude lists the
// controls (optionally narrowed to images, a restricted field and its
// allowed values) that the rule does not enforce.
type PodSecurity struct {
	Level   string                `json:"level,omitempty"`
	Version string                `json:"version,omitempty"`
	Exclude []PodSecurityStandard `json:"exclude,omitempty"`
}

// PodSecurityStandard exempts a control, optionally only for some images or
// for some values of a restricted field. It is used both in
// validate.podSecurity.exclude and in a PolicyException's podSecurity list.
//
// ControlName is a Pod Security Standards control name such as
// "Capabilities" or "Running as Non-root". Images selects the containers the
// exemption applies to (wildcards '*' and '?'); without images the exemption
// applies at the pod level. RestrictedField (for example
// "spec.containers[*].securityContext.capabilities.add") and Values narrow
// the exemption to the listed values of that field.
type PodSecurityStandard struct {
	ControlName     string   `json:"controlName"`
	Images          []string `json:"images,omitempty"`
	RestrictedField string   `json:"restrictedField,omitempty"`
	Values          []string `json:"values,omitempty"`
}
