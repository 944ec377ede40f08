package patterns

import "testing"

func TestParseAnchor(t *testing.T) {
	tests := []struct {
		key  string
		want Anchor
		ok   bool
	}{
		{"(image)", Anchor{Condition, "image"}, true},
		{"<(image)", Anchor{Global, "image"}, true},
		{"X(hostPath)", Anchor{Negation, "hostPath"}, true},
		{"+(imagePullPolicy)", Anchor{AddIfNotPresent, "imagePullPolicy"}, true},
		{"=(volumes)", Anchor{Equality, "volumes"}, true},
		{"^(containers)", Anchor{Existence, "containers"}, true},
		{"X(fluxcd.io/*)", Anchor{Negation, "fluxcd.io/*"}, true},
		{"(a)(b)", Anchor{Condition, "a)(b"}, true},
		{"(lim(its)", Anchor{Condition, "lim(its"}, true},
		{"()", Anchor{}, false},
		{"^()", Anchor{}, false},
		{"X()", Anchor{}, false},
		{"", Anchor{}, false},
		{")", Anchor{}, false},
		{"X)", Anchor{}, false},
		{"Xa)", Anchor{}, false},
		{"image", Anchor{}, false},
		{"(image", Anchor{}, false},
		{"image)", Anchor{}, false},
		{"=image", Anchor{}, false},
		{"so)m(et(hin)g", Anchor{}, false},
		{"Y(image)", Anchor{}, false},
		{" (image)", Anchor{}, false},
		{"x(image)", Anchor{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseAnchor(tt.key)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseAnchor(%q) = %+v, %v; want %+v, %v", tt.key, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.key {
			t.Errorf("ParseAnchor(%q).String() = %q", tt.key, got.String())
		}
		if IsAnchor(tt.key) != tt.ok {
			t.Errorf("IsAnchor(%q) = %v", tt.key, !tt.ok)
		}
	}
}

func TestAnchorPredicates(t *testing.T) {
	types := []AnchorType{Condition, Global, Negation, AddIfNotPresent, Equality, Existence}
	for _, typ := range types {
		a := Anchor{Type: typ, Key: "k"}
		got := []bool{a.IsCondition(), a.IsGlobal(), a.IsNegation(), a.IsAddIfNotPresent(), a.IsEquality(), a.IsExistence()}
		for i, other := range types {
			if got[i] != (typ == other) {
				t.Errorf("anchor %q: predicate for %q = %v", a, other, got[i])
			}
		}
		if a.ContainsCondition() != (typ == Condition || typ == Global) {
			t.Errorf("anchor %q: ContainsCondition = %v", a, a.ContainsCondition())
		}
	}
	if s := (Anchor{Type: Equality}).String(); s != "" {
		t.Errorf("empty key String() = %q", s)
	}
	if k := RemoveAnchor("=(volumes)"); k != "volumes" {
		t.Errorf("RemoveAnchor = %q", k)
	}
	if k := RemoveAnchor("volumes"); k != "volumes" {
		t.Errorf("RemoveAnchor = %q", k)
	}
}
