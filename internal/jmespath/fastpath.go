package jmespath

import "github.com/jmespath-community/go-jmespath/pkg/parsing"

// pathStep is one step of a plain field path: a field name or an index.
type pathStep struct {
	field string
	index int
	isIdx bool
}

// plainPath returns the steps of an expression made only of fields and
// non-negative indices (a.b[0]."c.d"), which is evaluated by a direct walk
// with exactly JMESPath's semantics: a field of a non-object and an index
// of a non-array, or out of range, are null.
func plainPath(node parsing.ASTNode) ([]pathStep, bool) {
	switch node.NodeType {
	case parsing.ASTField:
		name, ok := node.Value.(string)
		if !ok {
			return nil, false
		}
		return []pathStep{{field: name}}, true
	case parsing.ASTSubexpression:
		if len(node.Children) != 2 {
			return nil, false
		}
		left, ok := plainPath(node.Children[0])
		if !ok {
			return nil, false
		}
		right, ok := plainPath(node.Children[1])
		if !ok {
			return nil, false
		}
		return append(left, right...), true
	case parsing.ASTIndexExpression:
		if len(node.Children) != 2 || node.Children[1].NodeType != parsing.ASTIndex {
			return nil, false
		}
		n, ok := node.Children[1].Value.(int)
		if !ok || n < 0 {
			return nil, false
		}
		left, ok := plainPath(node.Children[0])
		if !ok {
			return nil, false
		}
		return append(left, pathStep{index: n, isIdx: true}), true
	}
	return nil, false
}

// walk evaluates a plain path.
func walk(steps []pathStep, data any) any {
	cur := data
	for _, s := range steps {
		if s.isIdx {
			l, ok := cur.([]any)
			if !ok || s.index >= len(l) {
				return nil
			}
			cur = l[s.index]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[s.field]
	}
	return cur
}
