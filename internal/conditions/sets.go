package conditions

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/gavelpolicy/gavel/internal/wildcard"
)

// legacyIn implements the deprecated In and NotIn operators.
func legacyIn(key, value any, not bool) (bool, error) {
	switch k := key.(type) {
	case string:
		return legacyScalarIn(k, value, not), nil
	case float64:
		return legacyScalarIn(text(k), value, not), nil
	case []any:
		keys := make([]string, len(k))
		for i, e := range k {
			s, ok := e.(string)
			if !ok {
				return false, &ValueError{
					Path:   "key[" + strconv.Itoa(i) + "]",
					Reason: "In and NotIn take a list key of strings only (upstream crashes on other elements); use AnyIn, AllIn, AnyNotIn or AllNotIn",
				}
			}
			keys[i] = s
		}
		return legacySetIn(keys, value, not), nil
	}
	return false, nil
}

func legacyScalarIn(key string, value any, not bool) bool {
	invalid, found := legacyKeyExists(key, value)
	if invalid {
		return false
	}
	return found != not
}

// legacyKeyExists looks a single key up in a list value (wildcards both
// ways), in a string value (wildcard), or in a JSON string list (exactly).
// invalid reports a value of the wrong type, which makes both In and NotIn
// false.
func legacyKeyExists(key string, value any) (invalid, found bool) {
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			if matchEither(key, text(e)) {
				return false, true
			}
		}
		return false, false
	case string:
		if wildcard.Match(v, key) {
			return false, true
		}
		var list []string
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return true, false
		}
		for _, e := range list {
			if e == key {
				return false, true
			}
		}
		return false, false
	}
	return true, false
}

// legacySetIn compares a list key with the value set exactly: In holds when
// every key is in the set, NotIn when at least one is not.
func legacySetIn(keys []string, value any, not bool) bool {
	var set []string
	switch v := value.(type) {
	case []any:
		set = make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return false
			}
			set[i] = s
		}
	case string:
		// Upstream answers true for both In and NotIn here.
		if len(keys) == 1 && keys[0] == v {
			return true
		}
		if err := json.Unmarshal([]byte(v), &set); err != nil {
			return false
		}
	default:
		return false
	}
	for _, k := range keys {
		if !containsString(set, k) {
			return not
		}
	}
	return !not
}

func containsString(set []string, s string) bool {
	for _, e := range set {
		if e == s {
			return true
		}
	}
	return false
}

// anyIn implements AnyIn and AnyNotIn.
func anyIn(key, value any, not bool) bool {
	switch k := key.(type) {
	case string:
		return scalarIn(k, value, not)
	case float64, bool:
		return scalarIn(text(k), value, not)
	case []any:
		var buf [textsBuf]string
		return anySetIn(texts(buf[:0], k), value, not)
	}
	return false
}

// allIn implements AllIn and AllNotIn.
func allIn(key, value any, not bool) bool {
	switch k := key.(type) {
	case string:
		return scalarIn(k, value, not)
	case float64, bool:
		return scalarIn(text(k), value, not)
	case []any:
		var buf [textsBuf]string
		return allSetIn(texts(buf[:0], k), value, not)
	}
	return false
}

// textsBuf is the length of the lists whose texts the set operators write
// in an array on their stack: condition keys and values are short lists.
const textsBuf = 16

// texts returns the texts of the elements of list, written in buf when it
// has room for them (the set operators pass an array on their stack, which
// keeps the common short lists off the heap).
func texts(buf []string, list []any) []string {
	out := buf[:0]
	if cap(out) < len(list) {
		out = make([]string, 0, len(list))
	}
	for _, e := range list {
		out = append(out, text(e))
	}
	return out
}

// scalarIn handles a single key for the four Any/All operators, which agree
// when there is only one key.
func scalarIn(key string, value any, not bool) bool {
	invalid, found := keyExists(key, value)
	if invalid {
		return false
	}
	return found != not
}

// keyExists looks a single key up in a list value (wildcards both ways), a
// string value (wildcard, then range, then JSON string list or the string
// itself).
func keyExists(key string, value any) (invalid, found bool) {
	switch v := value.(type) {
	case []any:
		for _, e := range v {
			if matchEither(key, text(e)) {
				return false, true
			}
		}
		return false, false
	case string:
		if wildcard.Match(v, key) {
			return false, true
		}
		if classify(v) == opInRange {
			return false, matchPattern(key, v)
		}
		list, ok := stringList(v)
		if !ok {
			return true, false
		}
		return false, containsString(list, key)
	}
	return true, false
}

// stringList reads a string value as a set: a JSON list of strings, or the
// string itself when it is not JSON at all. ok is false for JSON that is not
// a list of strings.
func stringList(v string) (list []string, ok bool) {
	if !json.Valid([]byte(v)) {
		return []string{v}, true
	}
	if err := json.Unmarshal([]byte(v), &list); err != nil {
		return nil, false
	}
	return list, true
}

func anySetIn(keys []string, value any, not bool) bool {
	var set []string
	var buf [textsBuf]string
	switch v := value.(type) {
	case []any:
		set = texts(buf[:0], v)
	case string:
		if len(keys) == 1 && keys[0] == v {
			return !not
		}
		if classify(v) == opInRange {
			if not {
				// Upstream turns "a-b" into "a!-b" by replacing the first '-',
				// which is not the negation when a starts with a minus sign.
				negated := strings.Replace(v, "-", "!-", 1)
				for _, k := range keys {
					if matchPattern(k, negated) {
						return true
					}
				}
				return false
			}
			for _, k := range keys {
				if matchPattern(k, v) {
					return true
				}
			}
			return false
		}
		list, ok := stringList(v)
		if !ok {
			return false
		}
		set = list
	default:
		return false
	}
	for _, k := range keys {
		found := matchAny(k, set)
		if found != not {
			return true
		}
	}
	return false
}

func allSetIn(keys []string, value any, not bool) bool {
	var set []string
	var buf [textsBuf]string
	switch v := value.(type) {
	case []any:
		set = texts(buf[:0], v)
	case string:
		if len(keys) == 1 && keys[0] == v {
			return !not
		}
		if classify(v) == opInRange {
			for _, k := range keys {
				if matchPattern(k, v) == not {
					return false
				}
			}
			return true
		}
		list, ok := stringList(v)
		if !ok {
			return false
		}
		set = list
	default:
		return false
	}
	for _, k := range keys {
		if matchAny(k, set) == not {
			return false
		}
	}
	return true
}

func matchAny(key string, set []string) bool {
	for _, e := range set {
		if matchEither(key, e) {
			return true
		}
	}
	return false
}

// matchEither matches two texts with wildcards allowed on either side.
func matchEither(a, b string) bool {
	return wildcard.Match(b, a) || wildcard.Match(a, b)
}
