package jmespath

import (
	"github.com/gavelpolicy/gavel/internal/wildcard"

	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// Handlers receive arguments whose types were already checked against the
// function's declaration, so the type assertions below cannot fail.

func jpCompare(args []any) (any, error) {
	return float64(strings.Compare(args[0].(string), args[1].(string))), nil
}

func jpEqualFold(args []any) (any, error) {
	return strings.EqualFold(args[0].(string), args[1].(string)), nil
}

func jpReplace(args []any) (any, error) {
	return strings.Replace(args[0].(string), args[1].(string), args[2].(string), int(args[3].(float64))), nil
}

func jpReplaceAll(args []any) (any, error) {
	return strings.ReplaceAll(args[0].(string), args[1].(string), args[2].(string)), nil
}

func jpToUpper(args []any) (any, error) { return strings.ToUpper(args[0].(string)), nil }

func jpToLower(args []any) (any, error) { return strings.ToLower(args[0].(string)), nil }

func jpTrim(args []any) (any, error) {
	return strings.Trim(args[0].(string), args[1].(string)), nil
}

func jpTrimPrefix(args []any) (any, error) {
	return strings.TrimPrefix(args[0].(string), args[1].(string)), nil
}

func jpSplit(args []any) (any, error) {
	parts := strings.Split(args[0].(string), args[1].(string))
	out := make([]any, len(parts))
	for k, p := range parts {
		out[k] = p
	}
	return out, nil
}

// scalarString renders a string or number argument as text the way upstream
// does: numbers use the shortest representation at float32 precision.
func scalarString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 32), true
	case bool:
		return strconv.FormatBool(t), true
	case int:
		return strconv.Itoa(t), true
	}
	return "", false
}

func (i *Interpreter) jpRegexReplaceAll(args []any) (any, error) {
	re, err := i.compiledArg("regex_replace_all", args[0].(string))
	if err != nil {
		return nil, err
	}
	src, _ := scalarString(args[1])
	repl, _ := scalarString(args[2])
	return re.ReplaceAllString(src, repl), nil
}

func (i *Interpreter) jpRegexReplaceAllLiteral(args []any) (any, error) {
	re, err := i.compiledArg("regex_replace_all_literal", args[0].(string))
	if err != nil {
		return nil, err
	}
	src, _ := scalarString(args[1])
	repl, _ := scalarString(args[2])
	return re.ReplaceAllLiteralString(src, repl), nil
}

func (i *Interpreter) jpRegexMatch(args []any) (any, error) {
	re, err := i.compiledArg("regex_match", args[0].(string))
	if err != nil {
		return nil, err
	}
	src, _ := scalarString(args[1])
	return re.MatchString(src), nil
}

func (i *Interpreter) compiledArg(name, pattern string) (*regexp.Regexp, error) {
	re, err := i.regexp(pattern)
	if err != nil {
		return nil, &FunctionError{Function: name, Argument: 1, Message: err.Error(), Err: err}
	}
	return re, nil
}

func jpPatternMatch(args []any) (any, error) {
	src, _ := scalarString(args[1])
	return wildcard.Match(args[0].(string), src), nil
}

func jpLabelMatch(args []any) (any, error) {
	labels, match := args[0].(map[string]any), args[1].(map[string]any)
	for k, v := range labels {
		mv, ok := match[k]
		if !ok || !sameValue(mv, v) {
			return false, nil
		}
	}
	return true, nil
}

