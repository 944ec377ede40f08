package jsontext

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// TestAppendString compares the quoting with encoding/json on every
// byte, the runes it escapes and random strings of bytes and runes.
func TestAppendString(t *testing.T) {
	var cases []string
	for c := 0; c < 256; c++ {
		cases = append(cases, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	cases = append(cases, "", "plain", "é ü 日本", "\u2028\u2029", "<script>&amp;</script>", "\"quoted\" \\ back",
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "abc\xffdef", "\U0001F600")
	r := rand.New(rand.NewSource(9))
	pieces := []string{"a", "\x00", "\x1f", "\"", "\\", "<", ">", "&", "\u2028", "é", "\xff", "\xc3", "\n", "\t", "日"}
	for i := 0; i < 2000; i++ {
		var sb strings.Builder
		for j := r.Intn(12); j >= 0; j-- {
			sb.WriteString(pieces[r.Intn(len(pieces))])
		}
		cases = append(cases, sb.String())
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: %s, want %s", s, got, want)
		}
	}
}
