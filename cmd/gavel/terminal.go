package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// parseFlags parses a subcommand's arguments (flags may follow positional
// arguments). On -h or --help it prints the usage to stdout and returns
// (exitOK, false); on a bad flag it prints one helpful error, with a
// suggestion for a misspelt flag, and returns (exitUsage, false).
func parseFlags(fs *flag.FlagSet, cmd string, args []string, stdout, stderr io.Writer) (int, bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(reorder(args, fs))
	fs.SetOutput(stderr)
	if err == nil {
		return exitOK, true
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return exitOK, false
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		name = strings.TrimLeft(name, "-")
		msg = "unknown flag " + flagName(name)
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if s := suggest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", flagName(s))
		}
	}
	fmt.Fprintf(stderr, "gavel %s: %s\nRun \"gavel %s -h\" for the flags.\n", cmd, msg, cmd)
	return exitUsage, false
}

// flagName spells a flag as the help shows it: -o, --name.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// suggest returns the candidate closest to s when it is close enough to be
// a likely typo (edit distance at most 2 and less than the length of s, or
// a prefix of at least 3 letters), or "". One-letter input gets no
// suggestion.
func suggest(s string, candidates []string) string {
	if len(s) < 2 {
		return ""
	}
	best, bestD := "", min(3, len(s))
	for _, c := range candidates {
		if len(s) >= 3 && strings.HasPrefix(c, s) {
			return c
		}
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// colourEnabled reports whether output to w may be coloured: w is a
// terminal, NO_COLOR is unset and TERM is not "dumb".
func colourEnabled(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

// progressMinFiles is the number of test files from which a run shows its
// progress on a terminal.
const progressMinFiles = 10

// progress shows "gavel test: N/M files" on stderr while a long run goes,
// only when stderr is a terminal, rewriting one line at most every 100ms.
type progress struct {
	w     io.Writer
	total int
	on    bool
	mu    sync.Mutex
	n     int
	last  time.Time
}

func newProgress(stderr io.Writer, total int) *progress {
	return &progress{w: stderr, total: total, on: total >= progressMinFiles && isTerminal(stderr)}
}

// done counts one finished file.
func (p *progress) done(string) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if now := time.Now(); now.Sub(p.last) >= 100*time.Millisecond || p.n == p.total {
		p.last = now
		fmt.Fprintf(p.w, "\r\033[Kgavel test: %d/%d files", p.n, p.total)
	}
}

// finish clears the progress line.
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// klogUsage is the usage of klog's flags, accepted and ignored.
const klogUsage = "klog's flag: accepted and ignored"

// printFlags lists the flags of a command as the upstream CLI's help
// does: a one-letter alias on the line of its flag ("-r, --resource"),
// klog's flags in a section of their own.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	shorts := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if target, ok := aliasOf(f); ok && len(f.Name) == 1 {
			shorts[target] = append(shorts[target], f.Name)
		}
	})
	var klog []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := aliasOf(f); ok && len(f.Name) == 1 {
			return
		}
		if f.Usage == klogUsage {
			klog = append(klog, flagName(f.Name))
			return
		}
		names := "    "
		if s := shorts[f.Name]; len(s) > 0 {
			names = "-" + s[0] + ", "
		}
		typ, usage := flag.UnquoteUsage(f)
		if typ == "value" {
			typ = "strings"
		}
		line := "  " + names + "--" + f.Name
		if typ != "" {
			line += " " + typ
		}
		if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "[]" {
			if typ == "string" {
				d = strconv.Quote(d)
			}
			usage += " (default " + d + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, usage)
	})
	if len(klog) > 0 {
		fmt.Fprintf(w, "\nklog's flags, accepted and ignored (gavel does not log through klog):\n  %s\n", strings.Join(klog, ", "))
	}
}

// aliasOf returns the flag a flag stands for, from its usage "same as
// --NAME" or "shorthand for --NAME".
func aliasOf(f *flag.Flag) (string, bool) {
	for _, p := range []string{"same as --", "shorthand for --"} {
		if rest, ok := strings.CutPrefix(f.Usage, p); ok {
			name, _, _ := strings.Cut(rest, " ")
			return name, true
		}
	}
	return "", false
}
