package mutate

import (
	"encoding/json"
	"strconv"
	"strings"
)

// Operation is one RFC 6902 operation. Value is meaningful for add, replace
// and test; From for move and copy.
type Operation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}

// MarshalJSON writes the operation; value is written for add, replace and
// test even when it is null.
func (o Operation) MarshalJSON() ([]byte, error) {
	type plain struct {
		Op   string `json:"op"`
		Path string `json:"path"`
		From string `json:"from,omitempty"`
	}
	type withValue struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		From  string `json:"from,omitempty"`
		Value any    `json:"value"`
	}
	switch o.Op {
	case "add", "replace", "test":
		return json.Marshal(withValue{Op: o.Op, Path: o.Path, From: o.From, Value: o.Value})
	}
	return json.Marshal(plain{Op: o.Op, Path: o.Path, From: o.From})
}

// Diff returns an RFC 6902 patch that turns original into modified. Maps are
// compared key by key in sorted order; lists keep their common prefix and
// suffix and are patched element by element in between, so an element added
// to or removed from a list costs one operation. Scalars are compared by
// value (80 and 80.0 are equal). Paths are JSON pointers with "~0" and "~1"
// escapes. The values in the operations are fresh copies. The result is
// deterministic and, applied to original with an RFC 6902 implementation,
// yields modified.
func Diff(original, modified any) ([]Operation, error) {
	a, err := fromResource(original, path{}.key("original"))
	if err != nil {
		return nil, err
	}
	b, err := fromResource(modified, path{}.key("modified"))
	if err != nil {
		return nil, err
	}
	d := differ{ops: []Operation{}}
	if err := d.diff(a, b, ""); err != nil {
		return nil, err
	}
	return d.ops, nil
}

// DiffJSON is Diff encoded as the JSON of the operation list, the form an
// AdmissionReview response carries.
func DiffJSON(original, modified any) ([]byte, error) {
	ops, err := Diff(original, modified)
	if err != nil {
		return nil, err
	}
	return json.Marshal(ops)
}

type differ struct {
	ops []Operation
}

func (d *differ) emit(op, ptr string, v *node) error {
	o := Operation{Op: op, Path: ptr}
	if v != nil {
		val, err := toValue(v, nil)
		if err != nil {
			return err
		}
		o.Value = val
	}
	d.ops = append(d.ops, o)
	return nil
}

func (d *differ) diff(a, b *node, ptr string) error {
	if a.raw != nil && b.raw != nil && sameRaw(a.raw, b.raw) {
		return nil // the same map or list: nothing changed below
	}
	a.expand()
	b.expand()
	switch {
	case a.kind == mapNode && b.kind == mapNode:
		for _, k := range unionKeys(a, b) {
			av, bv := a.field(k), b.field(k)
			child := ptr + "/" + escapePointer(k)
			switch {
			case bv == nil:
				d.ops = append(d.ops, Operation{Op: "remove", Path: child})
			case av == nil:
				if err := d.emit("add", child, bv); err != nil {
					return err
				}
			default:
				if err := d.diff(av, bv, child); err != nil {
					return err
				}
			}
		}
		return nil
	case a.kind == seqNode && b.kind == seqNode:
		return d.diffList(a.items, b.items, ptr)
	}
	if equalNodes(a, b) {
		return nil
	}
	return d.emit("replace", ptr, b)
}

func (d *differ) diffList(a, b []*node, ptr string) error {
	pre := 0
	for pre < len(a) && pre < len(b) && equalNodes(a[pre], b[pre]) {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && equalNodes(a[len(a)-1-suf], b[len(b)-1-suf]) {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	common := min(len(ma), len(mb))
	for i := 0; i < common; i++ {
		if err := d.diff(ma[i], mb[i], ptr+"/"+strconv.Itoa(pre+i)); err != nil {
			return err
		}
	}
	for i := common; i < len(ma); i++ {
		d.ops = append(d.ops, Operation{Op: "remove", Path: ptr + "/" + strconv.Itoa(pre+common)})
	}
	for i := common; i < len(mb); i++ {
		if err := d.emit("add", ptr+"/"+strconv.Itoa(pre+i), mb[i]); err != nil {
			return err
		}
	}
	return nil
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// escapePointer escapes a map key for a JSON pointer.
func escapePointer(k string) string { return pointerEscaper.Replace(k) }

// equalScalars compares two scalar values by JSON value: numbers of any Go
// type are equal when their canonical text is.
func equalScalars(a, b any) bool {
	switch at := a.(type) {
	case nil:
		return b == nil
	case string:
		bt, ok := b.(string)
		return ok && at == bt
	case bool:
		bt, ok := b.(bool)
		return ok && at == bt
	}
	at, aok, aerr := numberText(a)
	bt, bok, berr := numberText(b)
	return aok && bok && aerr == nil && berr == nil && at == bt
}
