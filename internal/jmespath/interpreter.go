package jmespath

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmespath-community/go-jmespath/pkg/interpreter"
	"github.com/jmespath-community/go-jmespath/pkg/parsing"
)

const (
	defaultCacheSize       = 512
	defaultRegexCacheSize  = 256
	defaultRegistry        = "docker.io"
	defaultMaxRandomLength = 64 << 10
)

// Config is what the options set; it is only reached through them.
type Config struct {
	now              func() time.Time
	random           io.Reader
	cacheSize        int
	regexCacheSize   int
	registry         string
	registryMutation bool
	maxRandomLength  int
	maxResultSize    int
}

// Option configures an Interpreter. Options are applied in order by New; an
// option that receives a bad value makes New fail.
type Option func(*Config) error

// WithClock sets the clock read by time_now, time_now_utc and time_since (when
// its end argument is empty). The default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *Config) error {
		if now == nil {
			return fmt.Errorf("%w: WithClock: nil clock", ErrInvalidOption)
		}
		c.now = now
		return nil
	}
}

// WithRandom sets the source of randomness read by random(). The default is
// crypto/rand.Reader. Reads are serialised by the Interpreter, so r need not
// be safe for concurrent use. A reader that returns an error makes random()
// fail with that error.
func WithRandom(r io.Reader) Option {
	return func(c *Config) error {
		if r == nil {
			return fmt.Errorf("%w: WithRandom: nil reader", ErrInvalidOption)
		}
		c.random = r
		return nil
	}
}

// WithCacheSize bounds the number of compiled expressions Compile and Search
// keep. Zero disables the cache. The default is 512.
func WithCacheSize(n int) Option {
	return func(c *Config) error {
		if n < 0 {
			return fmt.Errorf("%w: WithCacheSize: negative size %d", ErrInvalidOption, n)
		}
		c.cacheSize = n
		return nil
	}
}

// WithRegexCacheSize bounds the number of compiled regular expressions kept
// for regex_match, regex_replace_all and regex_replace_all_literal. Zero
// disables the cache. The default is 256.
func WithRegexCacheSize(n int) Option {
	return func(c *Config) error {
		if n < 0 {
			return fmt.Errorf("%w: WithRegexCacheSize: negative size %d", ErrInvalidOption, n)
		}
		c.regexCacheSize = n
		return nil
	}
}

// WithDefaultRegistry sets the registry image_normalize adds to references
// that name none. The default is "docker.io".
func WithDefaultRegistry(registry string) Option {
	return func(c *Config) error {
		if registry == "" {
			return fmt.Errorf("%w: WithDefaultRegistry: empty registry", ErrInvalidOption)
		}
		c.registry = registry
		return nil
	}
}

// WithDefaultRegistryMutation controls whether image_normalize writes the
// default registry into references that name none (upstream's
// enableDefaultRegistryMutation, default true). When false the registry part
// is left out of the output.
func WithDefaultRegistryMutation(enabled bool) Option {
	return func(c *Config) error {
		c.registryMutation = enabled
		return nil
	}
}

// WithMaxRandomLength bounds the length, in runes, of a string random() may
// generate; longer patterns fail. The default is 65536.
func WithMaxRandomLength(n int) Option {
	return func(c *Config) error {
		if n <= 0 {
			return fmt.Errorf("%w: WithMaxRandomLength: non-positive length %d", ErrInvalidOption, n)
		}
		c.maxRandomLength = n
		return nil
	}
}

// Interpreter evaluates JMESPath expressions with the standard JMESPath
// functions plus every Kyverno custom function. It is immutable after New
// (its caches are internally synchronised) and safe for concurrent use.
type Interpreter struct {
	cfg     Config
	caller  interpreter.FunctionCaller
	infos   []FunctionInfo
	sigs    map[string]signature // checked by Compile
	queries *boundedCache[*Query]
	regexes *boundedCache[regexResult]
	randMu  sync.Mutex
}

type regexResult struct {
	re  *regexp.Regexp
	err error
}

// New returns an Interpreter configured by opts.
func New(opts ...Option) (*Interpreter, error) {
	cfg := Config{
		now:              time.Now,
		random:           rand.Reader,
		cacheSize:        defaultCacheSize,
		regexCacheSize:   defaultRegexCacheSize,
		registry:         defaultRegistry,
		registryMutation: true,
		maxRandomLength:  defaultMaxRandomLength,
		maxResultSize:    defaultMaxResultSize,
	}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	i := &Interpreter{
		cfg:     cfg,
		queries: newBoundedCache[*Query](cfg.cacheSize),
		regexes: newBoundedCache[regexResult](cfg.regexCacheSize),
	}
	entries, infos := i.functionTable()
	i.caller = interpreter.NewFunctionCaller(entries...)
	i.infos = infos
	return i, nil
}

