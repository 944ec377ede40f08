package main

import (
	"fmt"
	"io"
	"time"
)

// counts are the results of a run by status, as in its summary line.
type counts struct {
	Pass, Fail, Warn, Error, Skip int
}

// countsOf reads the summary of an apply document.
func countsOf(sum map[string]int) counts {
	return counts{Pass: sum["pass"], Fail: sum["fail"], Warn: sum["warn"], Error: sum["error"], Skip: sum["skip"]}
}

// exitStatus is the exit code of a run that produced its output, as the
// upstream CLI's kyverno apply decides it: 1 when a result failed (Audit
// failures count unless --audit-warn made them warnings) or errored; the
// --warn-exit-code code when there were warnings; with --warn-no-pass, the
// --warn-exit-code code (0 when not given) when nothing passed. The reason
// goes to stderr.
func exitStatus(stderr io.Writer, c counts, f applyFlags) int {
	switch {
	case c.Fail > 0:
		fmt.Fprintln(stderr, "gavel apply: exit as there are policy violations")
		return exitFailed
	case c.Error > 0:
		fmt.Fprintln(stderr, "gavel apply: exit as there are policy errors")
		return exitFailed
	case c.Warn > 0 && f.warnExitCode != 0:
		fmt.Fprintf(stderr, "gavel apply: exit as warnExitCode is %d\n", f.warnExitCode)
		return f.warnExitCode
	case c.Pass == 0 && f.warnNoPass:
		fmt.Fprintln(stderr, "gavel apply: exit as no objects satisfied policy")
		return f.warnExitCode
	}
	return exitOK
}

// performance measures a run for --show-performance.
type performance struct {
	on              bool
	start, loadedAt time.Time
}

func newPerformance(on bool) *performance { return &performance{on: on, start: time.Now()} }

// loaded marks the end of loading (policies, resources scanned, compiled).
func (p *performance) loaded() { p.loadedAt = time.Now() }

// done prints the figures on stderr.
func (p *performance) done(stderr io.Writer) {
	if !p.on || p.loadedAt.IsZero() {
		return
	}
	end := time.Now()
	fmt.Fprintf(stderr, "\nperformance: loading %s, evaluation and output %s, total %s\n",
		p.loadedAt.Sub(p.start).Round(time.Microsecond), end.Sub(p.loadedAt).Round(time.Microsecond), end.Sub(p.start).Round(time.Microsecond))
}
