package jmespath

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	jpfunctions "github.com/jmespath-community/go-jmespath/pkg/functions"
)

// jpType names a JMESPath value type in signatures and error messages.
type jpType string

const (
	tString jpType = "string"
	tNumber jpType = "number"
	tArray  jpType = "array"
	tObject jpType = "object"
	tBool   jpType = "bool"
	tAny    jpType = "any"
)

// FunctionInfo describes one function available to expressions, for help
// output such as a `gavel jp function` command.
type FunctionInfo struct {
	// Name is the function name as written in expressions.
	Name string
	// Arguments lists, per argument, the accepted types joined with "|".
	// Optional arguments end in "?", variadic ones in "...".
	Arguments []string
	// ReturnType is the type of the result (types joined with "|").
	ReturnType string
	// Description is a one-line explanation.
	Description string
	// Custom is true for Kyverno's extension functions and false for the
	// standard JMESPath functions.
	Custom bool
}

// Signature returns "name(arg1, arg2) returnType".
func (f FunctionInfo) Signature() string {
	return fmt.Sprintf("%s(%s) %s", f.Name, strings.Join(f.Arguments, ", "), f.ReturnType)
}

// String returns the signature followed by the description in parentheses,
// in the upstream `jp function` format.
func (f FunctionInfo) String() string {
	if f.Description == "" {
		return f.Signature()
	}
	return f.Signature() + " (" + f.Description + ")"
}

// Functions lists every function the Interpreter knows, sorted by name. A
// custom function that replaces a standard one of the same name (items,
// replace, split, sum, trim) is listed once, as custom.
func (i *Interpreter) Functions() []FunctionInfo {
	out := make([]FunctionInfo, len(i.infos))
	for k, info := range i.infos {
		info.Arguments = append([]string(nil), info.Arguments...)
		out[k] = info
	}
	return out
}

// fnSpec declares one custom function.
type fnSpec struct {
	name    string
	args    [][]jpType
	ret     []jpType
	note    string
	handler func(args []any) (any, error)
}

// functionTable builds the entries registered with the evaluator (standard
// functions first, custom ones after, so that custom ones win on a name
// clash) and the matching help records.
func (i *Interpreter) functionTable() ([]jpfunctions.FunctionEntry, []FunctionInfo) {
	custom := i.customFunctions()
	names := make(map[string]bool, len(custom))
	var entries []jpfunctions.FunctionEntry
	var infos []FunctionInfo
	for _, spec := range custom {
		names[spec.name] = true
	}
	standard := jpfunctions.GetDefaultFunctions()
	i.sigs = signatures(standard, custom)
	for _, std := range standard {
		std.Handler = i.guarded(std.Name, std.Handler)
		entries = append(entries, std)
		if names[std.Name] {
			continue
		}
		infos = append(infos, standardInfo(std))
	}
	for _, spec := range custom {
		spec.handler = i.guarded(spec.name, spec.handler)
		entries = append(entries, spec.entry())
		infos = append(infos, spec.info())
	}
	sort.Slice(infos, func(a, b int) bool { return infos[a].Name < infos[b].Name })
	return entries, infos
}

// entry wraps the handler with the argument checks. The evaluator only checks
// arity (every argument is declared as "any"), so that a wrong type produces
// a FunctionError naming the function and the argument.
func (s fnSpec) entry() jpfunctions.FunctionEntry {
	specs := make([]jpfunctions.ArgSpec, len(s.args))
	for k := range specs {
		specs[k] = jpfunctions.ArgSpec{Types: []jpfunctions.JpType{jpfunctions.JpAny}}
	}
	name, args, handler := s.name, s.args, s.handler
	return jpfunctions.FunctionEntry{
		Name:      name,
		Arguments: specs,
		Handler: func(arguments []any) (any, error) {
			if len(arguments) != len(args) {
				return nil, fmt.Errorf("invalid arity, the function '%s' expects at most %d arguments but %d were supplied", name, len(args), len(arguments))
			}
			for k, types := range args {
				if !matchesType(types, arguments[k]) {
					return nil, fnErr(name, k+1, msgArgumentType, k+1, joinTypes(types, " or "), typeName(arguments[k]))
				}
			}
			return handler(arguments)
		},
	}
}

