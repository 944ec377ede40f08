package cel

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"

	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	"k8s.io/apiserver/pkg/cel/mutation"
)

// Names of the variables an expression sees.
const (
	ObjectVar     = "object"
	OldObjectVar  = "oldObject"
	ParamsVar     = "params"
	RequestVar    = "request"
	NamespaceVar  = "namespaceObject"
	AuthorizerVar = "authorizer"
	VariablesVar  = "variables"
	// requestResourceVar is authorizer.requestResource.
	requestResourceVar = "authorizer.requestResource"
)

// Limits of the API server, the defaults of an Env.
const (
	// PerCallCostLimit bounds the cost of one evaluation of one expression.
	PerCallCostLimit = celconfig.PerCallLimit
	// RuntimeCostBudget bounds the cost of all expressions of one
	// Evaluation (a rule on one resource, for one parameter object).
	RuntimeCostBudget = celconfig.RuntimeCELCostBudget
	// MaxMessageBytes bounds the message a messageExpression may produce.
	MaxMessageBytes = celconfig.MaxEvaluatedMessageExpressionSizeBytes
)

// variablesTypeName is the type of the variables object, as the API
// server names it.
const variablesTypeName = "kubernetes.variables"

// Kind is the role of an expression: it decides the type the expression
// must have and whether it sees the authorizer.
type Kind int

// Kinds of expressions.
const (
	// Validation must be a bool; it sees the authorizer.
	Validation Kind = iota
	// MatchCondition (a precondition) must be a bool; it sees the
	// authorizer.
	MatchCondition
	// MessageExpression must be a string; it does not see the authorizer.
	MessageExpression
	// AuditAnnotation must be a string or null; it sees the authorizer.
	AuditAnnotation
	// Variable may have any type; it sees the authorizer.
	Variable
	// ApplyConfiguration (a mutation) must be an Object: an apply
	// configuration built with Object{...} initializers; it sees the
	// authorizer.
	ApplyConfiguration
	// JSONPatch (a mutation) must be a list of JSONPatch operations; it
	// sees the authorizer.
	JSONPatch
)

// The types of the mutations' results: the root of an apply configuration
// and an operation of a JSON patch (k8s.io/apiserver's mutation types).
var (
	objectType    = types.NewObjectType(mutation.ObjectTypeName)
	jsonPatchType = types.NewObjectType(mutation.JSONPatchTypeName)
)

func (k Kind) returnTypes() []*cel.Type {
	switch k {
	case MessageExpression:
		return []*cel.Type{cel.StringType}
	case AuditAnnotation:
		return []*cel.Type{cel.StringType, cel.NullType}
	case Variable:
		return []*cel.Type{cel.AnyType}
	case ApplyConfiguration:
		return []*cel.Type{objectType}
	case JSONPatch:
		return []*cel.Type{cel.ListType(jsonPatchType)}
	}
	return []*cel.Type{cel.BoolType}
}

func (k Kind) authorizer() bool { return k != MessageExpression }

// mutation tells the kinds that see the patch types.
func (k Kind) mutation() bool { return k == ApplyConfiguration || k == JSONPatch }

// patchTypeOptions declare the types of mutations, Object (with its
// Object.<field>... types) and JSONPatch, and the jsonpatch library
// (jsonpatch.escapeKey), as the API server declares them for the
// mutations of a MutatingAdmissionPolicy.
func patchTypeOptions() []cel.EnvOption {
	return []cel.EnvOption{
		common.ResolverEnvOption(&mutation.DynamicTypeResolver{}),
		library.JSONPatch(),
	}
}

// Env is the compilation environment. It is immutable and safe for
// concurrent use; build it once and share it.
type Env struct {
	cfg  envConfig
	base *environment.EnvSet
	// variants are the environments by [params][authorizer][namespaced],
	// each built on first use (most policy sets need two of them; the
	// namespaced ones differ only with the resource library).
	variants [2][2][2]variant
}

// variant is one environment: plain has the admission variables but no
// "variables" declaration; shared adds an empty variables object, for
// units without variables. Every program of the variant runs in shared
// (see Compiler.Compile), the mutations' in patch, shared with the patch
// types (built on first use).
type variant struct {
	once          sync.Once
	plain, shared *cel.Env
	err           error

	patchOnce sync.Once
	patch     *cel.Env
	patchErr  error
}

