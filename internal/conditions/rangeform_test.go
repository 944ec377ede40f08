package conditions

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// The expressions upstream recognises ranges with; rangeForm must agree
// with them on every string.
var (
	upstreamInRange    = regexp.MustCompile(`^([-|+]?\d+(?:\.\d+)?[A-Za-z]*)-([-|+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
	upstreamNotInRange = regexp.MustCompile(`^([-|+]?\d+(?:\.\d+)?[A-Za-z]*)!-([-|+]?\d+(?:\.\d+)?[A-Za-z]*)$`)
)

func upstreamRangeForm(p string) patternOp {
	switch {
	case upstreamNotInRange.MatchString(p):
		return opNotInRange
	case upstreamInRange.MatchString(p):
		return opInRange
	}
	return opEqual
}

func TestRangeForm(t *testing.T) {
	for p, want := range map[string]patternOp{
		"5000-6000":  opInRange,
		"5000!-6000": opNotInRange,
		"-5-5":       opInRange,
		"-5--5":      opInRange,
		"+1-|2":      opInRange,
		"100Mi-1Gi":  opInRange,
		"1.5-2.5":    opInRange,
		"1.5Gi!-2Ki": opNotInRange,
		"1.-2":       opEqual,
		"1-2.":       opEqual,
		".5-1":       opEqual,
		"1-":         opEqual,
		"-1":         opEqual,
		"1-2-3":      opEqual,
		"1!-2!-3":    opEqual,
		"a-b":        opEqual,
		"1a1-2":      opEqual,
		"1-2 ":       opEqual,
		"1-2\n":      opEqual,
		"1 - 2":      opEqual,
		"١-٢":        opEqual, // Arabic-Indic digits are not \d
		"1é-2":       opEqual,
		"--1-2":      opEqual,
		"1-+2":       opInRange,
		"1!--2":      opNotInRange,
		"0-0":        opInRange,
	} {
		if got := rangeForm(p); got != want {
			t.Errorf("rangeForm(%q) = %v, want %v", p, got, want)
		}
		if got := upstreamRangeForm(p); got != want {
			t.Errorf("table error: upstream reads %q as %v, want %v", p, got, want)
		}
	}
}

// TestRangeFormRandom compares rangeForm with upstream's expressions on
// random strings over the characters that matter to them.
func TestRangeFormRandom(t *testing.T) {
	const alphabet = "0123456789-!|+.aZ é"
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[patternOp]int{}
	for range 200000 {
		b := make([]byte, r.IntN(10))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		p := string(b)
		want := upstreamRangeForm(p)
		seen[want]++
		if got := rangeForm(p); got != want {
			t.Fatalf("rangeForm(%q) = %v, upstream %v", p, got, want)
		}
	}
	// the generator must reach every outcome for the comparison to mean much
	for _, op := range []patternOp{opEqual, opInRange, opNotInRange} {
		if seen[op] == 0 {
			t.Errorf("no random string classified as %v", op)
		}
	}
}

func FuzzRangeForm(f *testing.F) {
	for _, s := range []string{"5000-6000", "1.5Gi!-2Ki", "-5--5", "1.-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if got, want := rangeForm(p), upstreamRangeForm(p); got != want {
			t.Fatalf("rangeForm(%q) = %v, upstream %v", p, got, want)
		}
	})
}
