package engine

import (
	"encoding/csv"
	"strings"
)

// ForeachValues is an optional interface of a ContextValues host: the
// values of the upstream CLI's foreachValues. For the element at index i
// of a foreach of the rule, each variable is set to the i-th value of its
// list after the element variables (a list too short for i leaves the
// variable alone). The map must not be modified.
type ForeachValues interface {
	ForeachValues(policy, rule string) map[string][]any
}

// ruleValues adds the host's values for a rule (WithContextValues) to the
// rule's scope, before its context entries load: its variables now, and
// the foreach values that addElement gives each foreach element.
func (e *Engine) ruleValues(sc *scope, p *Policy, r *rule) {
	cv := e.cfg.contextValues
	if cv == nil {
		return
	}
	for k, v := range cv.RuleValues(p.name(), r.name) {
		sc.set(k, v)
	}
	if fv, ok := cv.(ForeachValues); ok {
		sc.foreachValues = fv.ForeachValues(p.name(), r.name)
	}
}

// setForeachValues sets the foreach values of the element at index.
func (s *scope) setForeachValues(index int) {
	for k, list := range s.foreachValues {
		if index < len(list) {
			s.set(k, list[index])
		}
	}
}

// splitVariablePath splits a variable name given by a host ("a.b",
// `request.object.metadata.annotations."example.com/owner"`) into its keys
// as upstream's AddVariable does: fields separated by dots, a field in
// double quotes taken as is. A name that is not well formed is split at
// every dot.
func splitVariablePath(name string) []string {
	if !strings.Contains(name, `"`) {
		return strings.Split(name, ".")
	}
	r := csv.NewReader(strings.NewReader(name))
	r.Comma = '.'
	fields, err := r.Read()
	if err != nil {
		return strings.Split(name, ".")
	}
	return fields
}
