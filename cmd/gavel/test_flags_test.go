package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/policytest"
)

// TestTestFlags runs gavel test with the upstream flags it gained and
// checks what each changes.
func TestTestFlags(t *testing.T) {
	good := filepath.Join("testdata", "suite", "good")
	empty := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"all", []string{good, "--fail-only=false"}, 0, []string{"2 passed, 0 failed", "resource=Pod/shop/labelled", "resource=Pod/shop/unlabelled"}, nil},
		{"selector resource", []string{good, "--fail-only=false", "-t", "resource=un*"}, 0, []string{"1 passed, 0 failed", "resource=Pod/shop/unlabelled"}, nil},
		{"selector spaces", []string{good, "--fail-only=false", "--test-case-selector", "policy=require-*, rule=check-team, resource=labelled"}, 0, []string{"1 passed, 0 failed", "resource=Pod/shop/labelled"}, nil},
		{"selector no match", []string{good, "-t", "policy=other"}, 0, []string{"0 passed, 0 failed"}, nil},
		{"selector invalid key", []string{good, "-t", "kind=Pod"}, 1, nil, []string{"can only be policy, rule or resource"}},
		{"selector invalid form", []string{good, "-t", "policy"}, 1, nil, []string{"<key>=<value>"}},
		{"require-tests", []string{empty, "--require-tests"}, 1, nil, []string{"no kyverno-test.yaml found"}},
		{"no tests", []string{empty}, 0, []string{"0 passed, 0 failed"}, nil},
		{"registry, kubeconfig, klog", []string{good, "--registry", "--kubeconfig", "k", "-v", "2"}, 0, []string{"0 failed"}, nil},
		{"output-format short", []string{good, "-o", "json"}, 0, []string{`"passed": 2`}, nil},
		{"markdown", []string{good, "-o", "markdown", "--fail-only=false"}, 0, []string{"| ID | RESULT | POLICY | RULE | RESOURCE | REASON |\n|---|---|---|---|---|---|\n| 1 | PASS | require-team | check-team | Pod/shop/labelled | Ok |\n", "2 passed, 0 failed"}, nil},
		{"markdown fail-only", []string{good, "-o", "markdown"}, 0, []string{"2 passed, 0 failed"}, []string{}},
		{"remove-color", []string{good, "--remove-color", "--fail-only=false"}, 0, []string{"PASS "}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(append([]string{"test"}, tt.args...), nil, &out, &errOut)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out.String(), errOut.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, out.String())
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut.String())
				}
			}
		})
	}
}

// TestCreate: gavel create writes files that gavel reads back as the
// upstream CLI's formats, and a created test runs.
func TestCreate(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"policy.yaml", "resources.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "suite", "good", name))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	create := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(append([]string{"create"}, args...), nil, &out, &errOut); code != exitOK {
			t.Fatalf("create %v: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}

	create("test", "-n", "team", "-p", "policy.yaml", "-r", "resources.yaml", "-f", "values.yaml",
		"--pass", "require-team,check-team,labelled,shop,Pod", "--fail", "require-team,check-team,unlabelled,shop,Pod",
		"--skip", "bad,entry", "-o", p("kyverno-test.yaml"))
	create("values", "-g", "request.mode=dev", "--rule", "require-team,check-team,x=one", "--resource", "require-team,labelled,count=two",
		"-n", "shop,team=a", "-o", p("values.yaml"))
	var out, errOut bytes.Buffer
	if code := run([]string{"test", dir, "--fail-only=false"}, nil, &out, &errOut); code != exitOK || !strings.Contains(out.String(), "2 passed, 0 failed") {
		t.Errorf("created test: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	test, err := policytest.Load(p("kyverno-test.yaml"))
	if err != nil || test.TestName() != "team" || len(test.Results) != 2 || test.Variables != "values.yaml" {
		t.Errorf("created test: %+v, %v", test, err)
	}
	values, err := policytest.LoadValues(p("values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	labelled := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "labelled", "namespace": "shop"}}
	req := policytest.NewRequest("require-team", labelled, values, nil)
	if values.GlobalValues["request.mode"] != "dev" || values.RuleValues("require-team", "check-team")["x"] != "one" ||
		req.Variables["count"] != "two" || req.NamespaceLabels["team"] != "a" {
		t.Errorf("created values: %+v, request variables %v, namespace labels %v", values, req.Variables, req.NamespaceLabels)
	}

	os.WriteFile(p("user.yaml"), []byte(create("user-info", "-u", "alice", "-r", "dev,ops", "-c", "admin", "-g", "devs")), 0o644)
	user, err := policytest.LoadUserInfo(p("user.yaml"))
	if err != nil || user.UserInfo.Username != "alice" || len(user.Roles) != 2 || user.ClusterRoles[0] != "admin" || user.UserInfo.Groups[0] != "devs" || user.Kind != "UserInfo" {
		t.Errorf("created user info: %+v, %v", user, err)
	}

	text := create("exception", "-n", "web", "--namespace", "shop", "-r", "require-team,check-team", "--any", "kind=Pod,name=web-*", "--all", "kind=Pod,namespace=shop,operation=CREATE", "-b=false")
	docs, err := api.ReadDocuments(strings.NewReader(text), "exception")
	if err != nil || len(docs) != 1 {
		t.Fatalf("created exception: %v\n%s", err, text)
	}
	obj, err := api.DecodeObject(docs[0])
	exc, ok := obj.(*api.PolicyException)
	if err != nil || !ok {
		t.Fatalf("created exception: %v (%T)\n%s", err, obj, text)
	}
	if exc.Name != "web" || exc.Namespace != "shop" || len(exc.Spec.Exceptions) != 1 || exc.Spec.Exceptions[0].RuleNames[0] != "check-team" ||
		len(exc.Spec.Match.Any) != 1 || len(exc.Spec.Match.All) != 1 || !strings.Contains(text, "background: false") {
		t.Errorf("created exception:\n%s", text)
	}
	if !strings.Contains(create("exception", "-n", "x"), "namespace: default") {
		t.Error("an exception without --namespace is not in default")
	}
	var errs bytes.Buffer
	if code := run([]string{"create", "valuez"}, nil, &out, &errs); code != exitUsage || !strings.Contains(errs.String(), `did you mean "values"`) {
		t.Errorf("unknown kind: exit %d, %s", code, errs.String())
	}
}
