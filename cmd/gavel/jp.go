package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gavelpolicy/gavel/jmespath"
)

func runJP(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "Usage: gavel jp query EXPRESSION [-i INPUT] | gavel jp function [NAME...]")
		return exitUsage
	}
	jp, err := jmespath.New()
	if err != nil {
		fmt.Fprintln(stderr, "gavel jp:", err)
		return exitUsage
	}
	switch args[0] {
	case "function":
		want := map[string]bool{}
		for _, n := range args[1:] {
			want[n] = true
		}
		for _, f := range jp.Functions() {
			if len(want) > 0 && !want[f.Name] {
				continue
			}
			fmt.Fprintln(stdout, f.String())
			fmt.Fprintln(stdout)
		}
		return exitOK
	case "query":
		fs := flag.NewFlagSet("jp query", flag.ContinueOnError)
		fs.SetOutput(stderr)
		input := fs.String("i", "", "input file (YAML or JSON); standard input when empty")
		unquoted := fs.Bool("u", false, "print string results without quotes")
		if err := fs.Parse(reorder(args[1:], fs)); err != nil {
			return exitUsage
		}
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "gavel jp query: exactly one expression is required")
			return exitUsage
		}
		var raw []byte
		if *input != "" {
			raw, err = os.ReadFile(*input)
		} else {
			raw, err = io.ReadAll(stdin)
		}
		if err != nil {
			fmt.Fprintln(stderr, "gavel jp query:", err)
			return exitUsage
		}
		var data any
		if err := yaml.Unmarshal(raw, &data); err != nil {
			fmt.Fprintln(stderr, "gavel jp query: input:", err)
			return exitUsage
		}
		out, err := jp.Search(fs.Arg(0), data)
		if err != nil {
			fmt.Fprintln(stderr, "gavel jp query:", err)
			return exitFailed
		}
		if s, ok := out.(string); ok && *unquoted {
			fmt.Fprintln(stdout, s)
			return exitOK
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, strings.TrimSpace(string(b)))
		return exitOK
	}
	fmt.Fprintf(stderr, "gavel jp: unknown subcommand %q\n", args[0])
	return exitUsage
}
