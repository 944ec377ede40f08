package testcluster

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestEstablished(t *testing.T) {
	cond := func(typ, status string) any { return map[string]any{"type": typ, "status": status} }
	for _, tt := range []struct {
		name  string
		conds []any
		want  bool
	}{
		{"no status", nil, false},
		{"established", []any{cond("NamesAccepted", "True"), cond("Established", "True")}, true},
		{"not yet", []any{cond("NamesAccepted", "True"), cond("Established", "False")}, false},
		{"names only", []any{cond("NamesAccepted", "True")}, false},
		{"malformed condition", []any{"Established"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			crd := unstructured.Unstructured{Object: map[string]any{"kind": "CustomResourceDefinition"}}
			if tt.conds != nil {
				crd.Object["status"] = map[string]any{"conditions": tt.conds}
			}
			if got := established(crd); got != tt.want {
				t.Errorf("established = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestProcs: Spawn keeps a process and its log; Stop ends every process,
// the last started first, and forgets them.
func TestProcs(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	defer c.Stop()
	ctx := context.Background()
	echo, err := c.Spawn("echo", exec.Command("sh", "-c", "echo ready; exec sleep 60"))
	if err != nil {
		t.Fatal(err)
	}
	if err := echo.WaitLog(ctx, "ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	short, err := c.Spawn("short", exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	<-short.Done()
	if err := short.WaitLog(ctx, "never", 10*time.Second); err == nil || !strings.Contains(err.Error(), "exited before logging") {
		t.Errorf("WaitLog of an exited process: %v, want an exited error", err)
	}
	procs := c.Procs()
	if len(procs) != 2 || procs[0] != echo || procs[1] != short {
		t.Fatalf("Procs = %v, want [echo short]", procs)
	}
	if !echo.Running() || short.Running() {
		t.Fatalf("Running: echo %v, short %v; want true, false", echo.Running(), short.Running())
	}
	c.Stop()
	if echo.Running() {
		t.Error("echo runs after Stop")
	}
	if n := len(c.Procs()); n != 0 {
		t.Errorf("%d processes after Stop, want none", n)
	}
}
