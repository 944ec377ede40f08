package webhook

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/exceptions"
	"github.com/gavelpolicy/gavel/loader"
)

// snapshot is one compiled state of the policy folder. It is never
// modified after it is published.
type snapshot struct {
	set        *engine.PolicySet
	exceptions *exceptions.Set
	// stamp fingerprints the files the snapshot was compiled from.
	stamp      string
	generation uint64
	policies   int
}

// store holds the current snapshot of a policy folder and reloads it.
type store struct {
	dir string
	// onLoad, when set, receives each newly published set (the
	// background controller's policies follow admission's)
	onLoad func(*engine.PolicySet)
	eng    *engine.Engine
	cur    atomic.Pointer[snapshot]
	mu     sync.Mutex // serialises reloads
	logf   func(format string, args ...any)
	// lastErr is the error of the latest reload attempt (nil when it
	// succeeded or found nothing to do).
	lastErr atomic.Pointer[error]
	// failedStamp is the fingerprint of the folder state that last failed
	// to compile, so that a broken folder is not retried (and logged) on
	// every poll; guarded by mu.
	failedStamp string
	failedErr   error
}

// Exceptions implements engine.ExceptionSource with the exceptions of the
// current snapshot.
func (s *store) Exceptions(context.Context) (*exceptions.Set, error) {
	if snap := s.cur.Load(); snap != nil && snap.exceptions != nil {
		return snap.exceptions, nil
	}
	return exceptions.Compile(nil)
}

// fingerprint lists the manifest files of the folder with their size and
// modification time; any change to the folder changes it.
func fingerprint(dir string) (string, error) {
	files, err := loader.Files(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		info, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s\x00%d\x00%d\n", f, info.Size(), info.ModTime().UnixNano())
	}
	return b.String(), nil
}

// reload compiles the folder when its fingerprint differs from the current
// snapshot's (or always, with force) and publishes the result. On error the
// current snapshot stays in place.
func (s *store) reload(force bool) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stamp, err := fingerprint(s.dir)
	if err != nil {
		err = fmt.Errorf("policy folder: %w", err)
		s.lastErr.Store(&err)
		return false, err
	}
	if !force && stamp == s.failedStamp {
		err := s.failedErr
		s.lastErr.Store(&err)
		return false, err
	}
	changed, err := s.reloadLocked(stamp, force)
	if err != nil {
		s.failedStamp, s.failedErr = stamp, err
		s.lastErr.Store(&err)
		if old := s.cur.Load(); old != nil {
			s.logf("policy reload failed, keeping generation %d: %v", old.generation, err)
		}
	} else {
		s.failedStamp, s.failedErr = "", nil
		s.lastErr.Store(nil)
	}
	return changed, err
}

func (s *store) reloadLocked(stamp string, force bool) (bool, error) {
	old := s.cur.Load()
	if !force && old != nil && old.stamp == stamp {
		return false, nil
	}
	set, err := loader.Load(s.dir)
	if err != nil {
		return false, fmt.Errorf("loading policies: %w", err)
	}
	excs, err := exceptions.Compile(set.Exceptions)
	if err != nil {
		return false, fmt.Errorf("compiling exceptions: %w", err)
	}
	ps, err := s.eng.Compile(set.Policies...)
	if err != nil {
		return false, fmt.Errorf("compiling policies: %w", err)
	}
	var gen uint64 = 1
	if old != nil {
		gen = old.generation + 1
	}
	s.cur.Store(&snapshot{set: ps, exceptions: excs, stamp: stamp, generation: gen, policies: len(set.Policies)})
	if s.onLoad != nil {
		s.onLoad(ps)
	}
	s.logf("policies loaded: generation %d, %d policies, %d exceptions", gen, len(set.Policies), excs.Len())
	return true, nil
}

// watch polls the folder every interval until ctx is cancelled.
func (s *store) watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.reload(false) // failures are logged and kept in lastErr
		}
	}
}
