package conditions

// numberStart reports whether s can start a Go duration, a resource quantity
// or a range bound: an optional sign, then a digit or a '.'. It lets the hot
// paths skip parsers that would only fail (and allocate an error).
func numberStart(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	return s != "" && (s[0] == '.' || s[0] >= '0' && s[0] <= '9')
}
