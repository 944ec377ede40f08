package patterns

import (
	"bytes"
	"encoding/json"
	"testing"
)

func FuzzMatch(f *testing.F) {
	seeds := [][2]string{
		{`{"spec":{"containers":[{"name":"*","(image)":"*:latest | !*:*","imagePullPolicy":"!Always"}]}}`, `{"spec":{"containers":[{"name":"a","image":"nginx"}]}}`},
		{`{"spec":{"=(volumes)":[{"X(hostPath)":"null"}]}}`, `{"spec":{"volumes":[{"hostPath":{}}]}}`},
		{`{"spec":{"^(containers)":[{"image":"a"}],"x":"*"}}`, `{"spec":{"containers":[{"image":"b"}]}}`},
		{`{"metadata":{"labels":{"app*":"x","X(a/*)":"?*"}},"m":[["a"],["1-5"]]}`, `{"metadata":{"labels":{"apple":"x","a/b":"c"}},"m":[["a"],[3]]}`},
		{`{"<(g)":"1","h":{"=(k)":">=1Gi"}}`, `{"g":"1","h":{"k":"2Gi"}}`},
		{`{"a":[]}`, `{"a":[1]}`},
		{`{"a":null,"b":1.5,"c":true,"d":"1!-5"}`, `{"a":0,"b":"1.5","c":true,"d":"7"}`},
		{`["x"]`, `"x"`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, patternJSON, resourceJSON []byte) {
		var pattern, resource, resourceNumbers any
		if json.Unmarshal(patternJSON, &pattern) != nil || json.Unmarshal(resourceJSON, &resource) != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(resourceJSON))
		dec.UseNumber()
		_ = dec.Decode(&resourceNumbers)

		p, err := Compile(pattern)
		if err != nil {
			return // too deep
		}
		first := p.Match(resource)
		second := p.Match(resource)
		if (first == nil) != (second == nil) || (first != nil && first.Error() != second.Error()) {
			t.Fatalf("Match is not deterministic: %v / %v", first, second)
		}
		if first != nil {
			e, ok := first.(*Error)
			if !ok {
				t.Fatalf("Match returned %T", first)
			}
			if e.Skip && e.Path != "" {
				t.Fatalf("skip with a path: %+v", e)
			}
		}
		_ = p.Match(resourceNumbers)
		if err := MatchPattern(resource, pattern); (err == nil) != (first == nil) {
			t.Fatalf("MatchPattern = %v, Match = %v", err, first)
		}
		MatchValue(resource, pattern)
		if s, ok := pattern.(string); ok {
			ParseAnchor(s)
		}
	})
}
