package api

// PodSecurity configures a validate.podSecurity rule: a Pod Security
// Standards level and version, with exemptions.
type PodSecurity struct {
	Level   string                `json:"level,omitempty"`
	Version string                `json:"version,omitempty"`
	Exclude []PodSecurityStandard `json:"exclude,omitempty"`
}

// PodSecurityStandard exempts a control, optionally only for some images or
// for some values of a restricted field.
type PodSecurityStandard struct {
	ControlName     string   `json:"controlName"`
	Images          []string `json:"images,omitempty"`
	RestrictedField string   `json:"restrictedField,omitempty"`
	Values          []string `json:"values,omitempty"`
}
