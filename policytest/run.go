package policytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/internal/variables"
	"github.com/gavelpolicy/gavel/loader"
	"github.com/gavelpolicy/gavel/report"
)

// Options configure Run.
type Options struct {
	// Strict counts a row whose rule did not apply to the resource as
	// passed only when skip was expected (upstream counts it as passed
	// whatever was expected).
	Strict bool
	// EngineOptions are added to the options Run builds the engine with.
	EngineOptions []engine.Option
	// HTTP sends the requests of the CEL http library that no
	// apiCallResponses entry answers, which upstream's CLI sends to the
	// network (remote.HTTP does); nil leaves them unanswered (an error
	// wrapping engine.ErrNotConfigured).
	HTTP cel.HTTPClient
	// ImageData answers image.GetMetadata in the tests with
	// clusterResources, which upstream's CLI reads from the registries
	// (remote.Registry does); without clusterResources the context file's
	// images answer it. Nil leaves it unanswered (an error wrapping
	// engine.ErrNotConfigured).
	ImageData cel.ImageDataClient
}

// response is one engine response: a policy's results on one resource.
type response struct {
	// payload is the file name of a JSON payload ("" for a resource)
	payload string
	policy  *engine.Policy
	// index is the position of the evaluated resource in the test's
	// resources: the responses of one resource share it
	index    int
	resource map[string]any
	patched  map[string]any
	rules    []engine.RuleResult
	action   api.ValidationFailureAction
}

// Run evaluates a test and returns its rows. A test that cannot run (its
// files do not load, a policy does not compile, an evaluation fails)
// returns the error and, as upstream counts such a test, one failed row
// per expected result whose Reason is the error (none when the test
// lists no result).
//
// Each resource is evaluated once with the operation its values give it
// (CREATE by default), and once more for each other operation a result
// names in its operation field, whose rows are checked against those
// evaluations.
func Run(ctx context.Context, t *Test, opts Options) ([]Row, error) {
	rows, err := run(ctx, t, opts)
	if err != nil {
		return failedRows(t, err), err
	}
	return rows, nil
}

// run is Run without the failed rows.
func run(ctx context.Context, t *Test, opts Options) ([]Row, error) {
	env, err := prepare(t, opts)
	if err != nil {
		return nil, err
	}
	ops, err := resultOperations(t.Results)
	if err != nil {
		return nil, err
	}
	byOp := map[api.AdmissionOperation][]response{}
	for _, op := range ops {
		var responses []response
		for i, res := range env.resources {
			rs, err := env.apply(ctx, res, op)
			if err != nil {
				return nil, err
			}
			for j := range rs {
				rs[j].index = i
			}
			responses = append(responses, rs...)
		}
		byOp[op] = responses
	}
	payloads, err := env.applyPayloads(ctx)
	if err != nil {
		return nil, err
	}
	byOp[""] = append(byOp[""], payloads...)
	return env.rows(byOp, opts), nil
}

// applyPayloads applies the ValidatingPolicies in JSON mode to the JSON
// payloads, as upstream's test command does.
func (e *env) applyPayloads(ctx context.Context) ([]response, error) {
	if len(e.payloads) == 0 {
		return nil, nil
	}
	set := e.eng.NewPolicySet(e.policies...)
	var out []response
	for _, pl := range e.payloads {
		resp, err := set.ValidatePayload(ctx, pl.obj)
		if err != nil {
			return nil, fmt.Errorf("failed to apply validating policies on JSON payload %s: %w", pl.name, err)
		}
		for _, pr := range resp.Policies {
			out = append(out, response{payload: pl.name, policy: pr.Policy, resource: pl.obj, patched: pl.obj, rules: pr.Rules, action: pr.FailureAction})
		}
	}
	return out, nil
}

// resultOperations returns the operations the results are checked under:
// "" (the resource's own) and each operation a result names.
func resultOperations(results []Result) ([]api.AdmissionOperation, error) {
	ops := []api.AdmissionOperation{""}
	seen := map[api.AdmissionOperation]bool{"": true}
	for i, r := range results {
		op, err := resultOperation(r)
		if err != nil {
			return nil, fmt.Errorf("results[%d]: %w", i, err)
		}
		if !seen[op] {
			seen[op] = true
			ops = append(ops, op)
		}
	}
	return ops, nil
}

// resultOperation is the admission operation a result names ("" for
// none).
func resultOperation(r Result) (api.AdmissionOperation, error) {
	switch op := api.AdmissionOperation(strings.ToUpper(r.Operation)); op {
	case "", api.Create, api.Update, api.Delete, api.Connect:
		return op, nil
	default:
		return "", fmt.Errorf("unknown operation %q: want CREATE, UPDATE, DELETE or CONNECT", r.Operation)
	}
}

