package typeconv

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// The table is JSON of the types below, a mirror of structured-merge-diff's
// schema with short keys: its own types carry YAML tags only, and decoding
// YAML of the whole schema takes some 180 ms, this JSON 30.

type table struct {
	// Kinds maps "group/version/Kind" to a type name.
	Kinds map[string]string `json:"kinds"`
	Types []typeDef         `json:"types"`
}

type typeDef struct {
	Name string `json:"n"`
	atom
}

type atom struct {
	Scalar string `json:"s,omitempty"`
	List   *list  `json:"l,omitempty"`
	Map    *mapT  `json:"m,omitempty"`
}

type typeRef struct {
	Named    string `json:"n,omitempty"`
	Inlined  *atom  `json:"i,omitempty"`
	Rel      string `json:"r,omitempty"`
	Nullable bool   `json:"z,omitempty"`
}

type mapT struct {
	Fields []field  `json:"f,omitempty"`
	Unions []union  `json:"u,omitempty"`
	Elem   *typeRef `json:"e,omitempty"`
	Rel    string   `json:"r,omitempty"`
}

type field struct {
	Name    string          `json:"n"`
	Type    typeRef         `json:"t"`
	Default json.RawMessage `json:"d,omitempty"`
}

type union struct {
	Discriminator *string     `json:"d,omitempty"`
	Deduce        bool        `json:"x,omitempty"`
	Fields        [][2]string `json:"f,omitempty"`
}

type list struct {
	Elem typeRef  `json:"e"`
	Rel  string   `json:"r,omitempty"`
	Keys []string `json:"k,omitempty"`
}

// Encode writes the table of a schema and of the kinds it types (by
// "group/version/Kind"), deterministically.
func Encode(s *schema.Schema, kinds map[string]string) ([]byte, error) {
	t := table{Kinds: kinds}
	names := make([]string, 0, len(s.Types))
	byName := make(map[string]*schema.TypeDef, len(s.Types))
	for i := range s.Types {
		names = append(names, s.Types[i].Name)
		byName[s.Types[i].Name] = &s.Types[i]
	}
	slices.Sort(names)
	for _, n := range names {
		a, err := encodeAtom(byName[n].Atom)
		if err != nil {
			return nil, fmt.Errorf("type %s: %w", n, err)
		}
		t.Types = append(t.Types, typeDef{Name: n, atom: a})
	}
	return json.Marshal(t)
}

func encodeAtom(a schema.Atom) (atom, error) {
	var out atom
	if a.Scalar != nil {
		out.Scalar = string(*a.Scalar)
	}
	if l := a.List; l != nil {
		e, err := encodeRef(l.ElementType)
		if err != nil {
			return out, err
		}
		out.List = &list{Elem: e, Rel: string(l.ElementRelationship), Keys: l.Keys}
	}
	if m := a.Map; m != nil {
		out.Map = &mapT{Rel: string(m.ElementRelationship)}
		if m.ElementType != (schema.TypeRef{}) {
			e, err := encodeRef(m.ElementType)
			if err != nil {
				return out, err
			}
			out.Map.Elem = &e
		}
		for _, f := range m.Fields {
			ft, err := encodeRef(f.Type)
			if err != nil {
				return out, fmt.Errorf("field %s: %w", f.Name, err)
			}
			ff := field{Name: f.Name, Type: ft}
			if f.Default != nil {
				if ff.Default, err = json.Marshal(jsonable(f.Default)); err != nil {
					return out, fmt.Errorf("field %s: default: %w", f.Name, err)
				}
			}
			out.Map.Fields = append(out.Map.Fields, ff)
		}
		for _, u := range m.Unions {
			eu := union{Discriminator: u.Discriminator, Deduce: u.DeduceInvalidDiscriminator}
			for _, f := range u.Fields {
				eu.Fields = append(eu.Fields, [2]string{f.FieldName, f.DiscriminatorValue})
			}
			out.Map.Unions = append(out.Map.Unions, eu)
		}
	}
	return out, nil
}

