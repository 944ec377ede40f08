package autogen

import (
	"regexp"
	"strings"
)

// referenceRE finds "$(...)" references in a message: at the start of the
// text, or after any character but a backslash (which is then part of the
// match). This is the expression upstream's engine uses.
var referenceRE = regexp.MustCompile(`^\$\(.[^\ ]*\)|[^\\]\$\(.[^\ ]*\)`)

// shiftReferences inserts shift after pivot in the "$(...)" references of a
// validation message, so that references into the original pattern point
// into the wrapped one. It reproduces upstream's algorithm, quirks included:
// for anyPattern the pivot becomes "anyPattern/<index>" from the first
// reference on, and a reference without the pivot is left unchanged except
// for that. Where upstream would panic (an anyPattern reference shorter than
// the pivot and not containing it) the index is taken as empty.
func shiftReferences(value, shift, pivot string) string {
	if !strings.Contains(value, "$(") {
		return value
	}
	for _, old := range referenceRE.FindAllString(value, -1) {
		initial := old[:2] == "$("
		ref := old
		if !initial {
			ref = ref[1:]
		}
		if pivot == "anyPattern" {
			start := strings.Index(ref, pivot) + len(pivot) + 1
			rest := ""
			if start <= len(ref) {
				rest = ref[start:]
			}
			index, _, _ := strings.Cut(rest, "/")
			pivot = pivot + "/" + index
		}
		replacement := ""
		if !initial {
			// Upstream converts the leading byte as a rune.
			replacement = string(rune(old[0]))
		}
		replacement += strings.ReplaceAll(ref, pivot, pivot+"/"+shift)
		value = strings.Replace(value, old, replacement, 1)
	}
	return value
}