// Query is a compiled expression. It is immutable and safe for concurrent
// use; evaluate it as many times as needed with Search.
type Query struct {
	expr string
	node parsing.ASTNode
	intr *Interpreter
	// path is set for plain field paths, evaluated by a direct walk.
	path []pathStep
	// pure is set when the result depends only on the data: no function
	// reads the clock or the source of randomness.
	pure bool
	// builds is set when the expression may build values larger than the
	// data it reads (see buildsValues): its results are measured.
	builds bool
	// fast is the compiled form of the expression (see compileFast), nil
	// when the library's interpreter evaluates it.
	fast evalFn
}

// Compile returns the compiled query for expr, from the interpreter's
// bounded cache of compiled expressions when it is there (a Query is
// immutable: sharing one is safe). The error, a *CompileError, names the
// expression: a syntax error, or a call that fails on every evaluation (an
// unknown function, a wrong number of arguments, a literal argument of a
// type the function does not take).
func (i *Interpreter) Compile(expr string) (*Query, error) {
	if q, ok := i.queries.get(expr); ok {
		return q, nil
	}
	q, err := i.compile(expr)
	if err != nil {
		return nil, err
	}
	i.queries.put(expr, q)
	return q, nil
}

// compile parses and checks expr.
func (i *Interpreter) compile(expr string) (q *Query, err error) {
	defer func() {
		if r := recover(); r != nil {
			q, err = nil, &CompileError{Expression: expr, Offset: -1, Err: fmt.Errorf("parser fault: %v", r)}
		}
	}()
	node, perr := parsing.NewParser().Parse(expr)
	if perr != nil {
		offset := -1
		var se parsing.SyntaxError
		if errors.As(perr, &se) {
			offset = se.Offset
		}
		return nil, &CompileError{Expression: expr, Offset: offset, Err: perr}
	}
	if err := i.checkCalls(node); err != nil {
		return nil, &CompileError{Expression: expr, Offset: -1, Err: err}
	}
	q = &Query{expr: expr, node: node, intr: i, pure: pureNode(node), builds: buildsValues(node)}
	if steps, ok := plainPath(node); ok {
		q.path = steps
	} else if f, ok := compileFast(node, i.caller, i.cfg.maxResultSize); ok {
		q.fast = f
	}
	return q, nil
}

// String returns the expression text.
func (q *Query) String() string { return q.expr }

// Pure reports whether the query's result depends only on the data it is
// evaluated on: it calls none of the functions that read the clock
// (time_now, time_now_utc, time_since) or the source of randomness
// (random). Two evaluations of a pure query on the same data give equal
// results, so callers may reuse one.
func (q *Query) Pure() bool { return q.pure }

// Memoizable reports whether remembering the query's results pays: it is
// pure and not a plain field path (a.b[0]."c"), which SearchCanonical
// evaluates by a direct walk without allocating.
func (q *Query) Memoizable() bool { return q.pure && q.path == nil }

// pureNode reports whether an expression calls none of the functions
// that read the clock or the source of randomness.
func pureNode(n parsing.ASTNode) bool {
	if n.NodeType == parsing.ASTFunctionExpression {
		switch name, _ := n.Value.(string); name {
		case "time_now", "time_now_utc", "time_since", "random":
			return false
		}
	}
	for _, c := range n.Children {
		if !pureNode(c) {
			return false
		}
	}
	return true
}

// Search evaluates the query against data, a JSON-like tree. Integer and
// json.Number values in data are read as float64; data itself is never
// modified. Errors raised by custom functions are *FunctionError; other
// evaluation failures are *EvalError.
func (q *Query) Search(data any) (any, error) {
	data, _, err := normalize(data, "")
	if err != nil {
		return nil, err
	}
	return q.SearchCanonical(data)
}

