package podsecurity

import "sort"

// controlScope says where the restricted fields of a control live, which
// decides whether an exclusion of it must or must not name images.
type controlScope int

const (
	// scopeEither: fields at the pod level and at the container level (or in
	// the metadata); images are optional.
	scopeEither controlScope = iota
	// scopeContainer: container fields only; an exclusion must name images.
	scopeContainer
	// scopePod: pod fields only; an exclusion must not name images.
	scopePod
)

// control is a Pod Security Standards control under the name Kyverno users
// write in controlName, with the library check IDs it stands for.
type control struct {
	name  string
	ids   []string
	scope controlScope
}

// controlTable lists the controls by their upstream names.
var controlTable = []control{
	{name: "HostProcess", ids: []string{"windowsHostProcess"}, scope: scopeEither},
	{name: "Host Namespaces", ids: []string{"hostNamespaces"}, scope: scopePod},
	{name: "Privileged Containers", ids: []string{"privileged"}, scope: scopeContainer},
	{name: "Capabilities", ids: []string{"capabilities_baseline", "capabilities_restricted"}, scope: scopeContainer},
	{name: "HostPath Volumes", ids: []string{"hostPathVolumes"}, scope: scopePod},
	{name: "Host Ports", ids: []string{"hostPorts"}, scope: scopeContainer},
	{name: "Host Probes / Lifecycle Hooks", ids: []string{"hostProbesAndHostLifecycle"}, scope: scopeContainer},
	{name: "AppArmor", ids: []string{"appArmorProfile"}, scope: scopeEither},
	{name: "SELinux", ids: []string{"seLinuxOptions"}, scope: scopeEither},
	{name: "/proc Mount Type", ids: []string{"procMount", "procMount_restricted"}, scope: scopeContainer},
	{name: "Seccomp", ids: []string{"seccompProfile_baseline", "seccompProfile_restricted"}, scope: scopeEither},
	{name: "Sysctls", ids: []string{"sysctls"}, scope: scopePod},
	{name: "Volume Types", ids: []string{"restrictedVolumes"}, scope: scopePod},
	{name: "Privilege Escalation", ids: []string{"allowPrivilegeEscalation"}, scope: scopeContainer},
	{name: "Running as Non-root", ids: []string{"runAsNonRoot"}, scope: scopeEither},
	{name: "Running as Non-root user", ids: []string{"runAsUser"}, scope: scopeEither},
}

// restrictedOnlyControls cannot be exempted by a baseline rule.
var restrictedOnlyControls = map[string]bool{
	"Volume Types":             true,
	"Privilege Escalation":     true,
	"Running as Non-root":      true,
	"Running as Non-root user": true,
}

// controlsByName and controlNameByID index controlTable; they are built once
// when the package is initialised and never written afterwards.
var (
	controlsByName  = indexControls()
	controlNameByID = indexControlIDs()
	// controlIndex and controlIndexByID give the index of a control in
	// controlTable by its name and by the IDs of its checks
	controlIndex, controlIndexByID = indexControlIndexes()
)

func indexControlIndexes() (byName, byID map[string]int) {
	byName, byID = map[string]int{}, map[string]int{}
	for i, c := range controlTable {
		byName[c.name] = i
		for _, id := range c.ids {
			byID[id] = i
		}
	}
	return byName, byID
}

// controlOf is the index in controlTable of the control a check ID
// belongs to, or -1.
func controlOf(checkID string) int {
	if i, ok := controlIndexByID[checkID]; ok {
		return i
	}
	return -1
}

func indexControls() map[string]control {
	m := make(map[string]control, len(controlTable))
	for _, c := range controlTable {
		m[c.name] = c
	}
	return m
}

func indexControlIDs() map[string]string {
	m := make(map[string]string)
	for _, c := range controlTable {
		for _, id := range c.ids {
			m[id] = c.name
		}
	}
	return m
}

// ControlNames returns the control names accepted in controlName, sorted.
func ControlNames() []string {
	names := make([]string, 0, len(controlTable))
	for _, c := range controlTable {
		names = append(names, c.name)
	}
	sort.Strings(names)
	return names
}

// ControlName returns the control name of a library check ID (for example
// "Capabilities" for "capabilities_restricted"), or "" when unknown.
func ControlName(checkID string) string {
	return controlNameByID[checkID]
}
