package random

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/cel-go/common/types"
)

func TestGenerateMatches(t *testing.T) {
	patterns := []string{
		DefaultPattern, "[A-Z0-9]{8}", "[0-9]{4}-[0-9]{4}", "[a-f0-9]{32}",
		"[A-Z0-9]{8}-[A-Z0-9]{4}-[A-Z0-9]{4}", "(foo|bar)+baz?", "^a.c$", "[^a-z]{3}",
		"x{2,}", "[\u00e0-\u00ff]{5}", "(ab|c){0,3}", "", "\\.", "[\uD7F0-\uE010]{20}",
	}
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	for _, p := range patterns {
		re := regexp.MustCompile("^(?:" + p + ")$")
		for range 50 {
			s, err := generate(rng, p)
			if err != nil {
				t.Fatalf("%q: %v", p, err)
			}
			if !utf8.ValidString(s) || !re.MatchString(s) {
				t.Fatalf("%q generated %q", p, s)
			}
		}
	}
}

func TestGenerateBounds(t *testing.T) {
	rng := rand.New(rand.NewChaCha8([32]byte{2}))
	for range 20 {
		s, err := generate(rng, "a*")
		if err != nil || len(s) > maxUnbounded {
			t.Fatalf("a* gave %d bytes, %v", len(s), err)
		}
	}
	if _, err := generate(rng, "(.{1000}){1000}"); err == nil {
		t.Fatal("a million characters are generated")
	}
	if _, err := generate(rng, "((.{1000}){2}){1000}"); err == nil {
		t.Fatal("a nested repetition over regexp/syntax's limit is generated")
	}
}

func TestGenerateErrors(t *testing.T) {
	for _, p := range []string{"[", `\d{4}`, "a{2,1}", "(?i)a"} {
		v := Generate(bytes.NewReader(make([]byte, 32)), p)
		if !types.IsError(v) {
			t.Errorf("%q gave %v", p, v)
		}
	}
	if v := Generate(strings.NewReader("short"), "a"); !types.IsError(v) || !strings.Contains(v.(*types.Err).Error(), "reading randomness") {
		t.Errorf("short randomness gave %v", v)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	seed := bytes.Repeat([]byte{9}, 32)
	a := Generate(bytes.NewReader(seed), "[a-z]{16}")
	b := Generate(bytes.NewReader(seed), "[a-z]{16}")
	c := Generate(bytes.NewReader(bytes.Repeat([]byte{8}, 32)), "[a-z]{16}")
	if a.Equal(b) != types.True || a.Equal(c) == types.True {
		t.Fatalf("%v %v %v", a, b, c)
	}
}