func (s fnSpec) info() FunctionInfo {
	args := make([]string, len(s.args))
	for k, types := range s.args {
		args[k] = joinTypes(types, "|")
	}
	return FunctionInfo{Name: s.name, Arguments: args, ReturnType: joinTypes(s.ret, "|"), Description: s.note, Custom: true}
}

func matchesType(types []jpType, v any) bool {
	for _, t := range types {
		switch t {
		case tAny:
			return true
		case tString:
			if _, ok := v.(string); ok {
				return true
			}
		case tNumber:
			if _, ok := v.(float64); ok {
				return true
			}
		case tBool:
			if _, ok := v.(bool); ok {
				return true
			}
		case tObject:
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case tArray:
			if _, ok := v.([]any); ok {
				return true
			}
			if v != nil && reflect.TypeOf(v).Kind() == reflect.Slice {
				return true
			}
		}
	}
	return false
}

func joinTypes(types []jpType, sep string) string {
	s := make([]string, len(types))
	for k, t := range types {
		s[k] = string(t)
	}
	return strings.Join(s, sep)
}

// typeName is the JMESPath type of v as shown in error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return string(tString)
	case float64:
		return string(tNumber)
	case bool:
		return string(tBool)
	case map[string]any:
		return string(tObject)
	case []any:
		return string(tArray)
	}
	if reflect.TypeOf(v).Kind() == reflect.Slice {
		return string(tArray)
	}
	return reflect.TypeOf(v).String()
}

// standardInfo describes a standard JMESPath function.
func standardInfo(e jpfunctions.FunctionEntry) FunctionInfo {
	args := make([]string, len(e.Arguments))
	for k, a := range e.Arguments {
		types := make([]string, len(a.Types))
		for n, t := range a.Types {
			types[n] = string(t)
		}
		s := strings.Join(types, "|")
		if a.Optional {
			s += "?"
		}
		if a.Variadic {
			s += "..."
		}
		args[k] = s
	}
	d := standardDocs[e.Name]
	return FunctionInfo{Name: e.Name, Arguments: args, ReturnType: d[0], Description: d[1]}
}

// standardDocs gives the return type and a short description of the
// standard functions (written for this package).
var standardDocs = map[string][2]string{
	"abs":         {"number", "absolute value of a number"},
	"avg":         {"number", "average of an array of numbers"},
	"ceil":        {"number", "smallest integer not less than the number"},
	"contains":    {"bool", "whether an array holds a value or a string holds a substring"},
	"ends_with":   {"bool", "whether the first string ends with the second"},
	"find_first":  {"number", "index of the first occurrence of a substring, optionally within [start, end)"},
	"find_last":   {"number", "index of the last occurrence of a substring, optionally within [start, end)"},
	"floor":       {"number", "largest integer not greater than the number"},
	"from_items":  {"object", "builds an object from an array of [key, value] pairs"},
	"group_by":    {"object", "groups array elements by the string an expression returns"},
	"items":       {"array", "converts an object to an array of [key, value] pairs"},
	"join":        {"string", "joins an array of strings with a separator"},
	"keys":        {"array", "keys of an object"},
	"length":      {"number", "length of a string, array or object"},
	"lower":       {"string", "lower-cases a string"},
	"map":         {"array", "applies an expression to every element of an array"},
	"max":         {"number|string", "largest element of an array of numbers or strings"},
	"max_by":      {"any", "element of an array for which an expression is largest"},
	"merge":       {"object", "merges objects, later keys winning"},
	"min":         {"number|string", "smallest element of an array of numbers or strings"},
	"min_by":      {"any", "element of an array for which an expression is smallest"},
	"not_null":    {"any", "first argument that is not null"},
	"pad_left":    {"string", "pads a string on the left to a width"},
	"pad_right":   {"string", "pads a string on the right to a width"},
	"replace":     {"string", "replaces occurrences of a substring"},
	"reverse":     {"array|string", "reverses an array or a string"},
	"sort":        {"array", "sorts an array of numbers or strings"},
	"sort_by":     {"array", "sorts an array by the value of an expression"},
	"split":       {"array", "splits a string on a separator"},
	"starts_with": {"bool", "whether the first string starts with the second"},
	"sum":         {"number", "sum of an array of numbers"},
	"to_array":    {"array", "wraps a non-array value in an array"},
	"to_number":   {"number", "converts a string to a number, null if it is not one"},
	"to_string":   {"string", "JSON text of a value (strings are returned unchanged)"},
	"trim":        {"string", "trims whitespace or the given characters from both ends"},
	"trim_left":   {"string", "trims whitespace or the given characters from the start"},
	"trim_right":  {"string", "trims whitespace or the given characters from the end"},
	"type":        {"string", "JMESPath type name of a value"},
	"upper":       {"string", "upper-cases a string"},
	"values":      {"array", "values of an object"},
	"zip":         {"array", "zips arrays together element by element"},
}

