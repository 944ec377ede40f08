package report

import (
	"encoding/json"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/internal/podsecurity"
)

// Format selects the API of the reports.
type Format int

// Report formats.
const (
	// WGPolicy is wgpolicyk8s.io/v1alpha2 PolicyReport and
	// ClusterPolicyReport (*api.PolicyReport, *api.ClusterPolicyReport).
	WGPolicy Format = iota
	// OpenReports is openreports.io/v1alpha1 Report and ClusterReport
	// (*api.OpenReport, *api.OpenClusterReport), what the upstream CLI
	// prints since it moved to OpenReports.
	OpenReports
)

// String returns "wgpolicy" or "openreports".
func (f Format) String() string {
	if f == OpenReports {
		return "openreports"
	}
	return "wgpolicy"
}

// Policy annotations read for report entries.
const (
	annotationScored   = "policies.kyverno.io/scored"
	annotationCategory = "policies.kyverno.io/category"
	annotationSeverity = "policies.kyverno.io/severity"
)

// Entry properties set by the package (besides the rule's reportProperties).
const (
	propertyProcess      = "process"
	propertyExceptions   = "exceptions"
	propertyStandard     = "standard"
	propertyVersion      = "version"
	propertyControls     = "controls"
	propertyControlsJSON = "controlsJSON"

	processBackground = "background scan"
	processAdmission  = "admission review"
)

// defaultSource is the source of report entries when Options.Source is empty.
const defaultSource = "kyverno"

// Options configures Build, NewStore, NewStream and AdmissionEntries. The
// zero value is ready to use.
type Options struct {
	// Clock gives the timestamps of report entries (seconds precision, as
	// upstream). Nil means time.Now, the engine's default clock; an
	// engine built WithClock is given the same function as Clock.
	Clock func() time.Time
	// Source is the source of every entry; "kyverno" when empty.
	Source string
	// AuditWarn reports the fail results of policies whose effective
	// failure action is Audit as warn (the CLI's --audit-warn).
	AuditWarn bool
	// Format selects wgpolicyk8s.io (the default) or openreports.io
	// reports.
	Format Format
}

func (o Options) source() string {
	if o.Source == "" {
		return defaultSource
	}
	return o.Source
}

func (o Options) now() metav1.Timestamp {
	if o.Clock == nil {
		return metav1.Timestamp{Seconds: time.Now().Unix()}
	}
	return metav1.Timestamp{Seconds: o.Clock().Unix()}
}

// convert makes the report entry of rule result rr of pr, as upstream's
// CLI does (ComputePolicyReportResult on top of ToPolicyReportResult):
//
//   - policy is the policy key ("name", or "namespace/name" for a Policy),
//     rule and message are the rule's;
//   - result is the rule status; fail becomes warn when the policy is
//     annotated policies.kyverno.io/scored: "false" (then scored is false),
//     or with auditWarn when pr.FailureAction is Audit;
//   - category and severity come from the policies.kyverno.io/category and
//     policies.kyverno.io/severity annotations (severity only when it is
//     critical, high, medium, low or info);
//   - resources holds ref, the reference to pr.Resource (apiVersion, kind,
//     name, namespace, uid, resourceVersion);
//   - properties are the rule's reportProperties, plus process ("background
//     scan" when the policy runs in background, else "admission review"),
//     exceptions (names of the PolicyExceptions that skipped the rule, comma
//     separated) and, for failed Pod Security checks, standard, version,
//     controls and controlsJSON.
//
// It is the one place that decides what an entry holds: the encoders that
// render entries without building them (entryEncoder) take every field from
// headOf, EntryResult and entryProperties, as it does.
func convert(pr *engine.PolicyResult, rr *engine.RuleResult, source string, ts metav1.Timestamp, auditWarn bool, ref api.ObjectReference) api.PolicyReportResult {
	h := headOf(pr.Policy)
	if h.source != "" {
		source = h.source
	}
	return api.PolicyReportResult{
		Source:     source,
		Policy:     h.key,
		Rule:       rr.Name,
		Category:   h.category,
		Severity:   h.severity,
		Timestamp:  ts,
		Result:     h.result(pr, rr, auditWarn),
		Scored:     h.scored,
		Resources:  []api.ObjectReference{ref},
		Message:    rr.Message,
		Properties: entryProperties(pr, rr),
	}
}

