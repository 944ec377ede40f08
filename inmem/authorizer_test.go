package inmem_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

func TestAuthorizer(t *testing.T) {
	a := inmem.NewAuthorizer(
		inmem.AuthzRule{Allow: false, Subject: "mallory", Reason: "banned"},
		inmem.AuthzRule{Allow: true, Subject: "group:admins", Verb: "*", Reason: "admins"},
		inmem.AuthzRule{Allow: true, Subject: "alice", Verb: "get", Resource: "pods", Namespace: "shop"},
		inmem.AuthzRule{Allow: true, Verb: "get", Path: "/healthz"},
		inmem.AuthzRule{Allow: true, Subject: "bob", Verb: "list", APIGroup: "apps", Resource: "deployments"},
	)
	user := func(name string, groups ...string) engine.AuthorizationCheck {
		c := engine.AuthorizationCheck{ResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "shop"}
		c.User.Username, c.User.Groups = name, groups
		return c
	}
	tests := []struct {
		name   string
		check  engine.AuthorizationCheck
		want   bool
		reason string
	}{
		{name: "listed", check: user("alice"), want: true},
		{name: "other namespace", check: func() engine.AuthorizationCheck { c := user("alice"); c.Namespace = "dev"; return c }(), want: false, reason: "no rule allows it"},
		{name: "group", check: user("carol", "admins"), want: true, reason: "admins"},
		{name: "first rule wins", check: user("mallory", "admins"), want: false, reason: "banned"},
		{name: "path", check: engine.AuthorizationCheck{Verb: "get", Path: "/healthz"}, want: true},
		{name: "path is not a resource", check: engine.AuthorizationCheck{ResourceRequest: true, Verb: "get", Resource: "healthz"}, want: false},
		{name: "last rule, other user", check: engine.AuthorizationCheck{ResourceRequest: true, Verb: "list", APIGroup: "apps", Resource: "deployments",
			User: engine.AuthorizationCheck{}.User}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason, err := a.Authorize(context.Background(), tt.check)
			if err != nil || ok != tt.want || (tt.reason != "" && reason != tt.reason) {
				t.Fatalf("got %v %q %v, want %v %q", ok, reason, err, tt.want, tt.reason)
			}
		})
	}
	bob := engine.AuthorizationCheck{ResourceRequest: true, Verb: "list", APIGroup: "apps", Resource: "deployments"}
	bob.User.Username = "bob"
	if ok, _, _ := a.Authorize(context.Background(), bob); !ok {
		t.Fatal("an added rule is not used")
	}
}
