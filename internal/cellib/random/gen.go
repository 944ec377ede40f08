package random

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The generation follows upstream's generator (goregen, which gavel does
// not import: its tests need a module the Go proxy does not serve): the
// pattern is parsed with no flags (no Perl classes such as \d), simplified,
// and each node generates its part; an unbounded repetition (*, +, {n,})
// repeats at most maxUnbounded more times; anchors and word boundaries
// generate nothing; . is any character but a newline.
const (
	maxUnbounded = 4096
	// maxOutput bounds a generated string, in bytes.
	maxOutput = 1 << 20
)

var errTooLong = fmt.Errorf("random: the generated string would be longer than %d bytes", maxOutput)

// generate returns a string that matches pattern.
func generate(rng *rand.Rand, pattern string) (string, error) {
	re, err := syntax.Parse(pattern, 0)
	if err != nil {
		return "", err
	}
	g := generator{rng: rng}
	if err := g.gen(re.Simplify()); err != nil {
		return "", err
	}
	return g.out.String(), nil
}

type generator struct {
	rng *rand.Rand
	out strings.Builder
}

func (g *generator) write(r rune) error {
	if g.out.Len()+utf8.RuneLen(r) > maxOutput {
		return errTooLong
	}
	g.out.WriteRune(r)
	return nil
}

func (g *generator) gen(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && g.rng.IntN(2) == 0 {
				r = unicode.SimpleFold(r)
			}
			if err := g.write(r); err != nil {
				return err
			}
		}
		return nil
	case syntax.OpCharClass:
		return g.class(re.Rune)
	case syntax.OpAnyCharNotNL:
		return g.class([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})
	case syntax.OpAnyChar:
		return g.class([]rune{0, unicode.MaxRune})
	case syntax.OpCapture:
		return g.gen(re.Sub[0])
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if err := g.gen(sub); err != nil {
				return err
			}
		}
		return nil
	case syntax.OpAlternate:
		return g.gen(re.Sub[g.rng.IntN(len(re.Sub))])
	case syntax.OpQuest:
		return g.repeat(re.Sub[0], 0, 1)
	case syntax.OpStar:
		return g.repeat(re.Sub[0], 0, maxUnbounded)
	case syntax.OpPlus:
		return g.repeat(re.Sub[0], 1, 1+maxUnbounded)
	case syntax.OpRepeat:
		max := re.Max
		if max < 0 {
			max = re.Min + maxUnbounded
		}
		return g.repeat(re.Sub[0], re.Min, max)
	}
	return fmt.Errorf("random: cannot generate %s", re)
}

func (g *generator) repeat(re *syntax.Regexp, min, max int) error {
	n := min
	if max > min {
		n += g.rng.IntN(max - min + 1)
	}
	for range n {
		if err := g.gen(re); err != nil {
			return err
		}
	}
	return nil
}

// class writes a rune of the class of ranges (pairs lo, hi), surrogates
// left out.
func (g *generator) class(ranges []rune) error {
	var total int64
	for i := 0; i+1 < len(ranges); i += 2 {
		total += int64(valid(ranges[i], ranges[i+1]))
	}
	if total == 0 {
		return errors.New("random: a character class that matches nothing")
	}
	n := g.rng.Int64N(total)
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if c := int64(valid(lo, hi)); n >= c {
			n -= c
			continue
		}
		if lo >= 0xD800 && lo <= 0xDFFF {
			lo = 0xE000
		}
		r := lo + rune(n)
		if lo < 0xD800 && r >= 0xD800 {
			r += 0xE000 - 0xD800
		}
		return g.write(r)
	}
	return errors.New("random: character class")
}

// valid counts the runes of [lo, hi] that are not surrogates.
func valid(lo, hi rune) rune {
	n := hi - lo + 1
	if lo <= 0xDFFF && hi >= 0xD800 {
		n -= min(hi, 0xDFFF) - max(lo, 0xD800) + 1
	}
	return n
}
