// Package cel compiles and evaluates the Common Expression Language
// expressions of Kubernetes admission policies, on the environment the
// Kubernetes API server builds for ValidatingAdmissionPolicy: cel-go with
// the libraries of k8s.io/apiserver (lists, regex, urls, quantity, IP,
// CIDR, format, semver, authz, sets, two-variable comprehensions, ...) at
// the API server's default compatibility version, its cost estimator and
// per-call cost limit.
//
// An Env is built once (NewEnv) and shared. From it a Compiler is made for
// each unit of expressions that share variables (a Kyverno validate.cel
// rule, or later a ValidatingPolicy): AddVariable compiles the
// `variables.<name>` expressions in order, each seeing the earlier ones
// with their types; Compile type-checks an expression of a given Kind
// (validation, match condition, message expression, audit annotation) and
// returns a Program, immutable and safe for concurrent use. What a Program
// reads (Program.Reads: object, request, namespaceObject, params, a
// declared or library variable) is found on its checked AST, through the
// variables it reads, so that callers bind only that.
//
// Evaluation binds the admission variables (object, oldObject, request,
// params, namespaceObject, authorizer, variables): NewEvaluation binds an
// Input, plain data whose objects are JSON-like trees (map[string]any),
// handed to CEL as they are: values are converted on access, integral
// numbers read as CEL ints, as the API server reads JSON. What the
// Evaluations of one request share is explicit, in a Scope the caller
// makes per request and passes to NewEvaluation: each object and array is
// wrapped once per Scope, and the variables that read only object and
// oldObject are evaluated at most once per Scope and trees, whichever
// Compiler's Evaluations use them; other variables are evaluated lazily,
// at most once per Evaluation. Every evaluation is bounded: each
// expression by the per-call cost limit and the Evaluation as a whole by a
// budget; going over either is an error that matches ErrCostLimit.
//
// Environments of upstream Kyverno's CEL policy types (ValidatingPolicy and
// its siblings) add Kyverno's CEL libraries (WithLibraries): their
// declarations are checked at compilation like Kubernetes' own, and their
// host side (cluster objects, HTTP, image metadata, global context, the
// generator, the clock and the randomness) is bound per Input
// (Input.Libraries), the policy's namespace per Compiler (InNamespace).
//
// The package is the engine's: embedders reach it through the engine's
// CEL policy kinds, and the public package cel gives them the host types
// (Libraries and the host interfaces, aliases of this package's).
package cel