// head is what the entries of a policy take from it: the policy key, the
// category, severity and scored flag of its annotations, and its process.
type head struct {
	key, category string
	severity      api.PolicyResultSeverity
	scored        bool
	process       string
	// source is the source of a CEL kind's entries ("" for ClusterPolicy
	// and Policy, whose entries have the Options' source)
	source string
}

// Sources of the entries of CEL policy kinds, upstream's.
const (
	SourceValidatingPolicy          = "KyvernoValidatingPolicy"
	SourceImageValidatingPolicy     = "KyvernoImageValidatingPolicy"
	SourceValidatingAdmissionPolicy = "ValidatingAdmissionPolicy"
	SourceMutatingPolicy            = "KyvernoMutatingPolicy"
	SourceMutatingAdmissionPolicy   = "MutatingAdmissionPolicy"
	SourceGeneratingPolicy          = "KyvernoGeneratingPolicy"
)

// kindSource is the source of the entries of a policy kind: upstream's
// for the CEL kinds, "" for the others.
func kindSource(kind string) string {
	switch kind {
	case api.KindValidatingPolicy, api.KindNamespacedValidatingPolicy:
		return SourceValidatingPolicy
	case api.KindImageValidatingPolicy, api.KindNamespacedImageValidatingPolicy:
		return SourceImageValidatingPolicy
	case api.KindValidatingAdmissionPolicy:
		return SourceValidatingAdmissionPolicy
	case api.KindMutatingPolicy, api.KindNamespacedMutatingPolicy:
		return SourceMutatingPolicy
	case api.KindMutatingAdmissionPolicy:
		return SourceMutatingAdmissionPolicy
	case api.KindGeneratingPolicy, api.KindNamespacedGeneratingPolicy:
		return SourceGeneratingPolicy
	}
	return ""
}

func headOf(p *engine.Policy) head {
	if p == nil {
		return head{scored: true}
	}
	annotations := p.Source().GetAnnotations()
	return head{
		key:      p.Key(),
		category: annotations[annotationCategory],
		severity: severity(annotations[annotationSeverity]),
		scored:   annotations[annotationScored] != "false",
		process:  process(p),
		source:   kindSource(api.KindOf(p.Source())),
	}
}

// result is the result of an entry: the rule status, fail becoming warn
// when the policy is not scored or, with auditWarn, in Audit mode (for
// the CEL kinds, always: upstream gives them no failure action).
func (h *head) result(pr *engine.PolicyResult, rr *engine.RuleResult, auditWarn bool) api.PolicyResult {
	s := status(rr.Status)
	if s == api.ResultFail && (!h.scored || (auditWarn && (!pr.FailureAction.IsEnforce() || h.source != ""))) {
		return api.ResultWarn
	}
	return s
}

// AuditWarns reports whether --audit-warn turns the fail results of pr
// into warnings: in Audit mode, and always for the CEL policy kinds
// (upstream gives them no failure action).
func AuditWarns(pr *engine.PolicyResult) bool {
	return !pr.FailureAction.IsEnforce() || kindSource(api.KindOf(pr.Policy.Source())) != ""
}

// EntryResult is the result the report entry of rule result rr of pr
// shows, for outputs that show it without building the entry (the CLI's
// text, JSON and JUnit outputs, a test's expected results): the rule's
// status, with fail as warn when the policy is annotated
// policies.kyverno.io/scored: "false", or, with auditWarn (the CLI's
// --audit-warn), when pr's failure action is Audit.
func EntryResult(pr *engine.PolicyResult, rr *engine.RuleResult, auditWarn bool) api.PolicyResult {
	h := headOf(pr.Policy)
	return h.result(pr, rr, auditWarn)
}

// entryProperties are the properties of the entry of rr.
func entryProperties(pr *engine.PolicyResult, rr *engine.RuleResult) map[string]string {
	props := make(map[string]string, len(rr.Properties)+1)
	for k, v := range rr.Properties {
		props[k] = v
	}
	props[propertyProcess] = process(pr.Policy)
	if len(rr.Exceptions) > 0 {
		names := make([]string, len(rr.Exceptions))
		for i, x := range rr.Exceptions {
			names[i] = x[strings.LastIndexByte(x, '/')+1:]
		}
		props[propertyExceptions] = strings.Join(names, ",")
	}
	if len(rr.PodSecurityChecks) > 0 {
		podSecurityProperties(props, pr.Policy, rr)
	}
	return props
}

func status(s engine.Status) api.PolicyResult {
	switch s {
	case engine.StatusPass:
		return api.ResultPass
	case engine.StatusFail:
		return api.ResultFail
	case engine.StatusWarn:
		return api.ResultWarn
	case engine.StatusError:
		return api.ResultError
	case engine.StatusSkip:
		return api.ResultSkip
	}
	return ""
}

