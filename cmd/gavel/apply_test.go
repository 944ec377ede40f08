package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestApplyOutputs(t *testing.T) {
	args := []string{"apply", "../../examples/policies", "--resource", "../../examples/resources"}
	var out, errOut bytes.Buffer
	if code := run(append(args, "-o", "json"), nil, &out, &errOut); code != exitFailed {
		t.Fatalf("exit %d, want %d (an Enforce rule fails); stderr %s", code, exitFailed, errOut.String())
	}
	var doc applyDocument
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json output: %v\n%s", err, out.String())
	}
	if doc.Summary["pass"] != 9 || doc.Summary["fail"] != 3 || !doc.Blocked {
		t.Errorf("summary %v blocked %v", doc.Summary, doc.Blocked)
	}
	out.Reset()
	if code := run(append(args, "-o", "junit", "--fail-only"), nil, &out, &errOut); code != exitFailed {
		t.Fatalf("junit exit %d", code)
	}
	if !strings.Contains(out.String(), `<testsuites name="gavel apply" tests="3" failures="3"`) {
		t.Errorf("junit output:\n%s", out.String())
	}
	out.Reset()
	if code := run(append(args, "-o", "junit", "--policy-report"), nil, &out, &errOut); code != exitUsage {
		t.Errorf("junit with --policy-report: exit %d, want %d", code, exitUsage)
	}
	out.Reset()
	if code := run(append(args, "--audit-warn"), nil, &out, &errOut); code != exitFailed {
		t.Errorf("audit-warn exit %d", code)
	}
	if !strings.Contains(out.String(), "pass: 9, fail: 2, warn: 1, error: 0, skip: 0") {
		t.Errorf("audit-warn summary:\n%s", out.String())
	}
}