// patchEnv returns the variant's shared environment with the patch types.
func (v *variant) patchEnv() (*cel.Env, error) {
	v.patchOnce.Do(func() {
		v.patch, v.patchErr = v.shared.Extend(patchTypeOptions()...)
		if v.patchErr != nil {
			v.patchErr = fmt.Errorf("cel: environment: patch types: %w", v.patchErr)
		}
	})
	return v.patch, v.patchErr
}

// EnvOption configures NewEnv.
type EnvOption func(*envConfig) error

type envConfig struct {
	ver   *version.Version
	extra []cel.EnvOption
	// pure are options whose functions are pure (WithPureEnvOptions)
	pure []cel.EnvOption
	// vars are the variables WithVariable declares
	vars []declaredVar
	// requestObjects declares request.object and request.oldObject
	requestObjects bool
	// noAuthorizer leaves the authorizer variables out
	noAuthorizer bool
	// libs are the libraries of WithLibraries
	libs LibrarySet
	// patchTypes declares the patch types in every expression
	// (WithPatchTypes)
	patchTypes bool
}

// declaredVar is a variable of WithVariable.
type declaredVar struct {
	name string
	t    *cel.Type
}

// WithVariable declares a variable of type t that every expression sees;
// its value comes from Input.Extra (null when absent). Unlike the options
// of WithEnvOptions, it keeps the functions of the environment pure: the
// values of variables that do not read it are still shared between the
// Evaluations of a Scope.
func WithVariable(name string, t *cel.Type) EnvOption {
	return func(c *envConfig) error {
		if name == "" || t == nil {
			return errors.New("cel: WithVariable needs a name and a type")
		}
		c.vars = append(c.vars, declaredVar{name: name, t: t})
		return nil
	}
}

// WithPureEnvOptions is WithEnvOptions for options whose functions are
// pure (their results depend on their arguments only): the values of
// variables stay shared between the Evaluations of a Scope (but those of
// the variables that read a variable the options declare).
func WithPureEnvOptions(opts ...cel.EnvOption) EnvOption {
	return func(c *envConfig) error {
		c.pure = append(c.pure, opts...)
		return nil
	}
}

// WithRequestObjects declares the object and oldObject fields of the
// request variable, as Kyverno's CEL policy kinds declare it (the API
// server's request has no such fields).
func WithRequestObjects() EnvOption {
	return func(c *envConfig) error { c.requestObjects = true; return nil }
}

// WithoutAuthorizer leaves the authorizer variables out of the
// environment (Kyverno's ValidatingPolicy does not declare them): an
// expression that uses them does not compile.
func WithoutAuthorizer() EnvOption {
	return func(c *envConfig) error { c.noAuthorizer = true; return nil }
}

// WithPatchTypes declares the types of mutations (Object, its
// Object.<field>... types and JSONPatch) and the jsonpatch library in every
// expression of the environment, as Kyverno's MutatingPolicy declares them.
// Without it, only the expressions of the ApplyConfiguration and JSONPatch
// kinds see them, as in a MutatingAdmissionPolicy.
func WithPatchTypes() EnvOption {
	return func(c *envConfig) error { c.patchTypes = true; return nil }
}

// WithEnvOptions adds cel-go options (libraries, variables, types) to every
// environment, after Kubernetes' own: policy types with libraries of their
// own (upstream's ValidatingPolicy and its siblings) build on the same
// environment this way.
func WithEnvOptions(opts ...cel.EnvOption) EnvOption {
	return func(c *envConfig) error {
		c.extra = append(c.extra, opts...)
		return nil
	}
}

// WithCompatibilityVersion builds the environment of a given Kubernetes
// version ("1.33"): the libraries and options the API server enables at
// that compatibility version. The default is the API server's default
// compatibility version (environment.DefaultCompatibilityVersion).
func WithCompatibilityVersion(v string) EnvOption {
	return func(c *envConfig) error {
		ver, err := version.ParseMajorMinor(v)
		if err != nil {
			return fmt.Errorf("cel: compatibility version %q: %w", v, err)
		}
		c.ver = ver
		return nil
	}
}

