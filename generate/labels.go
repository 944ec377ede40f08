package generate

import "github.com/gavelpolicy/gavel/internal/genlabel"

// Labels by which a host finds the objects whose events the controller
// handles, upstream's keys: a downstream resource carries LabelManagedBy
// with the value ManagedByKyverno and LabelPolicyName (its events go to
// OnDownstreamChange), a clone source carries LabelCloneSource (its events
// go to OnSourceChange).
const (
	LabelManagedBy   = genlabel.ManagedBy
	ManagedByKyverno = genlabel.ManagedByValue
	LabelPolicyName  = genlabel.PolicyName
	LabelCloneSource = genlabel.CloneSource
)