func encodeRef(r schema.TypeRef) (typeRef, error) {
	out := typeRef{Nullable: r.Nullable}
	if r.NamedType != nil {
		out.Named = *r.NamedType
	}
	if r.ElementRelationship != nil {
		out.Rel = string(*r.ElementRelationship)
	}
	if r.Inlined != (schema.Atom{}) {
		a, err := encodeAtom(r.Inlined)
		if err != nil {
			return out, err
		}
		out.Inlined = &a
	}
	return out, nil
}

// jsonable converts YAML's decoded maps (map[any]any) for encoding/json.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = jsonable(x)
		}
		return out
	}
	return v
}

// Decode builds a converter from a table Encode wrote.
func Decode(raw []byte) (*Converter, error) {
	var t table
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("typeconv: table: %w", err)
	}
	p := &typed.Parser{}
	p.Schema.Types = make([]schema.TypeDef, len(t.Types))
	for i := range t.Types {
		a, err := decodeAtom(&t.Types[i].atom)
		if err != nil {
			return nil, fmt.Errorf("typeconv: table: type %s: %w", t.Types[i].Name, err)
		}
		p.Schema.Types[i] = schema.TypeDef{Name: t.Types[i].Name, Atom: a}
	}
	for _, k := range slices.Sorted(maps.Keys(t.Kinds)) {
		if _, ok := p.Schema.FindNamedType(t.Kinds[k]); !ok {
			return nil, fmt.Errorf("typeconv: table: kind %s: no type %s", k, t.Kinds[k])
		}
	}
	return &Converter{parser: p, kinds: t.Kinds}, nil
}

func decodeAtom(a *atom) (schema.Atom, error) {
	var out schema.Atom
	if a.Scalar != "" {
		s := schema.Scalar(a.Scalar)
		out.Scalar = &s
	}
	if l := a.List; l != nil {
		e, err := decodeRef(&l.Elem)
		if err != nil {
			return out, err
		}
		out.List = &schema.List{ElementType: e, ElementRelationship: schema.ElementRelationship(l.Rel), Keys: l.Keys}
	}
	if m := a.Map; m != nil {
		out.Map = &schema.Map{ElementRelationship: schema.ElementRelationship(m.Rel)}
		if m.Elem != nil {
			e, err := decodeRef(m.Elem)
			if err != nil {
				return out, err
			}
			out.Map.ElementType = e
		}
		for i := range m.Fields {
			f := &m.Fields[i]
			ft, err := decodeRef(&f.Type)
			if err != nil {
				return out, fmt.Errorf("field %s: %w", f.Name, err)
			}
			sf := schema.StructField{Name: f.Name, Type: ft}
			if len(f.Default) > 0 {
				if sf.Default, err = decodeDefault(f.Default); err != nil {
					return out, fmt.Errorf("field %s: default: %w", f.Name, err)
				}
			}
			out.Map.Fields = append(out.Map.Fields, sf)
		}
		for _, u := range m.Unions {
			su := schema.Union{Discriminator: u.Discriminator, DeduceInvalidDiscriminator: u.Deduce}
			for _, f := range u.Fields {
				su.Fields = append(su.Fields, schema.UnionField{FieldName: f[0], DiscriminatorValue: f[1]})
			}
			out.Map.Unions = append(out.Map.Unions, su)
		}
	}
	return out, nil
}

func decodeRef(r *typeRef) (schema.TypeRef, error) {
	out := schema.TypeRef{Nullable: r.Nullable}
	if r.Named != "" {
		n := r.Named
		out.NamedType = &n
	}
	if r.Rel != "" {
		rel := schema.ElementRelationship(r.Rel)
		out.ElementRelationship = &rel
	}
	if r.Inlined != nil {
		a, err := decodeAtom(r.Inlined)
		if err != nil {
			return out, err
		}
		out.Inlined = a
	}
	return out, nil
}

// decodeDefault decodes a default as YAML gave it: integral numbers as
// ints, objects as map[any]any.
func decodeDefault(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return yamlShaped(v), nil
}

func yamlShaped(v any) any {
	switch t := v.(type) {
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t)
		}
	case map[string]any:
		out := make(map[any]any, len(t))
		for k, x := range t {
			out[k] = yamlShaped(x)
		}
		return out
	case []any:
		for i, x := range t {
			t[i] = yamlShaped(x)
		}
	}
	return v
}