// NewEnv builds the environment.
func NewEnv(opts ...EnvOption) (*Env, error) {
	cfg := envConfig{}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.ver == nil {
		cfg.ver = environment.DefaultCompatibilityVersion()
	}
	e := &Env{cfg: cfg, base: environment.MustBaseEnvSet(cfg.ver)}
	// the variant of validations without params: every rule needs it, and
	// building it now reports a broken configuration at once
	if _, err := e.variant(false, true, false); err != nil {
		return nil, err
	}
	return e, nil
}

// variant returns the environment for [params][authorizer][namespaced],
// built once.
func (e *Env) variant(params, authz, namespaced bool) (*variant, error) {
	namespaced = namespaced && e.cfg.libs&ResourceLibrary != 0
	v := &e.variants[b2i(params)][b2i(authz)][b2i(namespaced)]
	v.once.Do(func() { v.err = e.build(v, params, authz, namespaced) })
	return v, v.err
}

func (e *Env) build(v *variant, params, authz, namespaced bool) error {
	requestType := requestType(e.cfg.requestObjects)
	namespaceType := namespaceType()
	vars := []cel.EnvOption{
		cel.Variable(ObjectVar, cel.DynType),
		cel.Variable(OldObjectVar, cel.DynType),
		cel.Variable(NamespaceVar, namespaceType.CelType()),
		cel.Variable(RequestVar, requestType.CelType()),
	}
	if params {
		vars = append(vars, cel.Variable(ParamsVar, cel.DynType))
	}
	for _, dv := range e.cfg.vars {
		vars = append(vars, cel.Variable(dv.name, dv.t))
	}
	if authz && !e.cfg.noAuthorizer {
		vars = append(vars,
			cel.Variable(AuthorizerVar, library.AuthorizerType),
			cel.Variable(requestResourceVar, library.ResourceCheckType))
	}
	set, err := e.base.Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        append(vars, orValueCompat()...),
		DeclTypes:         []*apiservercel.DeclType{namespaceType, requestType},
	}, environment.StrictCostOpt)
	if err != nil {
		return fmt.Errorf("cel: environment: %w", err)
	}
	v.plain = set.NewExpressionsEnv()
	if e.cfg.patchTypes {
		if v.plain, err = v.plain.Extend(patchTypeOptions()...); err != nil {
			return fmt.Errorf("cel: environment: patch types: %w", err)
		}
	}
	if opts := append(append([]cel.EnvOption(nil), e.cfg.pure...), e.cfg.extra...); len(opts) > 0 {
		if v.plain, err = v.plain.Extend(opts...); err != nil {
			return fmt.Errorf("cel: environment: %w", err)
		}
	}
	if e.cfg.libs != 0 {
		if v.plain, err = v.plain.Extend(libraryOptions(e.cfg.libs, namespaced)...); err != nil {
			return fmt.Errorf("cel: environment: libraries: %w", err)
		}
	}
	v.shared, _, err = e.withVariables(v.plain, nil)
	return err
}

// withVariables extends env with a "variables" object of its own type
// (fields added to the returned type are seen by later compilations).
func (e *Env) withVariables(env *cel.Env, t *apiservercel.DeclType) (*cel.Env, *apiservercel.DeclType, error) {
	if t == nil {
		t = apiservercel.NewObjectType(variablesTypeName, map[string]*apiservercel.DeclField{})
	}
	provider := apiservercel.NewDeclTypeProvider(t)
	if e.cfg.ver.AtLeast(version.MajorMinor(1, 31)) {
		provider.SetRecognizeKeywordAsFieldName(true)
	}
	// provider.EnvOptions, with the JSON adapter in front of the provider
	rt, err := provider.WithTypeProvider(env.CELTypeProvider())
	if err != nil {
		return nil, nil, fmt.Errorf("cel: environment: %w", err)
	}
	out, err := env.Extend(cel.CustomTypeProvider(rt), cel.CustomTypeAdapter(&jsonAdapter{rt}),
		cel.Variable(VariablesVar, t.CelType()))
	if err != nil {
		return nil, nil, fmt.Errorf("cel: environment: %w", err)
	}
	return out, t, nil
}

