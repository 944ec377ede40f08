// Package generate is gavel's background controller for generate and
// mutate-existing rules: it drains the UpdateRequests that the engine queues
// at admission (engine.PolicySet.Generate) and the ones its event handlers
// build, and reconciles the cluster through the host's engine.Client.
//
//	queue := generate.NewMemoryQueue(100)
//	eng, _ := engine.New(engine.WithClient(cluster), engine.WithUpdateRequestQueue(queue))
//	set, _ := eng.Compile(policies...)
//	ctrl := generate.NewController(set, cluster)
//	go ctrl.Run(ctx, queue)
//	set.Generate(ctx, &engine.Request{Operation: api.Create, Object: namespace}) // admission
//
// # UpdateRequests
//
// An UpdateRequest moves from Pending to Completed when its rules were
// applied, to Skip when the policy or the rule no longer applies to the
// trigger, or to Failed with the error (a write the client refused, a
// trigger or clone source that cannot be read...) in Status.Message. A
// failed request is retried up to three times (WithMaxRetries), then
// garbage collected: Process returns an error wrapping ErrRetriesExhausted
// and the WithGarbageCollector hook is called.
//
// # Synchronization
//
// The event handlers implement upstream's synchronize tables. For a rule
// with a data source:
//
//	Action              synchronize: true                          synchronize: false
//	delete downstream   recreated (OnDownstreamChange)             stays deleted
//	delete rule/policy  deleted, or retained with                  retained
//	                    orphanDownstreamOnPolicyDelete (OnPolicy*)
//	delete trigger      deleted (OnTriggerDelete, admission)       nothing
//	modify downstream   reverted (OnDownstreamChange)              stays modified
//	modify rule/policy  synced (OnPolicyUpdate)                    unmodified
//	modify trigger      deleted when it no longer matches          nothing
//	                    match/exclude (OnTriggerUpdate, admission)
//
// Only match and exclude decide whether a modified trigger still applies:
// as upstream documents, preconditions are not considered, so a trigger
// relabelled out of a rule's preconditions keeps its downstream resources.
//
// For a rule with a clone source, deleting or modifying the rule or policy
// leaves downstream resources alone; deleting the source deletes them and
// modifying it syncs them when the rule synchronizes (OnSourceChange); the
// other rows are as for data.
//
// The handlers process the requests they build at once. With WithQueue,
// the handlers of object events (downstream and clone source changes,
// trigger updates and deletions) put them on the host's queue instead,
// Pending, so that a durable queue (cluster.Queue) keeps an event that
// arrives just before the process stops.
//
// OnPolicyUpdate also applies generateExisting (and the deprecated
// generateExistingOnPolicyUpdate) and mutateExistingOnPolicyUpdate rules to
// the existing triggers.
//
// # GeneratingPolicies
//
// GeneratingPolicy and NamespacedGeneratingPolicy requests have upstream's
// type cel-generate (api.URCELGenerate): one rule context per trigger,
// named after the policy. The controller evaluates the policy on the
// trigger and writes what generator.Apply generated: a missing object is
// created, the policy's own downstream of the trigger updated, another
// owner's object of the same name left alone. Synchronize follows
// upstream's tables for GeneratingPolicies: an edited or deleted
// downstream is written again, an updated trigger is evaluated again (its
// downstream goes when the policy no longer applies, as it does on a
// policy that matches CREATE only; what the policy no longer generates
// goes too), a deleted trigger's downstream goes, a clone follows its
// source (and goes with it), a changed policy syncs the downstream of
// its triggers, a deleted one takes its downstream with it but for the
// clones, unless orphanDownstreamOnPolicyDelete. generateExisting applies
// a created or changed policy to the existing triggers. As a
// GeneratingPolicy does not say which kinds it generates, the controller
// learns them from what it writes and from Restore (WithDownstreamKinds
// tells a host about each new one).
//
// The engine the PolicySet was compiled with must have the same cluster as
// its Client (engine.WithClient): it reads clone sources, existing
// downstream resources and mutate targets through it, while the controller
// writes through its own client.
package generate