func severity(s string) api.PolicyResultSeverity {
	switch s {
	case "critical", "high", "medium", "low", "info":
		return api.PolicyResultSeverity(s)
	}
	return ""
}

// process names how upstream says a policy is applied: a policy that runs
// in background scans is "background scan", else one that runs at
// admission is "admission review", else "".
func process(p *engine.Policy) string {
	if p == nil {
		return ""
	}
	if k := api.KindOf(p.Source()); k == api.KindGeneratingPolicy || k == api.KindNamespacedGeneratingPolicy {
		// upstream's, whatever the policy says
		return processAdmission
	}
	if p.Background() {
		return processBackground
	}
	if p.Admission() {
		return processAdmission
	}
	return ""
}

// control is one failed Pod Security control in the controlsJSON
// property; the field names are upstream's (no JSON tags there either).
type control struct {
	ID     string
	Name   string
	Images []string
}

func podSecurityProperties(props map[string]string, p *engine.Policy, rr *engine.RuleResult) {
	ids := make([]string, len(rr.PodSecurityChecks))
	controls := make([]control, len(rr.PodSecurityChecks))
	for i, c := range rr.PodSecurityChecks {
		name := c.Name
		if name == "" {
			name = podsecurity.ControlName(c.ID)
		}
		ids[i] = c.ID
		controls[i] = control{ID: c.ID, Name: name, Images: c.Images}
	}
	raw, err := controlsJSON(controls)
	if err != nil {
		return
	}
	level, version := podSecuritySpec(p, rr.Name)
	props[propertyStandard] = level
	props[propertyVersion] = version
	props[propertyControls] = strings.Join(ids, ",")
	props[propertyControlsJSON] = string(raw)
}

// controlsJSON is json.Marshal(controls), written directly when every
// string is plain ASCII that JSON writes as is.
func controlsJSON(controls []control) ([]byte, error) {
	if controls == nil {
		return []byte("null"), nil
	}
	n := 2
	for _, c := range controls {
		if !jsonPlain(c.ID) || !jsonPlain(c.Name) {
			return json.Marshal(controls)
		}
		n += len(c.ID) + len(c.Name) + 40
		for _, img := range c.Images {
			if !jsonPlain(img) {
				return json.Marshal(controls)
			}
			n += len(img) + 3
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, c := range controls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"ID":"`...)
		b = append(b, c.ID...)
		b = append(b, `","Name":"`...)
		b = append(b, c.Name...)
		b = append(b, `","Images":`...)
		if c.Images == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j, img := range c.Images {
				if j > 0 {
					b = append(b, ',')
				}
				b = append(append(append(b, '"'), img...), '"')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// jsonPlain reports whether encoding/json writes s between quotes as is:
// printable ASCII other than the characters it escapes.
func jsonPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// podSecuritySpec returns the level and version written in the policy's
// validate.podSecurity of the named rule.
func podSecuritySpec(p *engine.Policy, ruleName string) (level, version string) {
	if p == nil {
		return "", ""
	}
	for _, r := range p.Rules() {
		if r == nil || r.Name != ruleName {
			continue
		}
		if r.Validation != nil && r.Validation.PodSecurity != nil {
			return r.Validation.PodSecurity.Level, r.Validation.PodSecurity.Version
		}
		return "", ""
	}
	return "", ""
}

// resourceRef refers to a resource by apiVersion, kind, name, namespace,
// uid and resourceVersion, the fields upstream's CLI copies.
func resourceRef(obj map[string]any) api.ObjectReference {
	md, _ := obj["metadata"].(map[string]any)
	return api.ObjectReference{
		APIVersion:      str(obj["apiVersion"]),
		Kind:            str(obj["kind"]),
		Name:            str(md["name"]),
		Namespace:       str(md["namespace"]),
		UID:             str(md["uid"]),
		ResourceVersion: str(md["resourceVersion"]),
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// summarize counts results by outcome.
func summarize(results []api.PolicyReportResult) api.PolicyReportSummary {
	var s api.PolicyReportSummary
	for i := range results {
		switch results[i].Result {
		case api.ResultPass:
			s.Pass++
		case api.ResultFail:
			s.Fail++
		case api.ResultWarn:
			s.Warn++
		case api.ResultError:
			s.Error++
		case api.ResultSkip:
			s.Skip++
		}
	}
	return s
}
