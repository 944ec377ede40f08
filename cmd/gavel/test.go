package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/gavelpolicy/gavel/policytest"
)

func runTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	strict := fs.Bool("strict", false, "count a row whose rule did not apply as passed only when skip was expected")
	fileName := fs.String("file-name", policytest.DefaultFileName, "test file name to look for")
	parallel := fs.Int("parallel", runtime.NumCPU(), "tests evaluated in parallel")
	failOnly := fs.Bool("fail-only", true, "print only failing entries")
	detailed := fs.Bool("detailed-results", false, "print the rule message of each printed entry")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: gavel test PATH... [flags]\n\nRuns every kyverno-test.yaml under the paths and prints one line per failing entry, then \"N passed, N failed\".")
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorder(args, fs)); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	files, err := policytest.Discover(*fileName, fs.Args()...)
	if err != nil {
		fmt.Fprintln(stderr, "gavel test:", err)
		return exitUsage
	}
	if *parallel < 1 {
		*parallel = 1
	}
	results := make([][]policytest.Row, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, *parallel)
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t, err := policytest.Load(f)
			if err != nil {
				results[i] = []policytest.Row{{Test: f, Reason: err.Error()}}
				return
			}
			rows, err := policytest.Run(context.Background(), t, policytest.Options{Strict: *strict})
			if err != nil {
				rows = policytest.FailedRows(t, err)
				if len(rows) == 0 {
					rows = []policytest.Row{{Test: f, Reason: err.Error()}}
				}
			}
			results[i] = rows
		}()
	}
	wg.Wait()
	passed, failed := 0, 0
	for _, rows := range results {
		for _, r := range rows {
			if r.Passed {
				passed++
				if !*failOnly {
					printRow(stdout, r, *detailed)
				}
				continue
			}
			failed++
			printRow(stdout, r, *detailed)
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}

func printRow(w io.Writer, r policytest.Row, detailed bool) {
	status := "FAIL"
	if r.Passed {
		status = "PASS"
	}
	res := r.Kind + "/" + r.Resource
	if r.Namespace != "" {
		res = r.Kind + "/" + r.Namespace + "/" + r.Resource
	}
	fmt.Fprintf(w, "%s %s: policy=%s rule=%s resource=%s: %s\n", status, r.Test, r.Policy, r.Rule, res, r.Reason)
	if detailed && r.Message != "" {
		fmt.Fprintf(w, "    message: %s\n", r.Message)
	}
}

// reorder moves flags after positional arguments to the front so that
// "gavel test PATH --strict" works like upstream's CLI.
func reorder(args []string, fs *flag.FlagSet) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := a
			for len(name) > 0 && name[0] == '-' {
				name = name[1:]
			}
			if j := indexByte(name, '='); j >= 0 {
				continue
			}
			if f := fs.Lookup(name); f != nil {
				if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
					continue
				}
				if i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}