// customFunctions declares every Kyverno custom function.
func (i *Interpreter) customFunctions() []fnSpec {
	s, n, o, a, b, x := tString, tNumber, tObject, tArray, tBool, tAny
	return []fnSpec{
		{"compare", [][]jpType{{s}, {s}}, []jpType{n}, "compares two strings lexicographically", jpCompare},
		{"equal_fold", [][]jpType{{s}, {s}}, []jpType{b}, "allows comparing two strings for equivalency where the only differences are letter cases", jpEqualFold},
		{"replace", [][]jpType{{s}, {s}, {s}, {n}}, []jpType{s}, "replaces a specified number of instances of the source string with the replacement string in a parent", jpReplace},
		{"replace_all", [][]jpType{{s}, {s}, {s}}, []jpType{s}, "replace all instances of one string with another in an overall parent string", jpReplaceAll},
		{"to_upper", [][]jpType{{s}}, []jpType{s}, "takes in a string and outputs the same string with all upper-case letters", jpToUpper},
		{"to_lower", [][]jpType{{s}}, []jpType{s}, "takes in a string and outputs the same string with all lower-case letters", jpToLower},
		{"trim", [][]jpType{{s}, {s}}, []jpType{s}, "trims both ends of the source string by characters appearing in the second string", jpTrim},
		{"trim_prefix", [][]jpType{{s}, {s}}, []jpType{s}, "trims the second string prefix from the first string if the first string starts with the prefix", jpTrimPrefix},
		{"split", [][]jpType{{s}, {s}}, []jpType{a}, "splits the first string when the second string is found and converts it into an array", jpSplit},
		{"regex_replace_all", [][]jpType{{s}, {s, n}, {s, n}}, []jpType{s}, "converts all parameters to string", i.jpRegexReplaceAll},
		{"regex_replace_all_literal", [][]jpType{{s}, {s, n}, {s, n}}, []jpType{s}, "converts all parameters to string", i.jpRegexReplaceAllLiteral},
		{"regex_match", [][]jpType{{s}, {s, n}}, []jpType{b}, "first string is the regular expression which is compared with second input which can be a number or string", i.jpRegexMatch},
		{"pattern_match", [][]jpType{{s}, {s, n}}, []jpType{b}, "'*' matches zero or more characters, '?' matches exactly one character", jpPatternMatch},
		{"label_match", [][]jpType{{o}, {o}}, []jpType{b}, "object arguments must be enclosed in backticks; ex. `{{request.object.spec.template.metadata.labels}}`", jpLabelMatch},
		{"to_boolean", [][]jpType{{s}}, []jpType{b}, "It returns true or false for any string, such as 'True', 'TruE', 'False', 'FAlse', 'faLSE', etc.", jpToBoolean},
		{"add", [][]jpType{{x}, {x}}, []jpType{x}, "does arithmetic addition of two specified values of numbers, quantities, and durations", jpAdd},
		{"sum", [][]jpType{{a}}, []jpType{x}, "does arithmetic addition of specified array of values of numbers, quantities, and durations", jpSum},
		{"subtract", [][]jpType{{x}, {x}}, []jpType{x}, "does arithmetic subtraction of two specified values of numbers, quantities, and durations", jpSubtract},
		{"multiply", [][]jpType{{x}, {x}}, []jpType{x}, "does arithmetic multiplication of two specified values of numbers, quantities, and durations", jpMultiply},
		{"divide", [][]jpType{{x}, {x}}, []jpType{x}, "divisor must be non zero", jpDivide},
		{"modulo", [][]jpType{{x}, {x}}, []jpType{x}, "divisor must be non-zero, arguments must be integers", jpModulo},
		{"round", [][]jpType{{n}, {n}}, []jpType{n}, "does roundoff to upto the given decimal places", jpRound},
		{"base64_decode", [][]jpType{{s}}, []jpType{s}, "decodes a base 64 string", jpBase64Decode},
		{"base64_encode", [][]jpType{{s}}, []jpType{s}, "encodes a regular, plaintext and unencoded string to base64", jpBase64Encode},
		{"time_since", [][]jpType{{s}, {s}, {s}}, []jpType{s}, "calculate the difference between a start and end period of time where the end may either be a static definition or the then-current time", i.jpTimeSince},
		{"time_now", nil, []jpType{s}, "returns current time in RFC 3339 format", i.jpTimeNow},
		{"time_now_utc", nil, []jpType{s}, "returns current UTC time in RFC 3339 format", i.jpTimeNowUTC},
		{"path_canonicalize", [][]jpType{{s}}, []jpType{s}, "normalizes or canonicalizes a given path by removing excess slashes", jpPathCanonicalize},
		{"truncate", [][]jpType{{s}, {n}}, []jpType{s}, "length argument must be enclosed in backticks; ex. \"{{request.object.metadata.name | truncate(@, `9`)}}\"", jpTruncate},
		{"semver_compare", [][]jpType{{s}, {s}}, []jpType{b}, "compares two strings which comply with the semantic versioning schema and outputs a boolean response as to the position of the second relative to the first", jpSemverCompare},
		{"parse_json", [][]jpType{{s}}, []jpType{x}, "decodes a valid JSON encoded string to the appropriate type. Opposite of `to_string` function", jpParseJSON},
		{"parse_yaml", [][]jpType{{s}}, []jpType{x}, "decodes a valid YAML encoded string to the appropriate type provided it can be represented as JSON", jpParseYAML},
		{"lookup", [][]jpType{{o, a}, {s, n}}, []jpType{x}, "returns the value corresponding to the given key/index in the given object/array", jpLookup},
		{"items", [][]jpType{{o, a}, {s}, {s}}, []jpType{a}, "converts a map or array to an array of objects where each key:value is an item in the array", jpItems},
		{"object_from_lists", [][]jpType{{a}, {a}}, []jpType{o}, "converts a pair of lists containing keys and values to an object", jpObjectFromLists},
		{"random", [][]jpType{{s}}, []jpType{s}, "Generates a random sequence of characters", i.jpRandom},
		{"x509_decode", [][]jpType{{s}}, []jpType{o}, "decodes an x.509 certificate to an object. you may also use this in conjunction with `base64_decode` jmespath function to decode a base64-encoded certificate", jpX509Decode},
		{"time_to_cron", [][]jpType{{s}}, []jpType{s}, "converts a time (RFC 3339) to a cron expression (string).", jpTimeToCron},
		{"time_add", [][]jpType{{s}, {s}}, []jpType{s}, "adds duration (second string) to a time value (first string)", jpTimeAdd},
		{"time_parse", [][]jpType{{s}, {s}}, []jpType{s}, "changes a time value of a given layout to RFC 3339", jpTimeParse},
		{"time_utc", [][]jpType{{s}}, []jpType{s}, "calcutes time in UTC from a given time in RFC 3339 format", jpTimeUTC},
		{"time_diff", [][]jpType{{s}, {s}}, []jpType{s}, "calculate the difference between a start and end date in RFC3339 format", jpTimeDiff},
		{"time_before", [][]jpType{{s}, {s}}, []jpType{b}, "checks if a time is before another time, both in RFC3339 format", jpTimeBefore},
		{"time_after", [][]jpType{{s}, {s}}, []jpType{b}, "checks if a time is after another time, both in RFC3339 format", jpTimeAfter},
		{"time_between", [][]jpType{{s}, {s}, {s}}, []jpType{b}, "checks if a time is between a start and end time, all in RFC3339 format", jpTimeBetween},
		{"time_truncate", [][]jpType{{s}, {s}}, []jpType{s}, "returns the result of rounding time down to a multiple of duration", jpTimeTruncate},
		{"image_normalize", [][]jpType{{s}}, []jpType{s}, "normalizes an image reference", i.jpImageNormalize},
		{"is_external_url", [][]jpType{{s}}, []jpType{b}, "determine if a URL points to an external network address (decided from the URL text only, no DNS)", jpIsExternalURL},
		{"sha256", [][]jpType{{s}}, []jpType{s}, "generate unique resources name if length exceeds the limit", jpSHA256},
		{"md5", [][]jpType{{s}}, []jpType{s}, "generates the MD5 hash of a string", jpMD5},
		{"sha1", [][]jpType{{s}}, []jpType{s}, "generates the SHA1 hash of a string", jpSHA1},
	}
}