// sameValue compares two JSON values. Scalars compare like Go's ==; objects
// and arrays compare structurally (upstream compares them with == and fails).
func sameValue(a, b any) bool {
	switch a.(type) {
	case map[string]any, []any:
		return reflect.DeepEqual(a, b)
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	return a == b
}

func jpToBoolean(args []any) (any, error) {
	s := args[0].(string)
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return nil, fnErr("to_boolean", 1, "lowercase argument must be 'true' or 'false' (provided: '%s')", s)
}

func jpBase64Decode(args []any) (any, error) {
	out, err := base64.StdEncoding.DecodeString(args[0].(string))
	if err != nil {
		return nil, fnWrap("base64_decode", 1, err)
	}
	return string(out), nil
}

func jpBase64Encode(args []any) (any, error) {
	return base64.StdEncoding.EncodeToString([]byte(args[0].(string))), nil
}

func jpPathCanonicalize(args []any) (any, error) {
	return filepath.Join(args[0].(string)), nil
}

// jpTruncate keeps the first n characters (runes); a negative n gives "".
func jpTruncate(args []any) (any, error) {
	s, n := args[0].(string), args[1].(float64)
	if n < 0 {
		n = 0
	}
	if float64(utf8.RuneCountInString(s)) <= n {
		return s, nil
	}
	limit := int(n)
	count := 0
	for idx := range s {
		if count == limit {
			return s[:idx], nil
		}
		count++
	}
	return s, nil
}

func jpParseJSON(args []any) (any, error) {
	var out any
	if err := json.Unmarshal([]byte(args[0].(string)), &out); err != nil {
		return nil, fnWrap("parse_json", 1, err)
	}
	return out, nil
}

func jpParseYAML(args []any) (any, error) {
	data, err := yaml.YAMLToJSON([]byte(args[0].(string)))
	if err != nil {
		return nil, fnWrap("parse_yaml", 1, err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fnWrap("parse_yaml", 1, err)
	}
	return out, nil
}

// intNumber returns n as an int if it has no fractional part.
func intNumber(n float64) (int, error) {
	i := int(n)
	if n != float64(i) {
		return 0, errors.New("expected an integer number but got a floating point number")
	}
	return i, nil
}

func jpLookup(args []any) (any, error) {
	switch input := args[0].(type) {
	case map[string]any:
		key, ok := args[1].(string)
		if !ok {
			return nil, fnErr("lookup", 2, msgInvalidArgumentType, 2, "String")
		}
		return input[key], nil
	case []any:
		key, ok := args[1].(float64)
		if !ok {
			return nil, fnErr("lookup", 2, msgInvalidArgumentType, 2, "Number")
		}
		idx, err := intNumber(key)
		if err != nil {
			return nil, fnErr("lookup", 2, "argument #2: %s", err.Error())
		}
		if idx < 0 || idx > len(input)-1 {
			return nil, nil
		}
		return input[idx], nil
	}
	return nil, fnErr("lookup", 1, msgInvalidArgumentType, 1, "Object or Array")
}

func jpItems(args []any) (any, error) {
	keyName, valName := args[1].(string), args[2].(string)
	switch input := args[0].(type) {
	case map[string]any:
		keys := make([]string, 0, len(input))
		for k := range input {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, 0, len(keys))
		for _, k := range keys {
			out = append(out, map[string]any{keyName: k, valName: input[k]})
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(input))
		for idx, v := range input {
			out = append(out, map[string]any{keyName: float64(idx), valName: v})
		}
		return out, nil
	}
	return nil, fnErr("items", 1, msgInvalidArgumentType, 1, "Object or Array")
}

func jpObjectFromLists(args []any) (any, error) {
	keys, ok := args[0].([]any)
	if !ok {
		return nil, fnErr("object_from_lists", 1, msgInvalidArgumentType, 1, "Array")
	}
	values, ok := args[1].([]any)
	if !ok {
		return nil, fnErr("object_from_lists", 2, msgInvalidArgumentType, 2, "Array")
	}
	out := make(map[string]any, len(keys))
	for idx, k := range keys {
		key, ok := scalarString(k)
		if !ok {
			return nil, fnErr("object_from_lists", 1, msgInvalidArgumentType, 1, "StringArray")
		}
		if idx < len(values) {
			out[key] = values[idx]
		} else {
			out[key] = nil
		}
	}
	return out, nil
}

func jpSHA256(args []any) (any, error) {
	sum := sha256.Sum256([]byte(args[0].(string)))
	return hex.EncodeToString(sum[:]), nil
}

func jpMD5(args []any) (any, error) {
	sum := md5.Sum([]byte(args[0].(string)))
	return hex.EncodeToString(sum[:]), nil
}

func jpSHA1(args []any) (any, error) {
	sum := sha1.Sum([]byte(args[0].(string)))
	return hex.EncodeToString(sum[:]), nil
}