// CompileError is an expression that does not compile or does not have the
// type its Kind requires.
type CompileError struct {
	Expression string
	// Detail is the API server's text: "compilation failed: ..." with the
	// positions of the problems, or "must evaluate to bool but got string".
	Detail string
}

func (e *CompileError) Error() string { return e.Detail }

// Program is a compiled expression: immutable, safe for concurrent use.
type Program struct {
	prog cel.Program
	// lazy programs are instantiated on first use (Compiler.Lazy): comp
	// checks the expression again then (the checked AST is not kept
	// until then), once guards it, progErr is its error
	comp    *Compiler
	popts   []cel.ProgramOption
	once    sync.Once
	progErr error
	expr    string
	kind    Kind
	// name is the variable name for Kind Variable.
	name string
	out  *cel.Type
	// env and shared are set for variables: shared when the value
	// depends on object and oldObject only (see Scope).
	env    *Env
	shared bool
	// reads are the top-level variables the expression reads, directly
	// or through the variables it reads (see Reads).
	reads []string
	// bound is set when the expression calls a library function bound
	// to the Evaluation (the clock, randomness, image verification).
	bound bool
}

// Expression returns the expression's text.
func (p *Program) Expression() string { return p.expr }

// Reads tells whether the expression reads the top-level variable name
// (ObjectVar, OldObjectVar, RequestVar, ParamsVar, NamespaceVar,
// AuthorizerVar, VariablesVar, a variable of WithVariable or of the
// options of WithEnvOptions, or a library's, such as "resource"), directly
// or through the variables.<x> it reads. It is decided on the checked
// expression, once, at compilation: a name in a string literal, a field
// of that name (object.request) and a comprehension variable that shadows
// it are no reads. Callers bind only what their programs read.
func (p *Program) Reads(name string) bool {
	if name == requestResourceVar {
		name = AuthorizerVar
	}
	return slices.Contains(p.reads, name)
}

// OutputType returns the type the expression was checked to have.
func (p *Program) OutputType() *cel.Type { return p.out }

// Compiler compiles the expressions of one unit that shares variables.
// AddVariable and Compile must not be called concurrently; the Programs
// are independent of it.
type Compiler struct {
	env    *Env
	params bool
	// namespace is the namespace of a namespaced policy (InNamespace).
	namespace string
	envs      [2]*cel.Env // by authorizer
	// patchEnv is envs[1] with the patch types, for the mutations of an
	// environment without WithPatchTypes (built on first use)
	patchEnv *cel.Env
	vars     *apiservercel.DeclType
	// variables are the compiled variables, in order.
	variables []*Program
	// lazy defers the instantiation of programs (Lazy)
	lazy bool
	// mu guards envs and patchEnv, which the lazy programs' first
	// evaluations (concurrent) build again after Release
	mu sync.Mutex
}

// Lazy makes the compiler's programs instantiated on their first
// evaluation: Compile still parses and type-checks every expression (and
// reports its errors) but keeps neither the checked expression (about 6
// KB) nor cel-go's program (which holds a dispatcher of every function of
// the environment, about 30 KB): the first evaluation checks the
// expression again and makes the program. For units that may never run,
// such as the Pod controller variants of a policy checked on Pods only. It
// returns c.
func (c *Compiler) Lazy() *Compiler {
	c.lazy = true
	return c
}

// CompilerOption configures a Compiler.
type CompilerOption func(*Compiler)

// InNamespace compiles the expressions of a namespaced policy of
// namespace ns: the resource library's functions then take no namespace
// argument (it is ns), generator.Apply generates in ns only and http
// calls need Libraries.AllowHTTPInNamespacedPolicies, as upstream's
// namespaced policies.
func InNamespace(ns string) CompilerOption {
	return func(c *Compiler) { c.namespace = ns }
}