// failedRows returns rows for every entry of a test that could not run.
func failedRows(t *Test, err error) []Row {
	var rows []Row
	for _, r := range t.Results {
		for _, name := range resultResources(r) {
			rows = append(rows, Row{Test: t.Path, Policy: r.Policy, Rule: r.Rule, Kind: r.Kind, Namespace: r.Namespace,
				Resource: name, Expected: expected(r), Reason: err.Error()})
		}
	}
	return rows
}

func resultResources(r Result) []string {
	if r.Resources != nil {
		return r.Resources
	}
	if r.Resource != "" {
		return []string{r.Resource}
	}
	return nil
}

func expected(r Result) string {
	if r.Result != "" {
		return r.Result
	}
	return r.Status
}

type env struct {
	t *Test
	// payloads are the JSON payloads of the test
	payloads  []payload
	dir       string
	eng       *engine.Engine
	policies  []*engine.Policy
	resources []map[string]any
	values    *Values
	userInfo  *UserInfoFile
	cluster   *inmem.Cluster
	// libCluster is the cluster of the CEL resource library in a test with
	// clusterResources: cluster without the context file's objects
	libCluster *inmem.Cluster
	// ctxObjects and images are the context file's objects and image data
	ctxObjects []map[string]any
	images     *inmem.Registry
	// targetObjects are the mutate-existing targets
	targetObjects []map[string]any
	// gctx answers globalContext.Get from the globalContextEntries
	gctx mockGlobalContext
}

func (e *env) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(e.dir, p)
}

// prepare loads what a test names (values, user info, policies,
// resources, exceptions, cluster resources, mutate targets and clone
// sources) and builds the in-memory cluster and the engine that
// evaluates it.
func prepare(t *Test, opts Options) (*env, error) {
	e := &env{t: t, dir: filepath.Dir(t.Path)}
	if err := e.loadInputs(); err != nil {
		return nil, err
	}
	pset, err := e.readSet(t.Policies, "policies")
	if err != nil {
		return nil, err
	}
	if err := e.loadResources(); err != nil {
		return nil, err
	}
	xset, err := e.readSet(t.Exceptions, "exceptions")
	if err != nil {
		return nil, err
	}
	excs, err := exceptions.Compile(xset.Exceptions, exceptions.CEL(xset.CELExceptions...))
	if err != nil {
		return nil, fmt.Errorf("failed to load exceptions: %w", err)
	}
	if err := e.loadCluster(); err != nil {
		return nil, err
	}
	if err := e.newEngine(excs, opts); err != nil {
		return nil, err
	}
	var compiled []*engine.Policy
	for _, p := range pset.Policies {
		cp, err := e.eng.CompilePolicy(p)
		if err != nil {
			// upstream skips invalid policies; their results are not found
			continue
		}
		compiled = append(compiled, cp)
	}
	// the set attaches the bindings of admission policies to them
	e.policies = e.eng.NewPolicySet(compiled...).Policies()
	if e.payloads, err = e.loadPayloads(); err != nil {
		return nil, err
	}
	return e, nil
}

// payload is a JSON payload of the test.
type payload struct {
	name string
	obj  map[string]any
}

