package jmespath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp/syntax"
	"strings"
)

// maxUnboundedRepeat is how many times "*", "+" and "{n,}" may repeat at most
// beyond their minimum, as in the generator the upstream engine uses.
const maxUnboundedRepeat = 16

// maxRandomSteps bounds the work of one generation, including repetitions of
// sub-expressions that produce nothing.
const maxRandomSteps = 1 << 20

// jpRandom returns a random string matching the regular expression given as
// argument. Character classes pick uniformly among their characters, "." and
// other any-character nodes pick a printable ASCII character, alternations
// pick a branch uniformly, and repetitions pick a count uniformly in their
// range. Anchors and word boundaries produce nothing.
func (i *Interpreter) jpRandom(args []any) (any, error) {
	pattern := args[0].(string)
	if pattern == "" {
		return nil, fnErr("random", 1, "no pattern provided")
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fnWrap("random", 1, err)
	}
	i.randMu.Lock()
	defer i.randMu.Unlock()
	g := generator{r: i.cfg.random, limit: i.cfg.maxRandomLength}
	if err := g.gen(re); err != nil {
		return nil, fnWrap("random", 1, err)
	}
	return g.out.String(), nil
}

type generator struct {
	r     io.Reader
	out   strings.Builder
	n     int
	limit int
	steps int
	buf   [8]byte
}

var errRandomTooLong = errors.New("generated string exceeds the length limit")

// intn returns a uniform integer in [0, n).
func (g *generator) intn(n int) (int, error) {
	if n <= 1 {
		return 0, nil
	}
	bound := uint64(n)
	limit := ^uint64(0) - (^uint64(0) % bound)
	for {
		if _, err := io.ReadFull(g.r, g.buf[:]); err != nil {
			return 0, fmt.Errorf("reading randomness: %w", err)
		}
		v := binary.LittleEndian.Uint64(g.buf[:])
		if v < limit {
			return int(v % bound), nil
		}
	}
}

func (g *generator) emit(r rune) error {
	if g.n >= g.limit {
		return errRandomTooLong
	}
	g.n++
	g.out.WriteRune(r)
	return nil
}

func (g *generator) repeat(re *syntax.Regexp, lo, hi int) error {
	count := lo
	if hi > lo {
		k, err := g.intn(hi - lo + 1)
		if err != nil {
			return err
		}
		count += k
	}
	for k := 0; k < count; k++ {
		if err := g.gen(re.Sub[0]); err != nil {
			return err
		}
	}
	return nil
}

func (g *generator) gen(re *syntax.Regexp) error {
	g.steps++
	if g.steps > maxRandomSteps {
		return errRandomTooLong
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return errors.New("pattern matches nothing")
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return nil
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if err := g.emit(r); err != nil {
				return err
			}
		}
		return nil
	case syntax.OpCharClass:
		total := 0
		for k := 0; k+1 < len(re.Rune); k += 2 {
			total += int(re.Rune[k+1]-re.Rune[k]) + 1
		}
		if total == 0 {
			return errors.New("empty character class")
		}
		pick, err := g.intn(total)
		if err != nil {
			return err
		}
		for k := 0; k+1 < len(re.Rune); k += 2 {
			size := int(re.Rune[k+1]-re.Rune[k]) + 1
			if pick < size {
				return g.emit(re.Rune[k] + rune(pick))
			}
			pick -= size
		}
		return nil
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		pick, err := g.intn(0x7e - 0x20 + 1)
		if err != nil {
			return err
		}
		return g.emit(rune(0x20 + pick))
	case syntax.OpCapture:
		return g.gen(re.Sub[0])
	case syntax.OpStar:
		return g.repeat(re, 0, maxUnboundedRepeat)
	case syntax.OpPlus:
		return g.repeat(re, 1, maxUnboundedRepeat)
	case syntax.OpQuest:
		return g.repeat(re, 0, 1)
	case syntax.OpRepeat:
		hi := re.Max
		if hi < 0 {
			hi = re.Min + maxUnboundedRepeat
		}
		return g.repeat(re, re.Min, hi)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if err := g.gen(sub); err != nil {
				return err
			}
		}
		return nil
	case syntax.OpAlternate:
		k, err := g.intn(len(re.Sub))
		if err != nil {
			return err
		}
		return g.gen(re.Sub[k])
	}
	return fmt.Errorf("unsupported regular expression operator %v", re.Op)
}
