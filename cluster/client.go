package cluster

import "github.com/gavelpolicy/gavel/cluster/dynclient"

func wrap(err error) error { return dynclient.WrapNotFound(err) }

func splitKind(s string) (group, version, kind string) { return dynclient.SplitKind(s) }
