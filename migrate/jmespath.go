package migrate

import (
	"fmt"
	"math"
	"strings"

	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

// vtype is what the converter knows of the type of a value.
type vtype uint8

const (
	tAny vtype = iota
	tString
	tNumber
	tBool
	tList
	tMap
	tNull
)

// symbol is a value of Kyverno's context that is not a CEL value by
// itself: the context's root and the request.
type symbol uint8

const (
	symNone symbol = iota
	symRoot
	symRequest
)

// jv is a JMESPath value converted to CEL.
type jv struct {
	e ex
	t vtype
	// elem is what is known of the elements of a list
	elem vtype
	sym  symbol
	// opt marks e as a CEL optional (a ?. chain): finish it with
	// orValue or test it with hasValue
	opt bool
	// nonEmpty marks a list that cannot be empty (a Pod's containers)
	nonEmpty bool
	// key is the last field name of a path, for type hints and names
	key string
	// parts are the elements of a multi-select list ([a, b])
	parts []jv
	// pres, for an optional, tests that it has a value (has() chains)
	pres ex
	// own marks the object written request."object": Kyverno's autogen
	// rewrites request.object.spec and .metadata as text, so this
	// spelling reads the controller's own fields; so does CEL's index
	// form object['metadata'], which the CEL autogen leaves alone
	own bool
}

// present tests that the optional v has a value.
func (v jv) present() ex {
	if v.pres.s != "" {
		return v.pres
	}
	return presence(v.e)
}

// value is v as a CEL value: an optional is finished with orValue(def).
func (v jv) value(def ex) ex {
	if v.opt {
		return method(v.e, "orValue", def)
	}
	return v.e
}

// unsupported is a construct the converter cannot express in CEL.
type unsupported struct {
	construct string
	detail    string
}

func (u *unsupported) Error() string {
	if u.detail == "" {
		return u.construct
	}
	return u.construct + ": " + u.detail
}

func unsupportedf(construct, format string, args ...any) error {
	return &unsupported{construct: construct, detail: fmt.Sprintf(format, args...)}
}

// scope is what the names of Kyverno's context mean where an expression
// is converted.
type scope struct {
	parent *scope
	// names are names bound in this scope: context entries (variables.x,
	// or a cel.bind name), foreach elements and their indexes
	names map[string]jv
	// object and oldObject are what request.object and
	// request.oldObject are (object, oldObject)
	object, oldObject ex
	// used records the names of context entries an expression read
	used map[string]bool
	// deleteOp rewrites request.object to request.oldObject, as
	// upstream does for DELETE requests
	deleteOp bool
	// root, when set, is the value names that are not bound are fields
	// of (an attestation's predicate)
	root *jv
	// patched, when set, is the object patches and their anchors apply
	// to (a mutate target), else object
	patched *ex
}

// rootValue is the root value of the scope or of its parents.
func (s *scope) rootValue() *jv {
	for c := s; c != nil; c = c.parent {
		if c.root != nil {
			return c.root
		}
	}
	return nil
}

func (s *scope) lookup(name string) (jv, bool) {
	for c := s; c != nil; c = c.parent {
		if v, ok := c.names[name]; ok {
			if c.used == nil {
				c.used = map[string]bool{}
			}
			c.used[name] = true
			return v, true
		}
	}
	return jv{}, false
}

func (s *scope) child() *scope {
	return &scope{parent: s, names: map[string]jv{}, object: s.object, oldObject: s.oldObject, deleteOp: s.deleteOp, patched: s.patched}
}

// jp converts JMESPath expressions.
type jp struct {
	sc *scope
	// vars counts the comprehension variables in use, for fresh names
	vars map[string]int
	// dyn are the values of inner {{ }}, by placeholder
	dyn map[string]jv
	// dynAll makes the maps and lists of documents dyn (objects of any
	// shape: generated resources)
	dynAll bool
	// pv and rule, when set, record the rule's foreach context entries
	pv   *policyVars
	rule string
	// podSpec is the path of the Pod spec in the rule's kinds (for
	// Kyverno's images variable), "" when they have none at one path
	podSpec string
	// kinds are the kinds the rule matches
	kinds []string
	// contextObject, when set, is what request.object is in the rule's
	// context entries (the trigger of a rule with mutate targets)
	contextObject *ex
	// patternVars, when set, collects the values the variables of a
	// validate pattern read strictly (see strictPattern)
	patternVars *[]patternVar
	// hoisted, when set (in a foreach's JSON patches), collects the
	// operations that create the missing parent of an add (see
	// ensureParent), to come once before the foreach's operations
	hoisted *[]ex
}

// need says what the consumer of a value does with a missing one.
type need uint8

const (
	// needValue: the consumer fails on null anyway (a function that
	// wants a string, arithmetic): a missing field may be an error
	needValue need = iota
	// needNullable: null is a value the consumer handles (a comparison,
	// a default): a missing field must give null
	needNullable
)

// parseJMESPath parses a JMESPath expression.
func parseJMESPath(expr string) (parsing.ASTNode, error) {
	p := parsing.NewParser()
	n, err := p.Parse(strings.ReplaceAll(expr, `request."object"`, "request."+ownObject))
	if err != nil {
		return n, unsupportedf("JMESPath", "%q does not parse: %v", expr, err)
	}
	return n, nil
}

// isPlainPath reports whether n is a plain field path (a.b["c"][0]),
// whose missing keys upstream's engine reports as an error.
func isPlainPath(n parsing.ASTNode) bool {
	switch n.NodeType {
	case parsing.ASTField:
		return true
	case parsing.ASTSubexpression:
		return len(n.Children) == 2 && isPlainPath(n.Children[0]) && isPlainPath(n.Children[1])
	case parsing.ASTIndexExpression:
		if len(n.Children) != 2 || n.Children[1].NodeType != parsing.ASTIndex {
			return false
		}
		i, _ := n.Children[1].Value.(int)
		return i >= 0 && isPlainPath(n.Children[0])
	}
	return false
}

// template converts the expression of one {{ }}: a plain path is strict
// (a missing field is an error, as upstream's engine reports it), any
// other expression gives null for what is missing.
func (c *jp) template(expr string) (jv, error) {
	n, err := parseJMESPath(expr)
	if err != nil {
		return jv{}, err
	}
	nd := needNullable
	if isPlainPath(n) {
		nd = needValue
	}
	v, err := c.node(n, jv{sym: symRoot}, nd)
	if err != nil {
		return jv{}, err
	}
	if v.sym != symNone {
		return jv{}, unsupportedf("JMESPath", "%q is Kyverno's context itself, not a value", expr)
	}
	return v, nil
}

// on converts expr evaluated on cur (a context entry's jmesPath), its
// {{ }} first (their values spliced into the expression as upstream
// does: a literal `{{ x }}` is x's JSON).
func (c *jp) on(expr string, cur jv) (jv, error) {
	n, restore, err := c.parseWithTemplates(expr)
	if err != nil {
		return jv{}, err
	}
	defer restore()
	return c.node(n, cur, needNullable)
}

// parseWithTemplates parses a JMESPath expression that may hold {{ }}:
// each becomes a placeholder bound in c.dyn until restore is called.
func (c *jp) parseWithTemplates(expr string) (parsing.ASTNode, func(), error) {
	saved := c.dyn
	restore := func() { c.dyn = saved }
	if !strings.Contains(expr, "{{") {
		n, err := parseJMESPath(expr)
		return n, restore, err
	}
	rendered, exprs, err := templateParts(expr)
	if err != nil {
		return parsing.ASTNode{}, restore, err
	}
	c.dyn = map[string]jv{}
	for k, v := range saved {
		c.dyn[k] = v
	}
	text, _ := rendered.(string)
	for i, e := range exprs {
		v, err := c.template(e)
		if err != nil {
			return parsing.ASTNode{}, restore, err
		}
		c.dyn[placeholder(i)] = v
		// a JSON literal of the value (`{{ x }}`): the value itself
		jsonName := jsonPlaceholder(i)
		c.dyn[jsonName] = v
		text = strings.ReplaceAll(text, "`"+placeholder(i)+"`", "`\""+jsonName+"\"`")
	}
	n, err := parseJMESPath(text)
	if err != nil {
		return n, restore, unsupportedf("JMESPath", "%q does not parse: %v", expr, err)
	}
	return n, restore, nil
}

// fresh returns a comprehension variable named after what it ranges
// over, not yet in use.
func (c *jp) fresh(over string) string {
	return c.freshName(singular(over))
}

// freshName returns base, or base with a number, not yet in use.
func (c *jp) freshName(base string) string {
	if !isIdent(base) || reservedVar[base] {
		base = "v_" + base
	}
	if c.vars == nil {
		c.vars = map[string]int{}
	}
	n := c.vars[base]
	c.vars[base] = n + 1
	if n == 0 {
		return base
	}
	return fmt.Sprintf("%s%d", base, n+1)
}

// release frees a comprehension variable.
func (c *jp) release(name string) {
	base := strings.TrimRight(name, "0123456789")
	if c.vars[base] > 0 {
		c.vars[base]--
	}
}

// singular names an element of a list field: containers → container.
func singular(field string) string {
	switch {
	case field == "":
		return "x"
	case strings.HasSuffix(field, "ies"):
		field = field[:len(field)-3] + "y"
	case strings.HasSuffix(field, "sses"):
		field = field[:len(field)-2]
	case strings.HasSuffix(field, "s") && !strings.HasSuffix(field, "ss"):
		field = field[:len(field)-1]
	default:
		return "x"
	}
	if !isIdent(field) || len(field) > 20 || reservedVar[field] {
		return "x"
	}
	return field
}

// reservedVar are names a comprehension variable may not take: CEL's
// reserved words and the variables of the policy's environment.
var reservedVar = map[string]bool{"namespace": true, "object": true, "oldObject": true, "request": true,
	"params": true, "variables": true, "namespaceObject": true, "resource": true, "http": true,
	"image": true, "globalContext": true, "authorizer": true, "exceptions": true, "generator": true,
	"int": true, "uint": true, "double": true, "string": true, "bytes": true, "bool": true, "list": true,
	"map": true, "type": true, "dyn": true, "duration": true, "timestamp": true, "quantity": true}

func (c *jp) node(n parsing.ASTNode, cur jv, nd need) (jv, error) {
	switch n.NodeType {
	case parsing.ASTField:
		name := n.Value.(string)
		if name == "" {
			// "" names no field: null
			return jv{e: exNull, t: tNull}, nil
		}
		if v, ok := c.dynField(name); ok {
			return c.dynIndex(cur, v, nd)
		}
		return c.field(cur, name, nd)
	case parsing.ASTSubexpression, parsing.ASTIndexExpression:
		if n.Children[1].NodeType == parsing.ASTIndex {
			l, err := c.node(n.Children[0], cur, nd)
			if err != nil {
				return jv{}, err
			}
			return c.index(l, n.Children[1].Value.(int), nd)
		}
		if n.Children[1].NodeType == parsing.ASTSlice {
			return jv{}, unsupportedf("JMESPath slice", "a slice of a list")
		}
		l, err := c.node(n.Children[0], cur, nd)
		if err != nil {
			return jv{}, err
		}
		if l.opt && n.Children[1].NodeType != parsing.ASTField && n.Children[1].NodeType != parsing.ASTMultiSelectList {
			// JMESPath stops at a missing value: the rest applies
			// inside the optional
			return c.optMap(l, n.Children[1], nd)
		}
		return c.node(n.Children[1], l, nd)
	case parsing.ASTIdentity, parsing.ASTCurrentNode:
		return cur, nil
	case parsing.ASTLiteral:
		if s, ok := n.Value.(string); ok {
			if v, ok := c.dyn[s]; ok && strings.HasPrefix(s, jsonPlaceholderPrefix) {
				return v, nil
			}
			v, ok, err := c.dynString(s)
			if err != nil {
				return jv{}, err
			}
			if ok {
				return v, nil
			}
		}
		return literal(n.Value), nil
	case parsing.ASTProjection:
		return c.projection(n, cur)
	case parsing.ASTFilterProjection:
		return c.filterProjection(n, cur)
	case parsing.ASTFlatten:
		return c.flatten(n, cur)
	case parsing.ASTValueProjection:
		// the values of a map, then the projection
		l, err := c.node(n.Children[0], cur, needNullable)
		if err != nil {
			return jv{}, err
		}
		if l.sym != symNone {
			return jv{}, unsupportedf("JMESPath value projection", "of Kyverno's context")
		}
		m := l.value(ex{s: "{}", prec: precPrimary})
		k := c.freshName("key")
		vals := jv{e: macro(m, "map", k, index(m, ident(k))), t: tList, key: l.key}
		c.release(k)
		return c.project(vals, n.Children[1])
	case parsing.ASTPipe:
		l, err := c.node(n.Children[0], cur, needNullable)
		if err != nil {
			return jv{}, err
		}
		if l.opt {
			l = jv{e: l.value(exNull), t: l.t, elem: l.elem, key: l.key}
		}
		return c.node(n.Children[1], l, nd)
	case parsing.ASTComparator:
		return c.comparator(n, cur)
	case parsing.ASTOrExpression:
		return c.orExpr(n, cur)
	case parsing.ASTAndExpression:
		return c.andExpr(n, cur)
	case parsing.ASTNotExpression:
		v, err := c.node(n.Children[0], cur, needNullable)
		if err != nil {
			return jv{}, err
		}
		return jv{e: not(truthy(v)), t: tBool}, nil
	case parsing.ASTMultiSelectList:
		parts := make([]ex, len(n.Children))
		vals := make([]jv, len(n.Children))
		for i, ch := range n.Children {
			v, err := c.node(ch, cur, needNullable)
			if err != nil {
				return jv{}, err
			}
			parts[i] = v.value(exNull)
			vals[i] = v
		}
		return jv{e: listOf(parts...), t: tList, parts: vals}, nil
	case parsing.ASTMultiSelectHash:
		return c.hash(n, cur)
	case parsing.ASTFunctionExpression:
		return c.function(n, cur, nd)
	case parsing.ASTArithmeticExpression:
		return c.arithmetic(n, cur)
	case parsing.ASTArithmeticUnaryExpression:
		v, err := c.node(n.Children[0], cur, needValue)
		if err != nil {
			return jv{}, err
		}
		if tok, _ := n.Value.(parsing.TokType); tok == parsing.TOKMinus {
			return jv{e: ex{s: "-" + v.value(exNull).at(precUnary), prec: precUnary}, t: tNumber}, nil
		}
		return v, nil
	}
	return jv{}, unsupportedf("JMESPath "+strings.TrimPrefix(n.NodeType.String(), "AST"), "no CEL form")
}

// optMap applies right to the value of the optional l: optMap, or
// optFlatMap when right gives an optional.
func (c *jp) optMap(l jv, right parsing.ASTNode, nd need) (jv, error) {
	v := c.fresh(l.key)
	defer c.release(v)
	r, err := c.node(right, jv{e: ident(v), t: l.t, elem: l.elem, key: l.key}, nd)
	if err != nil {
		return jv{}, err
	}
	out := r
	out.opt = true
	if r.opt {
		out.e = macro(l.e, "optFlatMap", v, r.e)
		out.pres = ex{}
	} else {
		out.e = macro(l.e, "optMap", v, r.e)
		out.pres = l.present()
	}
	out.nonEmpty = false
	out.parts = nil
	return out, nil
}

// literal converts a JSON literal.
func literal(v any) jv {
	out := jv{e: lit(v)}
	switch t := v.(type) {
	case string:
		out.t = tString
	case float64, int:
		out.t = tNumber
	case bool:
		out.t = tBool
	case nil:
		out.t = tNull
	case []any:
		out.t = tList
		out.nonEmpty = len(t) > 0
		out.elem = elemType(t)
	case map[string]any:
		out.t = tMap
	}
	return out
}

// elemType is the common type of the elements of a literal list.
func elemType(xs []any) vtype {
	t := tAny
	for i, x := range xs {
		xt := literal(x).t
		if i == 0 {
			t = xt
		} else if xt != t {
			return tAny
		}
	}
	return t
}

// field converts cur.name.
func (c *jp) field(cur jv, name string, nd need) (jv, error) {
	switch cur.sym {
	case symRoot:
		return c.rootName(name)
	case symRequest:
		return c.requestField(name)
	}
	if cur.key == imageDataKey {
		name = imageDataField(name)
	}
	t, elem := fieldTypeIn(cur.key, name)
	out := jv{t: t, key: name, elem: elem}
	if k, ok := imagesKeys[cur.key]; ok {
		// Kyverno's images: maps by container name of image infos
		out.t, out.elem, out.key = k.t, tAny, k.key
	}
	switch {
	case cur.opt:
		out.e, out.opt = optField(cur.e, name), true
	case nd == needNullable && !requiredField(cur.key, name):
		out.e, out.opt = optField(cur.e, name), true
	default:
		out.e = field(cur.e, name)
		out.nonEmpty = nonEmptyField(name)
	}
	if cur.own && (name == "metadata" || name == "spec") {
		// the index form, which autogen does not rewrite
		if out.opt {
			out.e = ex{s: cur.e.at(precPrimary) + "[?" + strLit(name).s + "]", prec: precPrimary}
		} else {
			out.e = index(cur.e, strLit(name))
		}
	}
	return out, nil
}

// ownObject stands for request."object" in a parsed expression (see
// jv.own).
const ownObject = "gavelOwnObject"

// dynIndex converts cur."{{ x }}": the field named by x's value.
func (c *jp) dynIndex(cur jv, key jv, nd need) (jv, error) {
	if cur.sym != symNone {
		return jv{}, unsupportedf("JMESPath", "a name of Kyverno's context given by a variable")
	}
	k := key.value(strLit(""))
	if key.t != tString {
		k = call("string", k)
	}
	t, _ := fieldTypeIn(cur.key, "")
	if cur.opt || nd == needNullable {
		return jv{e: ex{s: cur.e.at(precPrimary) + "[?" + k.s + "]", prec: precPrimary}, opt: true, t: t}, nil
	}
	return jv{e: index(cur.e, k), t: t}, nil
}

// rootName converts a name at the root of Kyverno's context.
func (c *jp) rootName(name string) (jv, error) {
	if v, ok := c.sc.lookup(name); ok {
		return v, nil
	}
	if r := c.sc.rootValue(); r != nil {
		return c.field(*r, name, needNullable)
	}
	switch name {
	case "request":
		return jv{sym: symRequest}, nil
	case "serviceAccountName", "serviceAccountNamespace":
		// upstream's variables: the parts of a service account's user name
		user := ident("request.userInfo.username")
		i := 3
		if name == "serviceAccountNamespace" {
			i = 2
		}
		isSA := method(user, "startsWith", strLit("system:serviceaccount:"))
		return jv{e: cond(isSA, index(method(user, "split", strLit(":")), numLit(float64(i))), strLit("")), t: tString}, nil
	case "images":
		return c.imagesVariable()
	case "element", "elementIndex":
		return jv{}, unsupportedf("variable "+name, "outside a foreach")
	case "target":
		return jv{}, unsupportedf("variable target", "mutate targets")
	}
	return jv{}, unsupportedf("variable "+name, "not defined in the rule's context")
}

// requestField converts request.<name>.
func (c *jp) requestField(name string) (jv, error) {
	switch name {
	case ownObject:
		v, err := c.requestField("object")
		v.own = true
		return v, err
	case "object":
		if c.sc.deleteOp {
			return jv{e: c.sc.oldObject, t: tMap}, nil
		}
		return jv{e: c.sc.object, t: tMap}, nil
	case "oldObject":
		// null but on UPDATE and DELETE: its fields are not required
		return jv{e: c.sc.oldObject, t: tMap, key: oldObjectKey}, nil
	case "operation", "namespace", "name", "uid", "subResource":
		return jv{e: field(ident("request"), name), t: tString, key: name}, nil
	case "userInfo", "kind", "resource", "requestKind", "requestResource", "options":
		return jv{e: field(ident("request"), name), t: tMap, key: name}, nil
	case "dryRun":
		return jv{e: field(ident("request"), name), t: tBool, key: name}, nil
	case "roles", "clusterRoles":
		return jv{}, unsupportedf("variable request."+name, "%s", rolesWhy)
	}
	return jv{}, unsupportedf("variable request."+name, "not a field of the admission request")
}

// index converts l[i].
func (c *jp) index(l jv, i int, nd need) (jv, error) {
	if l.sym != symNone {
		return jv{}, unsupportedf("JMESPath index", "of Kyverno's context")
	}
	out := jv{t: l.elem, key: singular(l.key)}
	idx := numLit(float64(i))
	base := l
	if i < 0 {
		lv := base.value(listOf())
		idx = ex{s: "size(" + lv.s + ") - " + numLit(math.Abs(float64(i))).s, prec: precAdd}
		base = jv{e: lv}
	}
	switch {
	case base.opt:
		out.e, out.opt = ex{s: base.e.at(precPrimary) + "[?" + idx.s + "]", prec: precPrimary}, true
	case nd == needNullable && !(i == 0 && l.nonEmpty):
		out.e, out.opt = ex{s: base.e.at(precPrimary) + "[?" + idx.s + "]", prec: precPrimary}, true
	default:
		out.e = index(base.e, idx)
	}
	return out, nil
}

// listOperand is the list a projection ranges over: a missing list is
// empty (JMESPath gives null, which a projection ignores).
func listOperand(v jv) ex {
	if v.opt && nullableLists[v.key] {
		// the API server writes the field as null when it is empty
		return method(macro(v.e, "optFlatMap", v.key, call("optional.ofNonZeroValue", ident(v.key))), "orValue", listOf())
	}
	if v.opt {
		return v.value(listOf())
	}
	return v.e
}

// projection converts left[*].right (and left[].right).
func (c *jp) projection(n parsing.ASTNode, cur jv) (jv, error) {
	l, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	if l.sym != symNone {
		return jv{}, unsupportedf("JMESPath projection", "of Kyverno's context")
	}
	return c.project(l, n.Children[1])
}

// project applies right to each element of the list l, dropping nulls.
func (c *jp) project(l jv, right parsing.ASTNode) (jv, error) {
	list := listOperand(l)
	if right.NodeType == parsing.ASTIdentity || right.NodeType == parsing.ASTCurrentNode {
		return jv{e: list, t: tList, elem: l.elem, key: l.key, nonEmpty: l.nonEmpty && !l.opt}, nil
	}
	v := c.fresh(l.key)
	defer c.release(v)
	el := jv{e: ident(v), t: l.elem, key: singular(l.key)}
	if l.key == imagesListKey {
		// the values of a map of image infos
		el.t, el.key = tMap, imageInfoKey
	}
	opt, err := c.node(right, el, needNullable)
	if err != nil {
		return jv{}, err
	}
	out := jv{t: tList, elem: opt.t, key: opt.key}
	if !opt.opt {
		out.e = macro(list, "map", v, opt.e)
		out.nonEmpty = l.nonEmpty && !l.opt
		return out, nil
	}
	strict, err := c.node(right, el, needValue)
	if err != nil {
		return jv{}, err
	}
	present := opt.present()
	out.e = macro(macro(list, "filter", v, present), "map", v, strict.e)
	return out, nil
}

// presence tests that an optional chain has a value: has() for a chain
// of fields, else hasValue().
func presence(opt ex) ex {
	s := opt.s
	if !strings.Contains(s, "[?") && strings.Count(s, ".?") <= 3 {
		parts := strings.Split(s, ".?")
		var checks []ex
		base := parts[0]
		for _, p := range parts[1:] {
			if !isIdent(p) {
				checks = nil
				break
			}
			checks = append(checks, ex{s: "has(" + base + "." + p + ")", prec: precPrimary})
			base += "." + p
		}
		if checks != nil {
			return and(checks...)
		}
	}
	return method(opt, "hasValue")
}

// filterProjection converts left[?cond].right.
func (c *jp) filterProjection(n parsing.ASTNode, cur jv) (jv, error) {
	l, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	if l.sym != symNone {
		return jv{}, unsupportedf("JMESPath filter", "of Kyverno's context")
	}
	list := listOperand(l)
	v := c.fresh(l.key)
	el := jv{e: ident(v), t: l.elem, key: singular(l.key)}
	p, err := c.node(n.Children[2], el, needNullable)
	c.release(v)
	if err != nil {
		return jv{}, err
	}
	filtered := jv{e: macro(list, "filter", v, truthy(p)), t: tList, elem: l.elem, key: l.key}
	return c.project(filtered, n.Children[1])
}

// flatten converts left[]: lists of lists are concatenated.
func (c *jp) flatten(n parsing.ASTNode, cur jv) (jv, error) {
	l, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	if l.sym != symNone {
		return jv{}, unsupportedf("JMESPath flatten", "of Kyverno's context")
	}
	list := listOperand(l)
	if len(l.parts) > 0 {
		// [a, b][]: the lists joined (JMESPath drops the nulls)
		return concatLists(l.parts), nil
	}
	switch l.elem {
	case tList:
		return jv{e: method(list, "flatten"), t: tList, key: l.key}, nil
	case tAny:
		if l.t == tList && l.key != "" && elemOf(l.key) == tAny && !listOfLists(l.key) {
			// a list field of objects or scalars: flattening keeps it
			return jv{e: list, t: tList, elem: l.elem, key: l.key, nonEmpty: l.nonEmpty && !l.opt}, nil
		}
		return jv{e: method(list, "flatten"), t: tList, key: l.key}, nil
	}
	return jv{e: list, t: tList, elem: l.elem, key: l.key, nonEmpty: l.nonEmpty && !l.opt}, nil
}

// concatLists joins lists: a missing one is empty, an element that is
// not a list is a list of one.
func concatLists(parts []jv) jv {
	var out ex
	key := ""
	nonEmpty := false
	for i, p := range parts {
		var e ex
		switch {
		case p.t == tList || p.opt && fieldType(p.key) == tList:
			e = listOperand(p)
			nonEmpty = nonEmpty || p.nonEmpty && !p.opt
		case p.opt:
			e = cond(method(p.e, "hasValue"), listOf(method(p.e, "value")), listOf())
		default:
			e = listOf(p.e)
			nonEmpty = true
		}
		if p.key != "" {
			key = p.key
		}
		if i == 0 {
			out = e
			continue
		}
		out = add(out, e)
	}
	return jv{e: out, t: tList, key: key, nonEmpty: nonEmpty}
}

// hash converts a multi-select hash {k: v}.
func (c *jp) hash(n parsing.ASTNode, cur jv) (jv, error) {
	parts := make([]string, len(n.Children))
	for i, kv := range n.Children {
		v, err := c.node(kv.Children[0], cur, needNullable)
		if err != nil {
			return jv{}, err
		}
		parts[i] = strLit(kv.Value.(string)).s + ": " + v.value(exNull).s
	}
	return jv{e: ex{s: "{" + strings.Join(parts, ", ") + "}", prec: precPrimary}, t: tMap}, nil
}

// comparator converts a == b, a < b, ...
func (c *jp) comparator(n parsing.ASTNode, cur jv) (jv, error) {
	a, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	b, err := c.node(n.Children[1], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	tok, _ := n.Value.(parsing.TokType)
	ops := map[parsing.TokType]string{parsing.TOKEQ: "==", parsing.TOKNE: "!=", parsing.TOKLT: "<",
		parsing.TOKLTE: "<=", parsing.TOKGT: ">", parsing.TOKGTE: ">="}
	op, ok := ops[tok]
	if !ok {
		return jv{}, unsupportedf("JMESPath comparator", "%v", tok)
	}
	if op == "==" || op == "!=" {
		return jv{e: equality(a, op, b), t: tBool}, nil
	}
	// JMESPath orders numbers only; anything else compares as null
	return jv{e: rel(a.value(exNull), op, b.value(exNull)), t: tBool}, nil
}

// equality compares two values as JMESPath does (null-safe, deep).
func equality(a jv, op string, b jv) ex {
	// an optional compared with a literal: optional.of(x)
	if a.opt && !b.opt && b.t != tNull && b.t != tAny {
		return rel(a.e, op, call("optional.of", b.e))
	}
	if b.opt && !a.opt && a.t != tNull && a.t != tAny {
		return rel(call("optional.of", a.e), op, b.e)
	}
	return rel(a.value(exNull), op, b.value(exNull))
}

// truthy is JMESPath's truth of a value: false, null, "", [] and {} are
// false.
func truthy(v jv) ex {
	switch v.t {
	case tBool:
		if v.opt {
			return rel(v.e, "==", call("optional.of", exTrue))
		}
		return v.e
	case tNull:
		return exFalse
	case tString:
		return rel(v.value(strLit("")), "!=", strLit(""))
	case tList:
		if v.nonEmpty && !v.opt {
			return exTrue
		}
		return rel(call("size", v.value(listOf())), ">", numLit(0))
	case tMap:
		if !v.opt && v.e.s != "" && (v.e.s == "object" || v.e.s == "oldObject") {
			return rel(v.e, "!=", exNull)
		}
		return rel(call("size", v.value(ex{s: "{}", prec: precPrimary})), ">", numLit(0))
	case tNumber:
		if v.opt {
			return method(v.e, "hasValue")
		}
		return exTrue
	}
	// unknown: JMESPath's rule, written out
	val := v.value(exNull)
	return and(rel(val, "!=", exNull), rel(val, "!=", exFalse), rel(val, "!=", strLit("")),
		rel(val, "!=", listOf()), rel(val, "!=", ex{s: "{}", prec: precPrimary}))
}

// orExpr converts a || b: a when a is true in JMESPath's sense, else b.
func (c *jp) orExpr(n parsing.ASTNode, cur jv) (jv, error) {
	a, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	b, err := c.node(n.Children[1], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	if a.t == tBool && b.t == tBool {
		return jv{e: or(truthy(a), truthy(b)), t: tBool}, nil
	}
	if !a.opt && a.e.s == "request.operation" {
		// never empty in the CEL request
		return a, nil
	}
	if !a.opt && a.t != tAny && isEmptyOf(b, a.t) {
		// a list (string, map) or its empty value: the value itself
		return a, nil
	}
	if a.t == tList && b.t != tList && b.t != tAny && b.t != tMap {
		// a list, or a scalar default: the set operators read a scalar
		// key as a list of one
		l := a.value(listOf())
		return jv{e: cond(rel(call("size", l), ">", numLit(0)), l, listOf(b.value(exNull))), t: tList, elem: a.elem, key: a.key}, nil
	}
	t := a.t
	if t == tAny {
		t = b.t
	}
	if a.opt && b.t != tAny && isEmptyOf(b, a.t) {
		// a missing, null or empty a gives b, the empty value of a's type
		return jv{e: a.value(b.value(exNull)), t: a.t, elem: a.elem, key: a.key}, nil
	}
	if a.opt && b.t == tNull {
		// a missing (or empty) value or null
		return jv{e: a.value(exNull), t: a.t, elem: a.elem, key: a.key}, nil
	}
	if a.opt && (a.t == tAny || a.t == b.t) && b.t != tAny && b.t != tList && b.t != tMap {
		// a string field's default: a missing field gives b
		if a.t == tString {
			return jv{e: cond(rel(a.value(strLit("")), "!=", strLit("")), a.value(strLit("")), b.value(exNull)), t: tString}, nil
		}
		if a.t == tAny {
			return c.bindOr(a, b), nil
		}
	}
	if a.t == tAny {
		return c.bindOr(a, b), nil
	}
	return jv{e: dynCond(truthy(a), a, b), t: t, elem: a.elem}, nil
}

// bindOr is a || b for an a of unknown type: a, bound once, when it is
// true in JMESPath's sense, else b.
func (c *jp) bindOr(a, b jv) jv {
	x := c.freshName("v")
	defer c.release(x)
	bound := jv{e: ident(x)}
	e := call("cel.bind", ident(x), a.value(exNull), dynCond(truthy(bound), bound, b))
	t := b.t
	if t == tNull {
		t = tAny
	}
	return jv{e: e, t: tAny}
}

// dynCond is c ? a : b for values whose types may differ: both branches
// are dyn then (CEL's conditional needs one type).
func dynCond(c ex, a, b jv) ex {
	av, bv := a.value(exNull), b.value(exNull)
	if a.t == b.t && a.t != tAny && a.t != tList && a.t != tMap || bv.s == "null" {
		return cond(c, av, bv)
	}
	return cond(c, call("dyn", av), call("dyn", bv))
}

// isEmptyOf reports whether b is the empty value of type t ("", [], {}),
// so that "a || b" is a's value or b.
func isEmptyOf(b jv, t vtype) bool {
	switch b.e.s {
	case "''":
		return t == tString || t == tAny
	case "[]":
		return t == tList || t == tAny
	case "{}":
		return t == tMap || t == tAny
	}
	return false
}

// andExpr converts a && b: b when a is true, else a.
func (c *jp) andExpr(n parsing.ASTNode, cur jv) (jv, error) {
	a, err := c.node(n.Children[0], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	b, err := c.node(n.Children[1], cur, needNullable)
	if err != nil {
		return jv{}, err
	}
	if a.t == tBool && b.t == tBool || b.t == tBool {
		return jv{e: and(truthy(a), truthy(b)), t: tBool}, nil
	}
	return jv{e: dynCond(truthy(a), b, a), t: b.t}, nil
}

// arithmetic converts a + b, a - b, ...
func (c *jp) arithmetic(n parsing.ASTNode, cur jv) (jv, error) {
	a, err := c.node(n.Children[0], cur, needValue)
	if err != nil {
		return jv{}, err
	}
	b, err := c.node(n.Children[1], cur, needValue)
	if err != nil {
		return jv{}, err
	}
	tok, _ := n.Value.(parsing.TokType)
	ops := map[parsing.TokType]struct {
		op   string
		prec int
	}{parsing.TOKPlus: {"+", precAdd}, parsing.TOKMinus: {"-", precAdd}, parsing.TOKMultiply: {"*", precMul},
		parsing.TOKDivide: {"/", precMul}, parsing.TOKModulo: {"%", precMul}}
	o, ok := ops[tok]
	if !ok {
		return jv{}, unsupportedf("JMESPath arithmetic", "operator %v", tok)
	}
	// JMESPath numbers are doubles
	l, r := call("double", a.value(exNull)), call("double", b.value(exNull))
	return jv{e: ex{s: l.at(o.prec) + " " + o.op + " " + r.at(o.prec+1), prec: o.prec}, t: tNumber}, nil
}
