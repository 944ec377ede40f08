package autogen

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/gavelpolicy/gavel/api"
)

// Replacements applied to the JSON text of a generated rule, in order, to
// point variables at the Pod template. They are plain substring
// replacements, as upstream's: `request."object".metadata` escapes them.
var (
	podReplacements = [][2][]byte{
		{[]byte("request.object.spec"), []byte("request.object.spec.template.spec")},
		{[]byte("request.oldObject.spec"), []byte("request.oldObject.spec.template.spec")},
		{[]byte("request.object.metadata"), []byte("request.object.spec.template.metadata")},
		{[]byte("request.oldObject.metadata"), []byte("request.oldObject.spec.template.metadata")},
	}
	podCELReplacements = [][2][]byte{
		{[]byte("object.spec"), []byte("object.spec.template.spec")},
		{[]byte("oldObject.spec"), []byte("oldObject.spec.template.spec")},
		{[]byte("object.metadata"), []byte("object.spec.template.metadata")},
		{[]byte("oldObject.metadata"), []byte("oldObject.spec.template.metadata")},
	}
	cronJobReplacements = [][2][]byte{
		{[]byte("request.object.spec"), []byte("request.object.spec.jobTemplate.spec.template.spec")},
		{[]byte("request.oldObject.spec"), []byte("request.oldObject.spec.jobTemplate.spec.template.spec")},
		{[]byte("request.object.metadata"), []byte("request.object.spec.jobTemplate.spec.template.metadata")},
		{[]byte("request.oldObject.metadata"), []byte("request.oldObject.spec.jobTemplate.spec.template.metadata")},
	}
	cronJobCELReplacements = [][2][]byte{
		{[]byte("object.spec"), []byte("object.spec.jobTemplate.spec.template.spec")},
		{[]byte("oldObject.spec"), []byte("oldObject.spec.jobTemplate.spec.template.spec")},
		{[]byte("object.metadata"), []byte("object.spec.jobTemplate.spec.template.metadata")},
		{[]byte("oldObject.metadata"), []byte("oldObject.spec.jobTemplate.spec.template.metadata")},
	}
)

// wireRule is the part of a rule that a generated rule keeps, in the form
// it is serialized in to rewrite its variables. Empty parts are dropped.
type wireRule struct {
	Name                   string                  `json:"name"`
	MatchResources         *api.MatchResources     `json:"match"`
	ExcludeResources       *api.MatchResources     `json:"exclude,omitempty"`
	CELPreconditions       *[]api.MatchCondition   `json:"celPreconditions,omitempty"`
	Context                *[]api.ContextEntry     `json:"context,omitempty"`
	Preconditions          any                     `json:"preconditions,omitempty"`
	Mutation               *api.Mutation           `json:"mutate,omitempty"`
	Validation             *api.Validation         `json:"validate,omitempty"`
	VerifyImages           []api.ImageVerification `json:"verifyImages,omitempty"`
	SkipBackgroundRequests *bool                   `json:"skipBackgroundRequests,omitempty"`
	ReportProperties       map[string]string       `json:"reportProperties,omitempty"`
}

// finish turns a transformed rule into the generated rule: it keeps the
// parts upstream keeps, rewrites variable paths in the whole rule and
// returns a rule that shares nothing with its input.
func finish(r *api.Rule, cronJob bool) (api.Rule, error) {
	w := toWire(r)
	raw, err := json.Marshal(w)
	if err != nil {
		return api.Rule{}, err
	}
	raw = rewriteVariables(raw, cronJob, r.Validation != nil && r.Validation.CEL != nil)
	var back wireRule
	if err := json.Unmarshal(raw, &back); err != nil {
		return api.Rule{}, err
	}
	out := api.Rule{
		Name:                   back.Name,
		VerifyImages:           back.VerifyImages,
		SkipBackgroundRequests: back.SkipBackgroundRequests,
		ReportProperties:       back.ReportProperties,
		ExcludeResources:       back.ExcludeResources,
		Preconditions:          back.Preconditions,
		Mutation:               back.Mutation,
		Validation:             back.Validation,
	}
	if back.MatchResources != nil {
		out.MatchResources = *back.MatchResources
	}
	if back.Context != nil {
		out.Context = *back.Context
	}
	if back.CELPreconditions != nil {
		out.CELPreconditions = *back.CELPreconditions
	}
	return out, nil
}

func toWire(r *api.Rule) *wireRule {
	w := &wireRule{
		Name:                   r.Name,
		VerifyImages:           r.VerifyImages,
		SkipBackgroundRequests: r.SkipBackgroundRequests,
	}
	if len(r.ReportProperties) > 0 {
		w.ReportProperties = r.ReportProperties
	}
	if !reflect.DeepEqual(r.MatchResources, api.MatchResources{}) {
		w.MatchResources = &r.MatchResources
	}
	if r.ExcludeResources != nil && !reflect.DeepEqual(*r.ExcludeResources, api.MatchResources{}) {
		w.ExcludeResources = r.ExcludeResources
	}
	if r.Mutation != nil && !reflect.DeepEqual(*r.Mutation, api.Mutation{}) {
		w.Mutation = r.Mutation
	}
	if r.Validation != nil && !reflect.DeepEqual(*r.Validation, api.Validation{}) {
		w.Validation = r.Validation
	}
	if hasPreconditions(r.Preconditions) {
		w.Preconditions = r.Preconditions
	}
	if len(r.Context) > 0 {
		w.Context = &r.Context
	}
	if len(r.CELPreconditions) > 0 {
		w.CELPreconditions = &r.CELPreconditions
	}
	return w
}

// hasPreconditions reports preconditions that upstream keeps: a non-empty
// list of conditions, or an any/all block with at least one of any and all.
func hasPreconditions(p any) bool {
	switch c := p.(type) {
	case []any:
		return len(c) > 0
	case map[string]any:
		return c["any"] != nil || c["all"] != nil
	case nil:
		return false
	}
	rv := reflect.ValueOf(p)
	switch rv.Kind() {
	case reflect.Slice:
		return rv.Len() > 0
	case reflect.Map:
		return rv.Len() > 0
	}
	return false
}

// rewriteVariables applies the variable replacements to a rule's JSON text.
func rewriteVariables(raw []byte, cronJob, cel bool) []byte {
	var table [][2][]byte
	switch {
	case cronJob && cel:
		table = cronJobCELReplacements
	case cronJob:
		table = cronJobReplacements
	case cel:
		table = podCELReplacements
	default:
		table = podReplacements
	}
	for _, rep := range table {
		raw = bytes.ReplaceAll(raw, rep[0], rep[1])
	}
	return raw
}