// loadPayloads reads the JSON payloads of the test: each a JSON object.
func (e *env) loadPayloads() ([]payload, error) {
	var out []payload
	for _, name := range e.t.JSONPayloads {
		raw, err := os.ReadFile(e.path(name))
		if err != nil {
			return nil, fmt.Errorf("failed to load JSON payload %s: %w", name, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("failed to load JSON payload %s: %w", name, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("JSON payload %s must be a top-level object", name)
		}
		out = append(out, payload{name: name, obj: obj})
	}
	return out, nil
}

// loadInputs reads the values (a file, or the test's inline values) and
// the user info.
func (e *env) loadInputs() error {
	t := e.t
	if t.Variables != "" {
		var v Values
		if err := readYAML(e.path(t.Variables), &v); err != nil {
			return fmt.Errorf("failed to load values: %w", err)
		}
		e.values = &v
	} else if t.Values != nil {
		e.values = t.Values
	}
	if t.UserInfo != "" {
		var u UserInfoFile
		if err := readYAML(e.path(t.UserInfo), &u); err != nil {
			return fmt.Errorf("failed to load user info: %w", err)
		}
		e.userInfo = &u
	}
	return nil
}

// readSet reads the policies and exceptions of the files and folders.
func (e *env) readSet(paths []string, what string) (*loader.Set, error) {
	var all []string
	for _, p := range paths {
		files, err := loader.Files(e.path(p))
		if err != nil {
			return nil, fmt.Errorf("failed to load %s: %w", what, err)
		}
		all = append(all, files...)
	}
	set, err := loadFiles(all...)
	if err != nil {
		return nil, fmt.Errorf("failed to load %s: %w", what, err)
	}
	return set, nil
}

// loadFiles reads the files (see loader.Load) and reports the error of
// the first file that has one, as upstream's CLI stops at it.
func loadFiles(files ...string) (*loader.Set, error) {
	if len(files) == 0 {
		return &loader.Set{}, nil
	}
	set, err := loader.Load(files...)
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) > 0 {
		err = j.Unwrap()[0]
	}
	return set, err
}

// documents reads every document of the files and folders, in the
// "default" namespace when they give none.
func (e *env) documents(paths []string, what string) ([]api.Document, error) {
	docs, err := e.readFiles(paths, what)
	for _, d := range docs {
		upstreamNamespaces.Default(d.Object)
	}
	return docs, err
}

// readFiles reads every document of the files and folders as it is.
func (e *env) readFiles(paths []string, what string) ([]api.Document, error) {
	var docs []api.Document
	for _, p := range paths {
		files, err := loader.Files(e.path(p))
		if err != nil {
			return nil, fmt.Errorf("failed to load %s: %w", what, err)
		}
		for _, f := range files {
			d, err := readDocuments(f)
			if err != nil {
				return nil, fmt.Errorf("failed to load %s: %w", what, err)
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// loadResources reads the resources the policies are applied to: every
// document, policies and exceptions included (a policy may validate
// PolicyExceptions), the first of duplicates only.
func (e *env) loadResources() error {
	docs, err := e.documents(e.t.Resources, "resources")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, d := range docs {
		var unknown *api.UnknownKindError
		if _, err := api.DecodeObject(d); errors.As(err, &unknown) {
			return fmt.Errorf("failed to load resources: %w", err)
		}
		k := d.Kind() + "/" + namespaceOf(d.Object) + "/" + d.Name()
		if seen[k] {
			continue
		}
		seen[k] = true
		e.resources = append(e.resources, d.Object)
	}
	return nil
}

// loadCluster builds the in-memory cluster: the resources, the cluster
// resources, the targets of mutate-existing rules (which exist in the
// cluster only: they are patched, not evaluated) and the clone sources.
func (e *env) loadCluster() error {
	objs := append([]map[string]any(nil), e.resources...)
	for _, p := range e.t.ClusterResources {
		var cr struct {
			Spec struct {
				CRDs      []string         `json:"crds"`
				Resources []map[string]any `json:"resources"`
			} `json:"spec"`
		}
		if err := readYAML(e.path(p), &cr); err != nil {
			return fmt.Errorf("failed to load cluster resources: %w", err)
		}
		objs = append(objs, cr.Spec.Resources...)
		// the CRDs (paths relative to the test, as upstream) name the
		// resources of custom kinds
		crds, err := e.readFiles(cr.Spec.CRDs, "CRDs")
		if err != nil {
			return err
		}
		for _, d := range crds {
			if d.Kind() != "CustomResourceDefinition" {
				return fmt.Errorf("failed to load CRDs: %s: a %s is not a CustomResourceDefinition", d.Source, d.Kind())
			}
			objs = append(objs, d.Object)
		}
	}
	targets, err := e.documents(e.t.TargetResources, "target resources")
	if err != nil {
		return err
	}
	for _, d := range targets {
		objs = append(objs, d.Object)
		// upstream's test command gives mutate-existing targets to the
		// resource library too (MutatingPolicies' target listing and
		// expressions)
		e.targetObjects = append(e.targetObjects, d.Object)
	}
	params, err := e.documents(e.t.ParamResources, "param resources")
	if err != nil {
		return err
	}
	for _, d := range params {
		objs = append(objs, d.Object)
	}
	if e.t.Context != "" {
		c, err := loader.LoadContext(e.path(e.t.Context))
		if err != nil {
			return fmt.Errorf("failed to load context: %w", err)
		}
		e.ctxObjects = c.Spec.Resources
		if len(c.Spec.Images) > 0 {
			e.images = c.Registry()
		}
		if len(e.t.ClusterResources) > 0 {
			// the CEL resource library reads the test's cluster without them
			e.libCluster = inmem.New(objs...)
		}
		objs = append(objs, c.Spec.Resources...)
	}
	e.cluster = inmem.New(objs...)
	if e.libCluster == nil {
		e.libCluster = e.cluster
	}
	return e.loadCloneSources()
}

// newEngine builds the engine the test runs on: the cluster as its
// client, the exceptions, the values, and the mocked API calls.
func (e *env) newEngine(excs *exceptions.Set, opts Options) error {
	engOpts, err := e.engineOptions(opts)
	if err != nil {
		return err
	}
	engOpts = append(append([]engine.Option{engine.WithExceptions(excs)}, engOpts...), opts.EngineOptions...)
	eng, err := engine.New(engOpts...)
	if err != nil {
		return err
	}
	e.eng = eng
	return nil
}

// engineOptions are the options of the test's engine but its exceptions:
// the cluster as its client, the values, and the mocked API calls.
func (e *env) engineOptions(opts Options) ([]engine.Option, error) {
	engOpts := []engine.Option{
		engine.WithContextValues(e.values),
		engine.WithClient(e.cluster),
		engine.WithUnconfiguredEntriesSkipped(),
		// upstream's CLI asks its client, which grants nothing off a
		// cluster: the authorizer of CEL expressions denies every check
		engine.WithAuthorizer(inmem.NewAuthorizer()),
	}
	if e.images != nil {
		engOpts = append(engOpts, engine.WithRegistryClient(e.images))
	}
	var apiClient engine.APIClient
	if len(e.t.ClusterResources) > 0 {
		engOpts = append(engOpts, engine.WithConfigMapResolver(e.cluster))
		apiClient = e.cluster
	}
	if len(e.t.mocks.APICallResponses) > 0 {
		calls, err := newMockCalls(e.t.mocks.APICallResponses)
		if err != nil {
			return nil, err
		}
		engOpts = append(engOpts, engine.WithServiceCaller(calls))
		apiClient = apiCalls{mocks: calls, fallback: apiClient}
	}
	if apiClient != nil {
		engOpts = append(engOpts, engine.WithAPIClient(apiClient))
	}
	e.gctx = mockGlobalContext{}
	if len(e.t.mocks.GlobalContextEntries) > 0 {
		g, err := e.newMockGlobalContext(e.t.mocks.GlobalContextEntries)
		if err != nil {
			return nil, err
		}
		e.gctx = g
		engOpts = append(engOpts, engine.WithGlobalContext(g))
	}
	// upstream's test command validates ImageValidatingPolicies without
	// pinning digests first
	engOpts = append(engOpts, engine.WithImagePolicyMutation(false))
	libs, err := e.celLibraries(opts)
	if err != nil {
		return nil, err
	}
	engOpts = append(engOpts, engine.WithCELLibraries(libs))
	return engOpts, nil
}

// Environment is what a test evaluates its resources in, for a tool
// that evaluates other policies the same way (gavel migrate compares
// policies with their conversions on a test's resources).
type Environment struct {
	// Resources are the test's resources (in "default" when they give no
	// namespace), Policies and Exceptions its policies and
	// PolicyExceptions as decoded.
	Resources     []map[string]any
	Policies      []api.PolicyObject
	Exceptions    []*api.PolicyException
	CELExceptions []*api.CELPolicyException
	// EngineOptions are the options of the test's engine but its
	// exceptions: the in-memory cluster as its client, the values, the
	// mocked API calls, global context entries and image data.
	EngineOptions []engine.Option
	// Request builds the request a resource is evaluated with for the
	// policy of a name (the values of that policy apply).
	Request func(policy string, obj map[string]any) *engine.Request
	// ruleValues are the context values the test gives a policy's rule.
	RuleValues func(policy, rule string) map[string]any
}

// Environment loads what the test names and returns the environment of
// its evaluations.
func (t *Test) Environment() (*Environment, error) {
	e := &env{t: t, dir: filepath.Dir(t.Path)}
	if err := e.loadInputs(); err != nil {
		return nil, err
	}
	pset, err := e.readSet(t.Policies, "policies")
	if err != nil {
		return nil, err
	}
	if err := e.loadResources(); err != nil {
		return nil, err
	}
	xset, err := e.readSet(t.Exceptions, "exceptions")
	if err != nil {
		return nil, err
	}
	if err := e.loadCluster(); err != nil {
		return nil, err
	}
	opts, err := e.engineOptions(Options{})
	if err != nil {
		return nil, err
	}
	out := &Environment{Resources: e.resources, Policies: pset.Policies, Exceptions: xset.Exceptions,
		CELExceptions: xset.CELExceptions, EngineOptions: opts,
		Request: func(policy string, obj map[string]any) *engine.Request {
			return NewRequest(policy, obj, e.values, e.userInfo)
		},
		RuleValues: e.values.RuleValues}
	return out, nil
}

// defaultNamespace sets metadata.namespace to "default" when it is empty,
// as the upstream CLI does for every resource it loads from a file.
func defaultNamespace(obj map[string]any) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if ns, _ := md["namespace"].(string); ns == "" {
		md["namespace"] = "default"
	}
}

func readDocuments(name string) ([]api.Document, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return api.ReadDocuments(f, name)
}

func namespaceOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	s, _ := md["namespace"].(string)
	return s
}

func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

func kindOf(obj map[string]any) string {
	s, _ := obj["kind"].(string)
	return s
}

// RuleValues implements engine.ContextValues: the values of a rule in a
// values file. A nil *Values has none.
func (v *Values) RuleValues(policy, rule string) map[string]any {
	if r := v.rule(policy, rule); r != nil {
		return r.Values
	}
	return nil
}

// ForeachValues implements engine.ForeachValues: the foreachValues of a
// rule in a values file.
func (v *Values) ForeachValues(policy, rule string) map[string][]any {
	if r := v.rule(policy, rule); r != nil {
		return r.ForeachValues
	}
	return nil
}

// rule returns the values of a policy's rule. The values given for a rule
// also apply to the rules autogen derives from it (autogen-<rule> and
// autogen-cronjob-<rule>), unless the values name those rules too.
func (v *Values) rule(policy, rule string) *ruleValues {
	if v == nil {
		return nil
	}
	find := func(name string) *ruleValues {
		for i := range v.sections.Policies {
			p := &v.sections.Policies[i]
			if p.Name != policy {
				continue
			}
			for j := range p.Rules {
				if p.Rules[j].Name == name {
					return &p.Rules[j]
				}
			}
		}
		return nil
	}
	if r := find(rule); r != nil {
		return r
	}
	for _, prefix := range []string{"autogen-cronjob-", "autogen-"} {
		if base, ok := strings.CutPrefix(rule, prefix); ok {
			return find(base)
		}
	}
	return nil
}

// resourceValues returns the global values and the policy's values for a
// resource, as upstream's ComputeVariables.
func (v *Values) resourceValues(policy, resource string) map[string]any {
	if v == nil {
		return nil
	}
	out := map[string]any{}
	for k, x := range v.GlobalValues {
		out[k] = x
	}
	for _, p := range v.sections.Policies {
		if p.Name != policy {
			continue
		}
		for _, r := range p.Resources {
			if r.Name == resource {
				for k, x := range r.Values {
					out[k] = x
				}
			}
		}
	}
	return out
}

// namespaceLabels returns the labels given to namespaces (namespaceSelector
// and namespaces entries, the latter taking precedence).
func (v *Values) namespaceLabels() map[string]map[string]string {
	if v == nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, n := range v.sections.NamespaceSelector {
		out[n.Name] = n.Labels
	}
	for _, n := range v.sections.Namespaces {
		out[n.Metadata.Name] = n.Metadata.Labels
	}
	return out
}

// namespace returns the namespace the values give (a namespaces entry as
// written, else a namespaceSelector entry's name and labels), nil when
// they give none: the namespaceObject of CEL policy kinds, as upstream's
// CLI gives it.
func (v *Values) namespace(name string) map[string]any {
	if v == nil || name == "" {
		return nil
	}
	for i := range v.sections.Namespaces {
		if n := &v.sections.Namespaces[i]; n.Metadata.Name == name && n.Object != nil {
			return n.Object
		}
	}
	for _, n := range v.sections.NamespaceSelector {
		if n.Name != name {
			continue
		}
		labels := make(map[string]any, len(n.Labels))
		for k, l := range n.Labels {
			labels[k] = l
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": name, "labels": labels}}
	}
	return nil
}

// LoadValues reads a values file.
func LoadValues(path string) (*Values, error) {
	var v Values
	if err := readYAML(path, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// LoadUserInfo reads a user-info file.
func LoadUserInfo(path string) (*UserInfoFile, error) {
	var u UserInfoFile
	if err := readYAML(path, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// NewRequest builds the request the upstream CLI evaluates a resource with
// for a policy: CREATE unless the values set request.operation, the values
// as variables (those under request.object applied to the object), user
// info, the namespace labels of the values, and the parent kind of a
// declared subresource.
func NewRequest(policy string, obj map[string]any, values *Values, user *UserInfoFile) *engine.Request {
	vals := values.resourceValues(policy, nameOf(obj))
	op := api.Create
	switch vals["request.operation"] {
	case "DELETE":
		op = api.Delete
	case "UPDATE":
		op = api.Update
	}
	obj = applyObjectValues(obj, vals)
	req := &engine.Request{Operation: op, Variables: vals}
	switch op {
	case api.Delete:
		req.OldObject = obj
	case api.Update:
		req.Object = obj
		req.OldObject = obj
	default:
		req.Object = obj
	}
	if u := user; u != nil {
		req.UserInfo = api.UserInfoData{Username: u.UserInfo.Username, UID: u.UserInfo.UID, Groups: u.UserInfo.Groups, Extra: u.UserInfo.Extra}
		req.Roles = u.Roles
		req.ClusterRoles = u.ClusterRoles
	}
	labels := values.namespaceLabels()[namespaceOf(obj)]
	if labels == nil {
		labels = map[string]string{}
	}
	req.NamespaceLabels = labels
	req.NamespaceObject = values.namespace(namespaceOf(obj))
	if values != nil {
		av, _ := obj["apiVersion"].(string)
		g, v := splitAPIVersion(av)
		for _, s := range values.sections.Subresources {
			if s.Subresource.Kind == kindOf(obj) && s.Subresource.Group == g && s.Subresource.Version == v {
				req.Kind = schema.GroupVersionKind{Group: s.ParentResource.Group, Version: s.ParentResource.Version, Kind: s.ParentResource.Kind}
				if _, sub, ok := strings.Cut(s.Subresource.Name, "/"); ok {
					req.SubResource = sub
				}
			}
		}
	}
	return req
}

// request builds the admission request of a resource for a policy; op,
// when set, replaces the operation the values give.
func (e *env) request(p *engine.Policy, obj map[string]any, op api.AdmissionOperation) *engine.Request {
	req := NewRequest(p.Source().GetName(), obj, e.values, e.userInfo)
	if op == "" || op == req.Operation {
		return req
	}
	if _, ok := req.Variables["request.operation"]; ok {
		vars := make(map[string]any, len(req.Variables))
		for k, v := range req.Variables {
			vars[k] = v
		}
		vars["request.operation"] = string(op)
		req.Variables = vars
	}
	o := req.Object
	if o == nil {
		o = req.OldObject
	}
	req.Operation = op
	switch op {
	case api.Delete:
		req.Object, req.OldObject = nil, o
	case api.Update:
		req.Object, req.OldObject = o, o
	default:
		req.Object, req.OldObject = o, nil
	}
	return req
}

// applyObjectValues applies values under request.object to a copy of the
// object, as upstream reads the object back from the context.
func applyObjectValues(obj map[string]any, vals map[string]any) map[string]any {
	var out map[string]any
	for k, v := range vals {
		rest, ok := strings.CutPrefix(k, "request.object.")
		if !ok {
			continue
		}
		if out == nil {
			out = copyMap(obj)
		}
		setPath(out, variables.KeyPath(rest), v)
	}
	if out == nil {
		return obj
	}
	return out
}

func setPath(m map[string]any, parts []string, v any) {
	for i, p := range parts {
		if i == len(parts)-1 {
			m[p] = v
			return
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
		} else {
			next = copyMap(next)
		}
		m[p] = next
		m = next
	}
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func splitAPIVersion(av string) (string, string) {
	if i := strings.IndexByte(av, '/'); i >= 0 {
		return av[:i], av[i+1:]
	}
	return "", av
}

// apply runs mutate, verifyImages, validate and generate policies on one
// resource in upstream's order (its CLI's processor: every mutate policy,
// then every verifyImages policy, then validation and generation) and
// returns the engine responses.
func (e *env) apply(ctx context.Context, obj map[string]any, op api.AdmissionOperation) ([]response, error) {
	out, verified, resource, err := e.applyMutate(ctx, obj, op)
	if err != nil {
		return nil, err
	}
	// a verifyImages rule without a verifier is one error: its checks at
	// validation (a digest, the annotation) are not reported again
	unverifiable := map[string]bool{}
	for _, r := range verified {
		for _, rr := range r.rules {
			if rr.Status == engine.StatusError && errors.Is(rr.Err, engine.ErrNotConfigured) {
				unverifiable[r.policy.Key()+"\x00"+rr.Name] = true
			}
		}
	}
	out = append(out, verified...)
	for _, p := range e.policies {
		if !p.HasRuleType(engine.Validation) && !p.HasRuleType(engine.ImageVerify) {
			continue
		}
		set := e.eng.NewPolicySet(p)
		resp, err := set.Validate(ctx, e.request(p, resource, op))
		if err != nil {
			return nil, err
		}
		for _, pr := range resp.Policies {
			if len(pr.Rules) == 0 && !keepsEmpty(pr.Policy) {
				continue
			}
			rules := pr.Rules
			if len(unverifiable) > 0 {
				rules = nil
				for _, rr := range pr.Rules {
					if rr.Type != engine.ImageVerify || !unverifiable[pr.Policy.Key()+"\x00"+rr.Name] {
						rules = append(rules, rr)
					}
				}
			}
			out = append(out, response{policy: pr.Policy, resource: resource, patched: resource, rules: rules, action: pr.FailureAction})
		}
	}
	for _, p := range e.policies {
		if !p.HasRuleType(engine.Deletion) {
			continue
		}
		resp, err := e.eng.NewPolicySet(p).Cleanup(ctx, e.request(p, obj, op))
		if err != nil {
			return nil, err
		}
		for _, pr := range resp.Policies {
			if len(pr.Rules) > 0 {
				out = append(out, response{policy: pr.Policy, resource: obj, patched: obj, rules: pr.Rules, action: pr.FailureAction})
			}
		}
	}
	for _, p := range e.policies {
		if !p.HasRuleType(engine.Generation) {
			continue
		}
		set := e.eng.NewPolicySet(p)
		resp, err := set.Generate(ctx, e.request(p, resource, op))
		if err != nil {
			return nil, err
		}
		for _, pr := range resp.Policies {
			if len(pr.Rules) == 0 {
				continue
			}
			out = append(out, response{policy: pr.Policy, resource: resource, patched: resource, rules: pr.Rules, action: pr.FailureAction})
		}
	}
	return out, nil
}

// applyMutate runs the mutate policies, then the verifyImages policies,
// each on the resource the ones before it left: the responses of the
// mutate rules, those of the verifyImages rules, and the resource after
// both. A policy with both kinds of rules is evaluated once, in the first
// step (the engine runs a policy's verifyImages rules after its mutate
// rules); its results are split between the two.
func (e *env) applyMutate(ctx context.Context, obj map[string]any, op api.AdmissionOperation) (mutated, verified []response, resource map[string]any, err error) {
	resource = obj
	done := map[*engine.Policy][]response{}
	mutate := func(p *engine.Policy) (*engine.Response, error) {
		resp, err := e.eng.NewPolicySet(p).Mutate(ctx, e.request(p, resource, op))
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
	for _, p := range e.policies {
		if !p.HasRuleType(engine.Mutation) {
			continue
		}
		resp, err := mutate(p)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, pr := range resp.Policies {
			m, v := splitRules(pr.Rules, engine.ImageVerify)
			mutated = append(mutated, response{policy: pr.Policy, resource: resource, patched: resp.Resource, rules: m, action: pr.FailureAction})
			if p.HasRuleType(engine.ImageVerify) {
				done[p] = append(done[p], response{policy: pr.Policy, resource: resource, patched: resp.Resource, rules: v, action: pr.FailureAction})
			}
		}
		if resp.Resource != nil {
			resource = resp.Resource
		}
	}
	for _, p := range e.policies {
		if !p.HasRuleType(engine.ImageVerify) {
			continue
		}
		if rs, ok := done[p]; ok {
			verified = append(verified, rs...)
			continue
		}
		resp, err := mutate(p)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, pr := range resp.Policies {
			verified = append(verified, response{policy: pr.Policy, resource: resource, patched: resp.Resource, rules: pr.Rules, action: pr.FailureAction})
		}
		if resp.Resource != nil {
			resource = resp.Resource
		}
	}
	return mutated, verified, resource, nil
}

// splitRules splits results into those of other types and those of type t.
func splitRules(rules []engine.RuleResult, t engine.RuleType) (others, of []engine.RuleResult) {
	for _, r := range rules {
		if r.Type == t {
			of = append(of, r)
		} else {
			others = append(others, r)
		}
	}
	return others, of
}

func policyMatches(name string, p *engine.Policy) bool {
	return name == p.Source().GetName() || name == p.Key()
}

// check is upstream's checkResult.
//
// As upstream, a failed check counts as passed when fail was expected: a
// test expecting fail with a patchedResources file passes when the patched
// resource does not match. In strict mode that applies only to resource
// comparisons, not to a rule that passed where fail was expected.
func (e *env) check(tr Result, name, exp string, resp response, rr engine.RuleResult, opts Options) Row {
	row := Row{Test: e.t.Path, Policy: tr.Policy, Rule: tr.Rule, Kind: tr.Kind, Namespace: tr.Namespace, Resource: name,
		Expected: exp, Message: rr.Message}
	fail := func(reason string) Row {
		row.Reason = reason
		if exp == "fail" {
			row.Passed = true
			row.Reason = "expected fail: " + reason
		}
		return row
	}
	patchedFile := tr.PatchedResources
	if patchedFile == "" {
		patchedFile = tr.PatchedResource
	}
	// a generate rule that generated nothing: its status alone is
	// compared (upstream's checkRuleResultOnly)
	if rr.Type == engine.Generation && len(rr.GeneratedResources) == 0 {
		patchedFile = ""
		tr.GeneratedResource = ""
	}
	if patchedFile != "" {
		ok, err := e.compareFile(patchedFile, resp.patched)
		var missing *notInFileError
		if errors.As(err, &missing) && !tr.FailOnMissingResources && rr.Type != engine.Generation {
			// upstream's test command skips the check (no row, no
			// failure); gavel shows it as passed, saying so
			row.Passed = true
			row.Reason = "skipped: " + missing.Error() + " (failOnMissingResources is not set)"
			return row
		}
		if err != nil {
			return fail(err.Error())
		}
		if !ok {
			return fail("Patched resource didn't match the patched resource in the test result")
		}
	}
	if tr.GeneratedResource != "" {
		var gen map[string]any
		if len(rr.GeneratedResources) > 0 {
			gen = cliGenerated(resp.policy, rr.GeneratedResources[0])
		}
		ok, err := e.compareFile(tr.GeneratedResource, gen)
		if err != nil {
			return fail(err.Error())
		}
		if !ok {
			return fail("Generated resource didn't match the generated resource in the test result")
		}
	}
	// the result a policy report would show (fail is warn for a policy
	// annotated policies.kyverno.io/scored: "false")
	got := string(report.EntryResult(&engine.PolicyResult{Policy: resp.policy}, &rr, false))
	row.Got = got
	if got != exp {
		if opts.Strict {
			row.Reason = fmt.Sprintf("Want %s, got %s", exp, got)
			return row
		}
		return fail(fmt.Sprintf("Want %s, got %s", exp, got))
	}
	row.Passed = true
	row.Reason = "Ok"
	return row
}

// compareFile compares actual with the resource of the same kind, name and
// namespace in file, after removing empty values and generate labels.
func (e *env) compareFile(file string, actual map[string]any) (bool, error) {
	if actual == nil {
		return false, errors.New("no resource to compare")
	}
	s, err := loadFiles(e.path(file))
	if err != nil {
		return false, fmt.Errorf("error: failed to load resource (%s)", err)
	}
	// a resource of the file without a namespace is in "default", as the
	// CLI loads it, or cluster-scoped (a kind gavel has no schema for, such
	// as a custom resource, tells its scope by the namespace it has)
	var exp map[string]any
	ans := namespaceOf(actual)
	for _, d := range s.Resources {
		ens := namespaceOf(d.Object)
		if d.Kind() != kindOf(actual) || d.Name() != nameOf(actual) {
			continue
		}
		if ens == ans || (ens == "" && ans == "default") {
			if ens == "" && ans != "" {
				defaultNamespace(d.Object)
			}
			exp = d.Object
			break
		}
	}
	if exp == nil {
		return false, &notInFileError{kind: kindOf(actual), namespace: namespaceOf(actual), name: nameOf(actual), file: file}
	}
	return reflect.DeepEqual(tidy(fixupLabels(withoutServerMeta(actual, exp))), tidy(fixupLabels(exp))), nil
}

// notInFileError is an expected resources file that does not hold the
// resource.
type notInFileError struct{ kind, namespace, name, file string }

func (e *notInFileError) Error() string {
	return fmt.Sprintf("error: failed to load resource (resource %s/%s/%s not found in %s)", e.kind, e.namespace, e.name, e.file)
}

// serverMeta are the metadata fields a cluster sets on the objects it
// stores (the test's in-memory cluster sets resourceVersion on targets).
var serverMeta = []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"}

// withoutServerMeta drops from actual the server-set metadata fields that
// the expected resource does not give.
func withoutServerMeta(actual, exp map[string]any) map[string]any {
	md, _ := actual["metadata"].(map[string]any)
	emd, _ := exp["metadata"].(map[string]any)
	var out map[string]any
	for _, k := range serverMeta {
		if _, ok := md[k]; !ok {
			continue
		}
		if _, ok := emd[k]; ok {
			continue
		}
		if out == nil {
			out = copyMap(actual)
			md = copyMap(md)
			out["metadata"] = md
		}
		delete(md, k)
	}
	if out == nil {
		return actual
	}
	return out
}

// fixupLabels drops generate.kyverno.io/ labels and sets the managed-by
// label, as upstream does before comparing generated resources.
func fixupLabels(obj map[string]any) map[string]any {
	out := copyMap(obj)
	md, _ := out["metadata"].(map[string]any)
	md = copyMap(md)
	labels := map[string]any{"app.kubernetes.io/managed-by": "kyverno"}
	if l, ok := md["labels"].(map[string]any); ok {
		for k, v := range l {
			if !strings.HasPrefix(k, "generate.kyverno.io/") {
				labels[k] = v
			}
		}
	}
	md["labels"] = labels
	out["metadata"] = md
	return out
}

// tidy removes nulls, empty maps and empty lists, recursively.
func tidy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if x = tidy(x); x != nil {
				out[k] = x
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, x := range t {
			if x = tidy(x); x != nil {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// upstreamNamespaces gives the resources without a namespace "default",
// but for the cluster-scoped built-in kinds, as upstream's CLI loads them.
var upstreamNamespaces = loader.NewNamespacer()
