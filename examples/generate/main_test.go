package main

import (
	"bytes"
	"context"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatal(err)
	}
	const want = `update request for team-a: Completed
update request for team-b: Completed
NetworkPolicy team-a/default-deny (rule default-deny)
NetworkPolicy team-b/default-deny (rule default-deny)
ResourceQuota team-a/default-quota (rule quota) cpu=4
ResourceQuota team-b/default-quota (rule quota) cpu=16
resync of team-a/default-deny: Completed
team-a/default-deny restored
policy updated; team-c: 1 update request
ResourceQuota team-a/default-quota cpu=8
ResourceQuota team-c/default-quota cpu=8
`
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