// NewCompiler returns a compiler for a unit whose expressions see params
// when hasParams is set (a paramKind is declared).
func (e *Env) NewCompiler(hasParams bool, opts ...CompilerOption) *Compiler {
	c := &Compiler{env: e, params: hasParams}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Release drops the environments the compiler keeps to check its unit's
// expressions: each of a unit with variables holds its own copy of every
// function declaration of the environment, about 70 KB, which its
// programs do not need (they run in the environment's shared variants,
// see Compile). Call it once the unit is compiled; the compiler stays
// usable for NewEvaluation, and a later AddVariable or Compile builds the
// environments again.
func (c *Compiler) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.envs, c.patchEnv = [2]*cel.Env{}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// AddVariable compiles the expression of variables.<name>; it sees the
// variables added before it.
func (c *Compiler) AddVariable(name, expr string) (*Program, error) {
	if name == "" {
		return nil, &CompileError{Expression: expr, Detail: "variable name must not be empty"}
	}
	if c.vars == nil {
		// variables see the authorizer: extend that environment now,
		// the other one (message expressions) when it is first needed
		v, err := c.env.variant(c.params, true, c.namespace != "")
		if err != nil {
			return nil, err
		}
		env, t, err := c.env.withVariables(v.plain, nil)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.envs[0], c.envs[1], c.vars, c.patchEnv = nil, env, t, nil
		c.mu.Unlock()
	}
	for _, v := range c.variables {
		if v.name == name {
			return nil, &CompileError{Expression: expr, Detail: fmt.Sprintf("variable %q is defined twice", name)}
		}
	}
	p, err := c.Compile(expr, Variable)
	if err != nil {
		return nil, err
	}
	p.name = name
	p.env = c.env
	// the functions of Kubernetes' environment are pure (but the
	// authorizer's, a variable); those of WithEnvOptions may not be, and
	// those of the libraries are but the ones of hosts (variables too)
	// and the ones bound to the Evaluation
	p.shared = len(c.env.cfg.extra) == 0 && !p.bound && c.env.readsOnlyObjects(p)
	c.vars.Fields[name] = apiservercel.NewDeclField(name, declTypeOf(p.out), true, nil, nil)
	c.variables = append(c.variables, p)
	return p, nil
}

// Compile type-checks expr as an expression of kind k and makes its
// program.
func (c *Compiler) Compile(expr string, k Kind) (*Program, error) {
	ast, plan, err := c.check(expr, k)
	if err != nil {
		return nil, err
	}
	popts := []cel.ProgramOption{cel.InterruptCheckFrequency(celconfig.CheckFrequency)}
	p := &Program{expr: expr, kind: k, out: ast.OutputType()}
	if c.env.cfg.libs&boundLibraries != 0 {
		p.bound = callsBound(ast)
		popts = append(popts, cel.CustomDecoratorV2(libraryDecorator))
	}
	c.noteReads(p, readsOf(ast))
	if c.lazy {
		p.comp, p.popts = c, popts
		return p, nil
	}
	prog, err := plan.Program(ast, popts...)
	if err != nil {
		return nil, &CompileError{Expression: expr, Detail: "program instantiation failed: " + err.Error()}
	}
	p.prog = prog
	return p, nil
}

// check parses and type-checks expr as an expression of kind k in the
// unit's environment; plan is the environment its program runs in.
func (c *Compiler) check(expr string, k Kind) (ast *cel.Ast, plan *cel.Env, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	authz := k.authorizer() || c.env.cfg.noAuthorizer // one environment without authorizer
	a := b2i(authz)
	v, err := c.env.variant(c.params, authz, c.namespace != "")
	if err != nil {
		return nil, nil, err
	}
	// the expression is checked in the unit's environment, which types
	// its variables, and runs in the variant's, which differs only by the
	// type of the variables object: a program reads variables.<name>
	// through the object (traits.Indexer), never through their types. The
	// unit's environment, with its copy of every function, is then not
	// kept, and the function bindings are made once per variant.
	plan = v.shared
	if c.envs[a] == nil {
		env := v.shared
		if c.vars != nil {
			if env, _, err = c.env.withVariables(v.plain, c.vars); err != nil {
				return nil, nil, err
			}
		}
		c.envs[a] = env
	}
	env := c.envs[a]
	if k.mutation() && !c.env.cfg.patchTypes {
		if c.patchEnv == nil {
			pe, err := env.Extend(patchTypeOptions()...)
			if err != nil {
				return nil, nil, fmt.Errorf("cel: environment: patch types: %w", err)
			}
			c.patchEnv = pe
		}
		env = c.patchEnv
		if plan, err = v.patchEnv(); err != nil {
			return nil, nil, err
		}
	}
	ast, issues := env.Compile(expr)
	if issues != nil && issues.Err() != nil {
		return nil, nil, &CompileError{Expression: expr, Detail: "compilation failed: " + issues.String()}
	}
	rts := k.returnTypes()
	found := false
	for _, rt := range rts {
		if ast.OutputType().IsExactType(rt) || cel.AnyType.IsExactType(rt) {
			found = true
			break
		}
	}
	if !found {
		var reason string
		if len(rts) == 1 {
			reason = fmt.Sprintf("must evaluate to %v but got %v", rts[0].String(), ast.OutputType().String())
		} else {
			reason = fmt.Sprintf("must evaluate to one of %v but got %v", rts, ast.OutputType().String())
		}
		return nil, nil, &CompileError{Expression: expr, Detail: reason}
	}
	return ast, plan, nil
}

// noteReads records on p what its expression reads (r), with what the
// variables it reads read.
func (c *Compiler) noteReads(p *Program, r reads) {
	p.reads = r.names
	for _, v := range c.variables {
		if r.allVars || slices.Contains(r.vars, v.name) {
			for _, n := range v.reads {
				if !slices.Contains(p.reads, n) {
					p.reads = append(p.reads, n)
				}
			}
		}
	}
}

// program returns the cel-go program, instantiating a lazy one: its
// expression is checked again (it was at Compile) by its compiler.
func (p *Program) program() (cel.Program, error) {
	if p.comp == nil {
		return p.prog, nil
	}
	p.once.Do(func() {
		ast, plan, err := p.comp.check(p.expr, p.kind)
		if err != nil {
			p.progErr = err
			return
		}
		prog, err := plan.Program(ast, p.popts...)
		if err != nil {
			p.progErr = &CompileError{Expression: p.expr, Detail: "program instantiation failed: " + err.Error()}
			return
		}
		p.prog = prog
	})
	return p.prog, p.progErr
}

// declTypeOf converts a checked type into the declaration of a variable's
// field (lists and maps keep their element types, others are dyn), as the
// API server declares composited variables.
func declTypeOf(t *cel.Type) *apiservercel.DeclType {
	if t == nil {
		return apiservercel.DynType
	}
	switch t {
	case cel.AnyType:
		return apiservercel.AnyType
	case cel.BoolType:
		return apiservercel.BoolType
	case cel.BytesType:
		return apiservercel.BytesType
	case cel.DoubleType:
		return apiservercel.DoubleType
	case cel.DurationType:
		return apiservercel.DurationType
	case cel.IntType:
		return apiservercel.IntType
	case cel.NullType:
		return apiservercel.NullType
	case cel.StringType:
		return apiservercel.StringType
	case cel.TimestampType:
		return apiservercel.TimestampType
	case cel.UintType:
		return apiservercel.UintType
	}
	if t.HasTrait(traits.ContainerType) && t.HasTrait(traits.IndexerType) {
		ps := t.Parameters()
		switch len(ps) {
		case 1:
			return apiservercel.NewListType(declTypeOf(ps[0]), -1)
		case 2:
			return apiservercel.NewMapType(declTypeOf(ps[0]), declTypeOf(ps[1]), -1)
		}
	}
	return apiservercel.DynType
}

// ErrCostLimit is matched (errors.Is) by the errors of evaluations stopped
// by the per-call cost limit or by the budget of an Evaluation.
var ErrCostLimit = errors.New("cel: cost limit exceeded")

// EvalError is an expression whose evaluation failed.
type EvalError struct {
	Expression string
	Err        error
}

// Error gives the API server's text.
func (e *EvalError) Error() string {
	return fmt.Sprintf("expression '%v' resulted in error: %v", e.Expression, e.Err)
}

// Unwrap returns the cause.
func (e *EvalError) Unwrap() error { return e.Err }