// SearchCanonical evaluates the query against data that is already in
// canonical form (float64 numbers, map[string]any and []any containers), for
// example a tree returned by Canonical, skipping the read-only conversion walk
// Search performs on every call. Non-canonical values are not converted: a
// Go int then behaves as a value of unknown type, never as a number.
func (q *Query) SearchCanonical(data any) (result any, err error) {
	if q.path != nil {
		return walk(q.path, data), nil
	}
	defer func() {
		if r := recover(); r != nil {
			result, err = nil, &EvalError{Expression: q.expr, Err: fmt.Errorf("evaluation fault: %v", r)}
		}
	}()
	if q.fast != nil {
		result, err = q.fast(data)
	} else {
		intr := interpreter.NewInterpreter(data, q.intr.caller, nil)
		result, err = intr.Execute(q.node, data)
	}
	if err != nil {
		var fe *FunctionError
		if errors.As(err, &fe) {
			return nil, fe
		}
		return nil, &EvalError{Expression: q.expr, Err: err}
	}
	if err := q.checkResult(result); err != nil {
		return nil, err
	}
	return result, nil
}

// Canonical returns data in the canonical form expressions are evaluated on:
// every Go integer, float32 and json.Number becomes a float64 and typed slices
// and maps become []any and map[string]any. data is not modified; containers
// are copied only along the paths that needed a conversion, so a tree that is
// already canonical is returned as is. Convert a large context once with
// Canonical, then evaluate many queries on it with SearchCanonical.
func Canonical(data any) (any, error) {
	out, _, err := normalize(data, "")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Search compiles expr (see Compile) and evaluates it against data.
func (i *Interpreter) Search(expr string, data any) (any, error) {
	q, err := i.Compile(expr)
	if err != nil {
		return nil, err
	}
	return q.Search(data)
}

// regexp returns the compiled pattern, from the cache when possible.
func (i *Interpreter) regexp(pattern string) (*regexp.Regexp, error) {
	if r, ok := i.regexes.get(pattern); ok {
		return r.re, r.err
	}
	re, err := regexp.Compile(pattern)
	i.regexes.put(pattern, regexResult{re: re, err: err})
	return re, err
}

// boundedCache is a small concurrency-safe map that holds at most max
// entries. Reads of settled entries take no lock and hash the key once:
// every rule evaluation looks its expressions up here, from all cores at
// once, and a shared read lock would bounce between them. A new entry
// waits in fresh, under the mutex, until it is settled with others: a new
// read-only map is then published, made of the fresh entries and as many
// of the settled ones as the bound leaves room for (the others, left out
// arbitrarily, are evicted). The fresh entries are settled after max/8
// insertions or reads of fresh entries, which keeps the copies to a few
// entries per insertion or read under the mutex.
type boundedCache[V any] struct {
	settled atomic.Pointer[map[string]V] // read-only once published
	mu      sync.Mutex
	fresh   map[string]V // guarded by mu
	uses    int          // insertions and fresh reads since the last settling, guarded by mu
	max     int
	batch   int // uses that make a settling
}

func newBoundedCache[V any](max int) *boundedCache[V] {
	return &boundedCache[V]{max: max, batch: (max + 7) / 8}
}

func (c *boundedCache[V]) get(k string) (V, bool) {
	if m := c.settled.Load(); m != nil {
		if v, ok := (*m)[k]; ok {
			return v, true
		}
	}
	if c.max == 0 {
		var zero V
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.fresh[k]
	if ok {
		c.use()
	}
	return v, ok
}

func (c *boundedCache[V]) put(k string, v V) {
	if c.max == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.settled.Load(); m != nil {
		if _, ok := (*m)[k]; ok {
			return // settled by another caller: values of one key are equivalent
		}
	}
	if c.fresh == nil {
		c.fresh = make(map[string]V, c.batch)
	}
	c.fresh[k] = v
	c.use()
}

// use counts an insertion or a read of a fresh entry and settles the
// fresh entries after batch of them. Called with mu held.
func (c *boundedCache[V]) use() {
	if c.uses++; c.uses < c.batch {
		return
	}
	c.uses = 0
	var settled map[string]V
	if m := c.settled.Load(); m != nil {
		settled = *m
	}
	// until the next settling, at most batch-1 entries are added to
	// fresh: settled ones are kept within max-batch (batch <= max/2 when
	// max > 1), or within the fresh ones when max is 1
	room := max(c.max-c.batch, len(c.fresh))
	next := make(map[string]V, min(room, len(settled)+len(c.fresh)))
	for k, v := range c.fresh {
		next[k] = v
	}
	for k, v := range settled {
		if len(next) >= room {
			break
		}
		next[k] = v
	}
	c.settled.Store(&next)
	clear(c.fresh)
}

// size counts the entries (for tests).
func (c *boundedCache[V]) size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.fresh)
	if m := c.settled.Load(); m != nil {
		n += len(*m)
	}
	return n
}
