package jmespath

import "github.com/blang/semver/v4"

// jpSemverCompare is semver_compare: whether the version (first argument)
// is in the range (second), with blang/semver, the library upstream
// uses: its range syntax ("", "=", "!", ">", ">=", "<", "<=" comparators,
// ANDed by spaces, ORed by "||", "x" wildcards) and its strict versions.
// A first argument that is not a valid version compares as 0.0.0, as
// upstream does.
func jpSemverCompare(args []any) (any, error) {
	v, _ := semver.Parse(args[0].(string))
	r, err := semver.ParseRange(args[1].(string))
	if err != nil {
		return nil, fnWrap("semver_compare", 2, err)
	}
	return r(v), nil
}
